"""A tile collection rerun skips programs whose kernels are already committed."""

from __future__ import annotations

from tpugraphs_tools.collect.run import CollectItem, CollectRequest, build_graph, collect
from tpugraphs_tools.measure.options import MeasureOptions
from tpugraphs_tools.programs import ProgramArgs
from tpugraphs_tools.store import Dataset


def test_second_tile_run_measures_nothing(tmp_path):
    item = CollectItem(program="resnet18", program_args=ProgramArgs(preset="tiny"),
                       collection="tile",
                       options=MeasureOptions(configs=2, max_kernels=2, warmup=0,
                                              max_rounds=24, loaded_copies=2, measure_processes=2))
    request = CollectRequest(items=[item], out=str(tmp_path / "data"))
    events: list = []
    first = collect(request, progress=events.append)
    assert first.graphs and not first.skipped
    # progress: kernel by kernel, ending with every kernel slot done, labels counted
    assert {"lowering", "compiling", "timing", "storing"} <= {e.stage for e in events}
    assert any(e.detail.startswith("kernel 1/") for e in events)
    assert events[-1].configs_done == events[-1].configs_total > 0
    assert first.labels == sum(g["num_configs"] for g in first.graphs) > 0
    # kernels point at the id the whole program's layout graph gets
    parent = build_graph(item, None).graph_id
    assert {g["parent_graph_id"] for g in first.graphs} == {parent}
    configs_before = Dataset.open(tmp_path / "data").configs()
    second = collect(request)
    assert second.labels == 0
    assert sorted(second.skipped) == sorted(g["graph_id"] for g in first.graphs)
    assert not second.tiles
    assert Dataset.open(tmp_path / "data").configs().equals(configs_before)
