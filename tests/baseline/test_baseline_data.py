"""Graph sources (tgt dataset, official npz tree) and program-disjoint splits."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tpugraphs_tools.baseline.data import (
    GraphInfo,
    TgtSource,
    TpuGraphsTreeSource,
    iter_graphs,
    open_source,
)
from tpugraphs_tools.baseline.splits import split_graph_infos
from tpugraphs_tools.baseline.synthetic import layout_graph, tile_graph, write_synthetic_dataset


def test_tgt_source_with_and_without_copies(tmp_path: Path) -> None:
    write_synthetic_dataset(tmp_path / "a", programs=2, graphs_per_program=1, configs=5)
    src = open_source(tmp_path / "a")
    assert isinstance(src, TgtSource)
    infos = src.index()
    assert {i.kind for i in infos} == {"layout"} and all(i.split is None for i in infos)
    rec = src.load(infos[0])
    assert rec.num_copies is not None and rec.num_copies.shape == (5,)
    assert rec.arrays["node_config_feat"].shape[0] == 5
    write_synthetic_dataset(tmp_path / "b", programs=1, graphs_per_program=1, configs=5,
                            with_copies=False)
    src_b = TgtSource(tmp_path / "b")
    assert src_b.load(src_b.index()[0]).num_copies is None


def test_tgt_source_reads_label_cis_as_factors_of_the_label(tmp_path: Path) -> None:
    write_synthetic_dataset(tmp_path / "a", programs=1, graphs_per_program=1, configs=5,
                            label_ci=0.01)
    src = TgtSource(tmp_path / "a")
    rec = src.load(src.index()[0])
    assert rec.label_ci is not None and rec.label_ci.shape == (5, 2)
    assert np.allclose(rec.label_ci[0], [1.0, 1.0])            # the default: exact
    assert np.allclose(rec.label_ci[1:], [0.99, 1.01])
    write_synthetic_dataset(tmp_path / "b", programs=1, graphs_per_program=1, configs=5)
    src_b = TgtSource(tmp_path / "b")
    assert src_b.load(src_b.index()[0]).label_ci is None


def _save(path: Path, arrays: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)


def test_tpugraphs_tree_source(tmp_path: Path) -> None:
    root = tmp_path / "npz"
    layout, _ = layout_graph(1, 20, 3)
    layout["node_splits"] = layout["node_splits"][None, :]  # stored files may be 2-D
    for split in ("train", "valid", "test"):
        _save(root / "layout" / "xla" / "default" / split / f"model_{split}.npz", layout)
    _save(root / "tile" / "xla" / "train" / "k_1.npz", tile_graph(2, 15, 4))
    src = open_source(root)
    assert isinstance(src, TpuGraphsTreeSource)
    infos = {i.graph_id: i for i in src.index()}
    assert infos["layout/xla/default/model_valid"].split == "valid"
    assert infos["layout/xla/default/model_valid"].collection == "layout/xla/default"
    assert infos["tile/xla/k_1"].kind == "tile"
    rows = list(iter_graphs(src))
    assert len(rows) == 4
    _, split, arrays = next(r for r in rows if r[0] == "layout/xla/default/model_train")
    assert split == "train" and arrays["node_splits"].ndim == 1
    # a sub-root (one collection) names collections the same way
    sub = TpuGraphsTreeSource(root / "layout" / "xla" / "default")
    assert {i.collection for i in sub.index()} == {"layout/xla/default"}


def _split(programs: list[str], seed: int) -> dict[str, str]:
    infos = [GraphInfo(f"g-{p}", "layout", "layout", p, None) for p in programs]
    return {i.program: i.split for i in split_graph_infos(infos, seed)[0]}


def test_program_splits_are_disjoint_and_seeded() -> None:
    programs = [f"p{i}" for i in range(10)]
    a = _split(programs, seed=3)
    assert a == _split(programs, seed=3)
    assert set(a.values()) == {"train", "valid", "test"}
    assert list(a.values()).count("train") == 8
    three = _split(["x", "y", "z"], seed=0)
    assert sorted(three.values()) == ["test", "train", "valid"]
    assert _split(["only"], seed=0) == {"only": "train"}
    infos = [GraphInfo(f"g{i}", "layout", "layout", f"p{i % 4}", None) for i in range(12)]
    split, how, conflicts = split_graph_infos(infos, seed=1)
    assert how == "by-program(seed=1, 0.8/0.1/0.1)" and not conflicts
    by_program: dict[str, set] = {}
    for info in split:
        by_program.setdefault(info.program, set()).add(info.split)
    assert all(len(s) == 1 for s in by_program.values())


def test_dataset_splits_win_and_their_program_follows() -> None:
    infos = [GraphInfo("a", "layout", "layout", "p", "test"),
             GraphInfo("a2", "layout", "layout", "p", None),
             GraphInfo("b", "layout", "layout", "q", None)]
    kept, how, _ = split_graph_infos(infos, seed=0)
    assert how == "dataset + by-program(seed=0, 0.8/0.1/0.1)"
    assert {i.graph_id: i.split for i in kept} == {"a": "test", "a2": "test", "b": "train"}
    only, how, _ = split_graph_infos(infos[:1], seed=0)
    assert how == "dataset" and only[0].split == "test"
