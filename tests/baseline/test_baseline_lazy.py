"""Lazy per-config arrays (configstore.py): same results as the in-memory path, a cache that
follows the data and is never seen half-written."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tpugraphs_tools.baseline import (
    BaselineOptions,
    PrepareOptions,
    TrainConfig,
    configstore,
    loading,
    run_baseline,
)
from tpugraphs_tools.baseline.configstore import CACHE_DIR, ConfigCache, ConfigRows, in_memory
from tpugraphs_tools.baseline.data import TgtSource, TpuGraphsTreeSource
from tpugraphs_tools.baseline.graphstore import CACHE_DIR as GRAPH_CACHE
from tpugraphs_tools.baseline.graphstore import GraphStore
from tpugraphs_tools.baseline.synthetic import layout_graph, tile_graph, write_synthetic_dataset
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.validate import validate_path

# wall clock, and compilations (the second run in a process reuses the jitted functions)
TIMINGS = {"seconds", "epoch_seconds", "compiles"}


def _no_npz(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a cached graph was read from its npz again")


def _strip(value: Any) -> Any:
    """The report without wall-clock fields and the option that differs."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items()
                if k not in TIMINGS and k != "lazy_configs"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


@pytest.mark.parametrize(("collection", "gst"),
                         [("layout", False), ("layout", True), ("tile", True)])
def test_lazy_and_in_memory_reports_are_identical(tmp_path: Path, collection: str, gst: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ds"
    write_synthetic_dataset(root, programs=3, graphs_per_program=2, nodes=(30, 50),
                            configs=28, collection=collection, seed=3, label_ci=0.01)
    base = BaselineOptions(
        hidden=8, layers=1, segment_method="contiguous", segment_nodes=16,
        train=TrainConfig(epochs=2, configs_per_graph=8, batch_graphs=2, seed=1, gst=gst,
                          finetune_epochs=1 if gst else 0),
        prepare=PrepareOptions(max_configs=20, seed=1, lazy_configs=False))
    memory = run_baseline(root, base).to_json()
    assert not (root / CACHE_DIR).exists()
    lazy_opts = dataclasses.replace(base, prepare=dataclasses.replace(base.prepare,
                                                                      lazy_configs=True))
    lazy = run_baseline(root, lazy_opts).to_json()
    assert len(list((root / CACHE_DIR).iterdir())) == 6      # one folder per graph
    graphs = [p for p in (root / GRAPH_CACHE).iterdir()]
    assert len(graphs) == 6                                   # structure of each graph
    # one raw entry per graph, prepared once per evaluation (its own feature statistics)
    assert all(len(list(g.iterdir())) == 1 for g in graphs)
    preps = {len(list(e.glob("prep-*"))) for g in graphs for e in g.iterdir()}
    assert preps == {len(memory["collections"][collection]["evaluations"])}
    assert _strip(lazy) == _strip(memory)
    evaluations = memory["collections"][collection]["evaluations"]
    assert evaluations and all(e["per_graph"] for e in evaluations.values())
    # Label CIs reach the scores, subsampled and held-out rows included (views of the rows).
    for e in evaluations.values():
        for split in e["results"].values():
            assert split["model"]["kendall_tau_sure_n"] >= 1
            assert -1.0 <= split["model"]["kendall_tau_sure"] <= 1.0
    monkeypatch.setattr(loading, "load_raw", _no_npz)         # from the cache as built
    again = run_baseline(root, lazy_opts).to_json()
    assert _strip(again) == _strip(memory)
    assert validate_path(root).ok(strict=True)                # the cache is not data


def test_cache_matches_arrays_and_follows_the_file(tmp_path: Path) -> None:
    path = tmp_path / "npz" / "layout" / "xla" / "default" / "train" / "g.npz"
    path.parent.mkdir(parents=True)
    arrays, _ = layout_graph(0, 40, 12)
    np.savez(path, **arrays)
    source = TpuGraphsTreeSource(tmp_path / "npz")
    info = source.index()[0]
    cache = ConfigCache(source.cache_root())
    got = cache.open(source, info.graph_id, info.kind)
    want = in_memory(arrays, "layout", None)
    rows = np.array([11, 0, 5])
    assert np.array_equal(got.feat[rows], want.feat[rows]) and got.feat[rows].dtype == np.int8
    assert np.array_equal(got.runtime.read(), want.runtime.read())
    assert got.num_copies is None
    view = got.take(np.array([2, 4, 6])).take(np.array([2, 0]))
    assert np.array_equal(view.runtime.read(), want.runtime.read()[[6, 2]])
    changed, _ = layout_graph(1, 40, 9)
    np.savez(path, **changed)
    again = cache.open(source, info.graph_id, info.kind)
    assert len(again.runtime) == 9
    assert np.array_equal(again.feat.read(), in_memory(changed, "layout", None).feat.read())
    entries = [p for p in (cache.dir).rglob("*") if p.is_dir() and p.parent != cache.dir]
    assert len(entries) == 1 and ".tmp-" not in entries[0].name   # old version removed


def test_streamed_repack_equals_whole_read(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(configstore, "CHUNK_BYTES", 100)     # many small chunks
    write_synthetic_dataset(tmp_path / "t", programs=1, graphs_per_program=1, configs=30,
                            collection="tile")
    source = TgtSource(tmp_path / "t")
    info = source.index()[0]
    got = ConfigCache(source.cache_root()).open(source, info.graph_id, info.kind)
    record = source.load(info)
    want = in_memory(record.arrays, "tile", record.num_copies)
    assert np.array_equal(got.feat.read(), want.feat.read())
    assert np.array_equal(got.runtime.read(), want.runtime.read())
    arrays = tile_graph(0, 20, 30)
    assert got.feat.shape == (30, arrays["config_feat"].shape[1])


def test_failed_repack_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "npz" / "tile" / "xla" / "train" / "g.npz"
    path.parent.mkdir(parents=True)
    arrays = tile_graph(0, 20, 6)
    arrays["config_feat"] = np.asfortranarray(np.zeros((6, 24, 2), np.float32))
    np.savez(path, **arrays)
    source = TpuGraphsTreeSource(tmp_path / "npz")
    info = source.index()[0]
    cache = ConfigCache(source.cache_root())
    with pytest.raises(Exception, match="config_feat is not a C-ordered"):
        cache.open(source, info.graph_id, info.kind)
    assert not [p for p in cache.dir.rglob("*") if p.is_file()]


def test_rows_of_an_array_and_a_file_agree(tmp_path: Path) -> None:
    data = np.arange(60, dtype=np.float64).reshape(20, 3)
    np.save(tmp_path / "a.npy", data)
    for rows in (ConfigRows.of(data), ConfigRows.file(tmp_path / "a.npy")):
        view = rows.take(np.array([19, 3, 7]))
        assert view.shape == (3, 3) and len(view) == 3
        assert np.array_equal(view[np.array([2, 0])], data[[7, 19]])
        doubled = view.with_transform(lambda x: x[:, :2] * 2, (2,))
        assert doubled.shape == (3, 2)
        assert np.array_equal(doubled.read(), data[[19, 3, 7]][:, :2] * 2)


def test_graph_store_holds_a_bounded_number_of_graphs(tmp_path: Path) -> None:
    store = GraphStore(tmp_path, capacity=2)
    folders = [store.folder(f"g{i}", "k") for i in range(3)]
    for i, folder in enumerate(folders):
        store.write(folder, {"feat": np.full((4, 3), i, np.float32),
                             "edges": np.zeros((0, 2), np.int64)}, {"num_nodes": 4})
    for folder in folders:
        store.load(folder)
    assert len(store) == 2 and store.loads == 3
    store.load(folders[2])                                    # still open: no read
    assert store.loads == 3
    entry = store.load(folders[0])                            # evicted: read again
    assert store.loads == 4 and len(store) == 2
    assert np.array_equal(entry["feat"], np.zeros((4, 3), np.float32))
    assert entry["edges"].shape == (0, 2)
    newer = store.folder("g0", "k2")                          # a new key replaces the old
    store.write(newer, {"feat": np.ones((1, 1), np.float32)}, {}, replace_older=True)
    assert [p.name for p in newer.parent.iterdir()] == [newer.name]


def test_graph_cache_follows_the_options(tmp_path: Path) -> None:
    """--prune changes the stored structure: a new raw entry replaces the old one."""
    root = tmp_path / "ds"
    write_synthetic_dataset(root, programs=1, graphs_per_program=1, nodes=(40, 40),
                            configs=8, collection="layout", seed=2)
    opts = BaselineOptions(hidden=8, layers=1, holdout="configs",
                           train=TrainConfig(epochs=1, configs_per_graph=4, batch_graphs=1))
    first = run_baseline(root, opts).to_json()
    pruned = dataclasses.replace(opts, prepare=PrepareOptions(prune=True))
    second = run_baseline(root, pruned).to_json()
    (graph,) = list((root / GRAPH_CACHE).iterdir())
    assert len(list(graph.iterdir())) == 1                    # the unpruned entry is gone
    rows = second["collections"]["layout"]["evaluations"]["within-graph"]["per_graph"]
    assert rows[0]["nodes"] < first["collections"]["layout"]["evaluations"][
        "within-graph"]["per_graph"][0]["nodes"]


def test_damaged_graph_entry_is_a_clear_error(tmp_path: Path) -> None:
    store = GraphStore(tmp_path)
    folder = store.folder("g", "k")
    store.write(folder, {"feat": np.zeros((100, 8), np.float32)}, {"num_nodes": 100})
    (folder / "feat.npy").write_bytes((folder / "feat.npy").read_bytes()[:200])
    with pytest.raises(DatasetError, match="damaged baseline graph cache entry"):
        GraphStore(tmp_path).load(folder)
