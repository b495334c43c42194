"""A run killed after a graph's commit and before its journal's removal: the rerun passes over
the committed graph and leaves no journal behind (a stale ``.tgt-work/`` would keep the dataset
reading as partial forever). The kill is emulated by a journal whose removal does nothing
during the first run (and, for a tile program, a program record never finished), which is
the state such a kill leaves."""

from __future__ import annotations

import pytest
from test_kill_resume import HLO  # the same small convnet

from tpugraphs_tools.collect.journal import ConfigJournal
from tpugraphs_tools.collect.run import CollectItem, CollectRequest, collect
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
def test_rerun_drops_the_journal_of_a_committed_graph(make_item, tmp_path, monkeypatch):
    request = CollectRequest(items=[make_item(tmp_path)], out=str(tmp_path / "data"))
    with monkeypatch.context() as patch:
        patch.setattr(ConfigJournal, "remove", lambda self: None)
        patch.setattr(DatasetStore, "finish", lambda self: None)
        first = collect(request)
    work = tmp_path / "data" / WORK_DIR
    stale = sorted(p.name for p in work.glob("*.jsonl"))
    committed = {g["graph_id"] for g in first.graphs}
    # (a kernel the run skipped keeps its journal too: skipping removes it the same way)
    assert committed & {name.removesuffix(".jsonl") for name in stale}
    configs_before = Dataset.open(tmp_path / "data").configs()

    second = collect(request)
    assert sorted(second.skipped) == sorted(committed)
    assert second.labels == 0
    assert not work.exists(), sorted(p.name for p in work.iterdir())
    assert Dataset.open(tmp_path / "data").configs().equals(configs_before)
    assert validate_path(tmp_path / "data").ok
