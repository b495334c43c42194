"""A graph's commit takes its work journal with it (one journaled step), so no kill can leave
a committed graph's journal in ``.tgt-work/`` (a stale journal kept the dataset reading as
partial forever: the rerun passes over the committed graph). Shown with the journal's own
removal disabled: what is left after the run is what a kill right after the commit would
leave. A tile kernel skipped (not stored) still has its journal removed after its record is
written; the rerun settles those."""

from __future__ import annotations

import pytest
from test_kill_resume import HLO  # the same small convnet

from tpugraphs_tools.collect.journal import ConfigJournal
from tpugraphs_tools.collect.request import CollectItem, CollectRequest
from tpugraphs_tools.collect.run import collect
from tpugraphs_tools.collect.tile.stores import DatasetStore
from tpugraphs_tools.measure.options import MeasureOptions
from tpugraphs_tools.programs import ProgramArgs
from tpugraphs_tools.store import WORK_DIR, Dataset
from tpugraphs_tools.validate import validate_path

CHEAP = dict(warmup=0, min_sample_ms=1, max_rounds=8, loaded_copies=1, measure_processes=1)


def _layout(tmp_path) -> CollectItem:
    hlo = tmp_path / "convnet.hlo"
    hlo.write_text(HLO)
    return CollectItem(hlo=str(hlo), options=MeasureOptions(configs=2, seed=1, **CHEAP))


def _tile(tmp_path) -> CollectItem:
    return CollectItem(program="resnet18", program_args=ProgramArgs(preset="tiny"),
                       collection="tile",
                       options=MeasureOptions(configs=2, max_kernels=2, seed=1, **CHEAP))


@pytest.mark.parametrize("make_item", [_layout, _tile], ids=["layout", "tile"])
def test_no_committed_graph_leaves_its_journal(make_item, tmp_path, monkeypatch):
    request = CollectRequest(items=[make_item(tmp_path)], out=str(tmp_path / "data"))
    with monkeypatch.context() as patch:
        patch.setattr(ConfigJournal, "remove", lambda self: None)
        patch.setattr(DatasetStore, "finish", lambda self: None)  # killed before the end
        first = collect(request)
    work = tmp_path / "data" / WORK_DIR
    committed = {g["graph_id"] for g in first.graphs}
    assert committed
    left = {p.name.removesuffix(".jsonl") for p in work.glob("*.jsonl")}
    assert not committed & left, sorted(committed & left)
    configs_before = Dataset.open(tmp_path / "data").configs()

    second = collect(request)
    assert sorted(second.skipped) == sorted(committed)
    assert second.labels == 0
    assert not list(work.glob("*.jsonl")), sorted(p.name for p in work.iterdir())
    assert Dataset.open(tmp_path / "data").configs().equals(configs_before)
    assert validate_path(tmp_path / "data").ok
