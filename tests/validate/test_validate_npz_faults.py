"""Fault injection into one npz: every structure / graph / values class, in a tgt dataset and in
an official TpuGraphs tree. Each case must produce exactly its expected check ids, at the right
file, key and index, and nothing else."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.lib import format as npy_format
from validate_helpers import NPZ_A, NPZ_T, TREE_LAYOUT, TREE_TILE, Expect, edit_npz, restamp

from tpugraphs_tools.validate import CHECKS, Report, validate_path

Arrays = dict[str, np.ndarray]


@dataclass(frozen=True)
class Case:
    id: str
    collection: str  # which file: the layout graph or the tile graph
    expect: tuple[Expect, ...]
    arrays: Callable[[Arrays], Arrays | None] | None = None
    raw: Callable[[Path], None] | None = None  # rewrites the file's bytes instead
    # What an official tree reports, where it differs: TpuGraphs' TPU data may list only the
    # minor-most dims of a layout (distinct dims followed by -1s), tgt's datasets never do.
    tree_expect: tuple[Expect, ...] | None = None


def _set(key: str, index: tuple | int, value: float) -> Callable[[Arrays], None]:
    def fn(a: Arrays) -> None:
        a[key] = a[key].copy()
        a[key][index] = value
    return fn


def _replace(key: str, value: np.ndarray) -> Callable[[Arrays], None]:
    def fn(a: Arrays) -> None:
        a[key] = value
    return fn


def _drop(key: str) -> Callable[[Arrays], None]:
    def fn(a: Arrays) -> None:
        del a[key]
    return fn


def _edge(row: int, u: int, v: int) -> Callable[[Arrays], None]:
    return _set("edge_index", row, np.array([u, v]))  # type: ignore[arg-type]


def _group(key: str, config: int, node: int, start: int, values: list[int]
           ) -> Callable[[Arrays], None]:
    def fn(a: Arrays) -> None:
        a[key] = a[key].copy()
        a[key][config, node, start:start + 6] = values + [-1] * (6 - len(values))
    return fn


def _copy_config(key: str, src: int, dst: int) -> Callable[[Arrays], None]:
    def fn(a: Arrays) -> None:
        a[key] = a[key].copy()
        a[key][dst] = a[key][src]
    return fn


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_member(key: str) -> Callable[[Path], None]:
    """Flip a byte in the middle of one member's data: CRC / inflate error on that key."""
    def fn(path: Path) -> None:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo(f"{key}.npy")
        data = bytearray(path.read_bytes())
        name_len = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28], "little")
        extra_len = int.from_bytes(data[info.header_offset + 28:info.header_offset + 30],
                                   "little")
        start = info.header_offset + 30 + name_len + extra_len
        data[start + info.compress_size - 8] ^= 0xFF
        path.write_bytes(bytes(data))
    return fn


def _absurd_header(path: Path) -> None:
    """node_feat's npy header claims 10^12 x 140 floats; the member holds a few bytes."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for key, arr in arrays.items():
            member = io.BytesIO()
            if key == "node_feat":
                npy_format.write_array_header_1_0(
                    member, {"descr": "<f4", "fortran_order": False, "shape": (10**12, 140)})
                member.write(b"\0" * 64)
            else:
                np.save(member, arr)
            zf.writestr(f"{key}.npy", member.getvalue())
    path.write_bytes(buf.getvalue())


L, T = "layout", "tile"
CASES = [
    # -- structure --
    Case("truncated", L, (Expect("structure.unreadable", key=None),), raw=_truncate),
    Case("corrupt_member", L, (Expect("structure.unreadable", key="node_feat"),),
         raw=_corrupt_member("node_feat")),
    Case("pickled", L, (Expect("structure.pickled", key="node_opcode"),),
         arrays=_replace("node_opcode", np.array([63, 63, 34, 75, 24, 13, 2], dtype=object))),
    Case("missing_key", L, (Expect("structure.missing_key", key="edge_index"),),
         arrays=_drop("edge_index")),
    Case("extra_key", L, (Expect("structure.extra_key", key="bonus"),),
         arrays=_replace("bonus", np.zeros(3))),
    Case("dtype", L, (Expect("structure.dtype", key="node_opcode"),),
         arrays=lambda a: {**a, "node_opcode": a["node_opcode"].astype(np.int32)}),
    Case("rank", L, (Expect("structure.rank", key="edge_index"),),
         arrays=lambda a: {**a, "edge_index": a["edge_index"].reshape(-1)}),
    Case("node_feat_width", L, (Expect("structure.shape", key="node_feat"),),
         arrays=lambda a: {**a, "node_feat": a["node_feat"][:, :139].copy()}),
    Case("layout_width", L, (Expect("structure.shape", key="node_config_feat"),),
         arrays=lambda a: {**a, "node_config_feat": a["node_config_feat"][..., :17].copy()}),
    Case("tile_width", T, (Expect("structure.shape", key="config_feat"),),
         arrays=lambda a: {**a, "config_feat": a["config_feat"][:, :23].copy()}),
    Case("absurd_size", L, (Expect("structure.absurd_size", key="node_feat"),),
         raw=_absurd_header),
    # -- graph --
    Case("edge_too_big", L, (Expect("graph.edge_out_of_range", key="edge_index", index=4),),
         arrays=_edge(4, 7, 3)),
    Case("edge_negative", L, (Expect("graph.edge_out_of_range", key="edge_index", index=2),),
         arrays=_edge(2, 3, -1)),
    Case("self_loop", L, (Expect("graph.self_loop", key="edge_index", index=0),),
         arrays=_edge(0, 2, 2)),
    Case("duplicate_edge", L, (Expect("graph.duplicate_edge", key="edge_index", index=1),),
         arrays=_edge(1, 2, 0)),
    Case("cycle", L, (Expect("graph.not_topological", key="edge_index", index=2),),
         arrays=_edge(2, 2, 3)),
    Case("config_id_range", L,
         (Expect("graph.config_id_out_of_range", key="node_config_ids", index=1),),
         arrays=_set("node_config_ids", 1, 99)),
    Case("config_id_dup", L,
         (Expect("graph.config_id_duplicate", key="node_config_ids", index=1),),
         arrays=_set("node_config_ids", 1, 2)),
    Case("config_id_opcode", L,
         (Expect("graph.config_id_not_configurable", key="node_config_ids", index=1),),
         arrays=_set("node_config_ids", 1, 4)),
    Case("splits_start", L, (Expect("graph.splits_bounds", key="node_splits", index=0),),
         arrays=_set("node_splits", 0, 1)),
    Case("splits_end", L, (Expect("graph.splits_bounds", key="node_splits", index=1),),
         arrays=_set("node_splits", 1, 6)),
    Case("splits_order", L,
         (Expect("graph.splits_not_increasing", key="node_splits", index=2),),
         arrays=_replace("node_splits", np.array([0, 5, 3, 7]))),
    Case("splits_2d_ok_but_unsorted", L,
         (Expect("graph.splits_not_increasing", key="node_splits", index=2),),
         arrays=_replace("node_splits", np.array([[0, 5, 5, 7]]))),
    Case("opcode_range", L, (Expect("graph.opcode_out_of_range", key="node_opcode", index=5),),
         arrays=_set("node_opcode", 5, 200)),
    Case("opcode_tombstone", L,
         (Expect("graph.opcode_tombstone", key="node_opcode", index=4),),
         arrays=_set("node_opcode", 4, 97)),
    Case("node_count", L, (Expect("graph.node_count_mismatch", key="node_opcode"),),
         arrays=lambda a: {**a, "node_opcode": a["node_opcode"][:6].copy()}),
    Case("tile_edge_cycle", T, (Expect("graph.not_topological", key="edge_index", index=5),),
         arrays=_edge(5, 5, 6)),
    # -- values --
    Case("nan_node_feat", L, (Expect("values.non_finite", key="node_feat", index=3),),
         arrays=_set("node_feat", (3, 50), np.nan)),
    Case("inf_layout", L, (Expect("values.non_finite", key="node_config_feat", index=2),),
         arrays=_set("node_config_feat", (2, 1, 13), np.inf)),
    Case("inf_tile", T, (Expect("values.non_finite", key="config_feat", index=1),),
         arrays=_set("config_feat", (1, 7), -np.inf)),
    Case("runtime_zero", L,
         (Expect("values.runtime_nonpositive", key="config_runtime", index=1),),
         arrays=_set("config_runtime", 1, 0)),
    Case("runtime_negative", T,
         (Expect("values.runtime_nonpositive", key="config_runtime", index=2),),
         arrays=_set("config_runtime", 2, -5)),
    Case("runtime_absurd", L,
         (Expect("values.runtime_absurd", key="config_runtime", index=3),),
         arrays=_set("config_runtime", 3, 4 * 10**12)),
    Case("runtime_nan", L,
         (Expect("structure.dtype", key="config_runtime"),
          Expect("values.runtime_not_finite", key="config_runtime", index=0)),
         arrays=lambda a: {**a, "config_runtime": np.array([np.nan, 2e3, 3e3, 4e3])}),
    Case("layout_value", L,
         (Expect("values.layout_out_of_range", key="node_config_feat", index=1),),
         arrays=_set("node_config_feat", (1, 1, 8), 7)),
    Case("layout_fraction", L,
         (Expect("values.layout_out_of_range", key="node_config_feat", index=0),),
         arrays=_set("node_config_feat", (0, 0, 1), 0.5)),
    Case("layout_repeat", L, (Expect("values.layout_group", key="node_config_feat", index=2),),
         arrays=_group("node_config_feat", 2, 0, 6, [0, 0])),
    Case("layout_gap", L, (Expect("values.layout_group", key="node_config_feat", index=1),),
         arrays=_group("node_config_feat", 1, 1, 6, [1, 2]), tree_expect=()),
    Case("layout_prefix", L, (Expect("values.layout_group", key="node_config_feat", index=2),),
         arrays=_group("node_config_feat", 2, 0, 0, [1]), tree_expect=()),
    Case("layout_prefix_rank", L,
         (Expect("values.layout_group", key="node_config_feat", index=1),),
         arrays=_group("node_config_feat", 1, 0, 0, [5]),
         tree_expect=(Expect("values.layout_rank", key="node_config_feat", index=1),)),
    Case("layout_hole", L, (Expect("values.layout_group", key="node_config_feat", index=3),),
         arrays=_set("node_config_feat", (3, 0, 6), -1)),
    Case("layout_rank", L, (Expect("values.layout_rank", key="node_config_feat", index=0),),
         arrays=_group("node_config_feat", 0, 0, 0, [0]), tree_expect=()),
    Case("normalizer", T,
         (Expect("values.normalizer_nonpositive", key="config_runtime_normalizers",
                 index=1),),
         arrays=_set("config_runtime_normalizers", 1, 0)),
    Case("dup_layout", L,
         (Expect("values.duplicate_config_conflict", key="node_config_feat", index=1),),
         arrays=_copy_config("node_config_feat", 1, 3)),
    Case("dup_tile", T,
         (Expect("values.duplicate_config_conflict", key="config_feat", index=0),),
         arrays=_copy_config("config_feat", 0, 2)),
    Case("count_runtime", L,
         (Expect("values.config_count_mismatch", key="config_runtime"),),
         arrays=lambda a: {**a, "config_runtime": a["config_runtime"][:3].copy()}),
    Case("count_configurable", L,
         (Expect("values.config_count_mismatch", key="node_config_feat"),),
         arrays=lambda a: {**a, "node_config_feat": np.concatenate(
             [a["node_config_feat"], np.full((4, 1, 18), -1, np.float32)], axis=1)}),
    Case("count_normalizers", T,
         (Expect("values.config_count_mismatch", key="config_runtime_normalizers"),),
         arrays=lambda a: {**a, "config_runtime_normalizers": np.full(2, 1000, np.int64)}),
]
TARGETS = {("tgt", L): NPZ_A, ("tgt", T): NPZ_T, ("tree", L): TREE_LAYOUT,
           ("tree", T): TREE_TILE}


def inject(root: Path, rel: str, case: Case) -> None:
    if case.raw is not None:
        case.raw(root / rel)
        restamp(root, rel)
    else:
        assert case.arrays is not None
        edit_npz(root, rel, case.arrays)


def assert_found(report: Report, expect: tuple[Expect, ...], rel: str) -> None:
    got = report.checks()
    assert got == {e.check for e in expect}, [f"{f.check} {f.location()}: {f.message}"
                                               for f in report.findings]
    for e in expect:
        matches = [f for f in report.findings if f.check == e.check and f.file == (e.file or rel)
                   and (e.key is None or f.key == e.key)
                   and (e.index is None or f.index == e.index)]
        assert matches, (e, report.findings)


@pytest.mark.parametrize("target", ["tgt", "tree"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_npz_fault(case: Case, target: str, tgt_ds: Path, tree: Path) -> None:
    root = tgt_ds if target == "tgt" else tree
    rel = TARGETS[(target, case.collection)]
    inject(root, rel, case)
    report = validate_path(root)
    expect = case.tree_expect if target == "tree" and case.tree_expect is not None \
        else case.expect
    assert_found(report, expect, rel)
    assert report.ok() == all(CHECKS[e.check].severity == "warning" for e in expect)
