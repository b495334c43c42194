"""Fault injection into a tgt dataset's manifest, files and tables: one fault per case, each
found with the right check id and location, and nothing else reported."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from validate_helpers import (
    GRAPH_A,
    GRAPH_B,
    NPZ_A,
    Expect,
    config_row,
    edit_manifest,
    edit_table,
    graph_index,
    restamp,
    set_cell,
    table_part,
)

from tpugraphs_tools.store import LOCK_FILE, Holder
from tpugraphs_tools.validate import CHECKS, validate_path

HLO_A = f"graphs/{GRAPH_A}.hlo.txt"
CONFIGS, GRAPHS = table_part("configs"), table_part("graphs")


@dataclass(frozen=True)
class Case:
    id: str
    check: str  # the fault class this case injects
    inject: Callable[[Path], tuple[Expect, ...]]


def _cfg_index(root: Path, graph_id: str, config_index: int) -> int:
    return config_row(pq.read_table(root / CONFIGS), graph_id, config_index)


def _graph_index(root: Path, graph_id: str) -> int:
    return graph_index(pq.read_table(root / GRAPHS), graph_id)


def cfg(check: str, column: str, config_index: int, value: object, *also: str,
        key: str | None = None) -> Case:
    """Set one configs.parquet cell of graph A; expect ``check`` there (+ ``also`` ids)."""
    def fn(root: Path) -> tuple[Expect, ...]:
        i = _cfg_index(root, GRAPH_A, config_index)
        edit_table(root, "configs", lambda t: set_cell(t, column, i, value))
        return (Expect(check, CONFIGS, key or column, i), *(Expect(c) for c in also))
    return Case(f"{check.split('.')[1]}-{column}", check, fn)


def graph_cell(check: str, column: str, graph_id: str, value: object, *also: str,
               key: str | None = None, type_: pa.DataType | None = None,
               suffix: str = "", row_level: bool = True) -> Case:
    def fn(root: Path) -> tuple[Expect, ...]:
        i = _graph_index(root, graph_id)
        edit_table(root, "graphs", lambda t: set_cell(t, column, i, value, type_))
        return (Expect(check, GRAPHS, key or column, i if row_level else None),
                *(Expect(c) for c in also))
    return Case(f"{check.split('.')[1]}-{column}{suffix}", check, fn)


def _flip_hlo(root: Path) -> tuple[Expect, ...]:
    data = bytearray((root / HLO_A).read_bytes())
    data[10] ^= 1
    (root / HLO_A).write_bytes(bytes(data))
    return (Expect("dataset.checksum_mismatch", HLO_A),)


def _grow_hlo(root: Path) -> tuple[Expect, ...]:
    with open(root / HLO_A, "ab") as f:
        f.write(b"\n")
    return (Expect("dataset.size_mismatch", HLO_A),)


def _delete(rel: str, check: str) -> Callable[[Path], tuple[Expect, ...]]:
    def fn(root: Path) -> tuple[Expect, ...]:
        (root / rel).unlink()
        return (Expect(check, rel),)
    return fn


def _touch(rel: str, check: str) -> Callable[[Path], tuple[Expect, ...]]:
    def fn(root: Path) -> tuple[Expect, ...]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("{}")
        return (Expect(check, rel),)
    return fn


def _being_written(root: Path) -> tuple[Expect, ...]:
    """The write lock of a run on another host whose heartbeat is fresh: live."""
    holder = Holder(4242, "node-7", "2025-06-01 12:00:03 UTC", "tgt collect", "token")
    (root / LOCK_FILE).write_bytes(holder.to_bytes())
    return (Expect("dataset.being_written", LOCK_FILE),)


def _manifest(edit: Callable[[dict], object], check: str, key: str | None = None
              ) -> Callable[[Path], tuple[Expect, ...]]:
    def fn(root: Path) -> tuple[Expect, ...]:
        edit_manifest(root, edit)
        return (Expect(check, "manifest.json", key),)
    return fn


def _garbage_manifest(root: Path) -> tuple[Expect, ...]:
    (root / "manifest.json").write_text("{not json")
    return (Expect("dataset.manifest_unreadable", "manifest.json"),)


def _truncate_table(root: Path) -> tuple[Expect, ...]:
    data = (root / CONFIGS).read_bytes()
    (root / CONFIGS).write_bytes(data[: len(data) // 2])
    restamp(root, CONFIGS)
    return (Expect("structure.unreadable", CONFIGS),)


def _drop_table(root: Path) -> tuple[Expect, ...]:
    (root / CONFIGS).unlink()
    edit_manifest(root, lambda m: m["files"].pop(CONFIGS))
    return (Expect("dataset.table_missing", CONFIGS),)


def _table_edit(name: str, edit: Callable[[pa.Table], pa.Table], check: str,
                key: str | None) -> Callable[[Path], tuple[Expect, ...]]:
    def fn(root: Path) -> tuple[Expect, ...]:
        edit_table(root, name, edit)
        return (Expect(check, table_part(name), key),)
    return fn


def _orphan(root: Path) -> tuple[Expect, ...]:
    shutil.copy(root / NPZ_A, root / "graphs/stray.npz")
    restamp(root, "graphs/stray.npz")
    return (Expect("dataset.npz_orphan", "graphs/stray.npz"),)


def _drop_config_row(root: Path) -> tuple[Expect, ...]:
    i = _cfg_index(root, GRAPH_A, 3)
    edit_table(root, "configs", lambda t: t.filter(pc.not_equal(
        pa.array(range(t.num_rows)), i)))
    return (Expect("dataset.npz_row_unreferenced", NPZ_A, "config_runtime", 3),)


def _row_count(m: dict) -> None:
    m["tables"]["configs"]["parts"][0]["rows"] = 99
    m["tables"]["configs"]["rows"] = 99


def _bad_partition(root: Path) -> tuple[Expect, ...]:
    """A partition stored through the store API whose node_segment is one node short."""
    from tpugraphs_tools.partition import npz_bytes, partition_dataset
    from tpugraphs_tools.store import Dataset

    (result, *_) = partition_dataset(Dataset.open(root), method="contiguous", segments=2)
    rel = result.row["file"]
    with Dataset.open(root).transaction() as tx:
        tx.put_file(rel, npz_bytes({"node_segment": result.partition.node_segment[:-1]}))
    return (Expect("dataset.partition_invalid", rel, "node_segment"),)


CASES = [
    Case("checksum", "dataset.checksum_mismatch", _flip_hlo),
    Case("size", "dataset.size_mismatch", _grow_hlo),
    Case("file_missing", "dataset.file_missing", _delete(HLO_A, "dataset.file_missing")),
    Case("file_unlisted", "dataset.file_unlisted", _touch("notes.json", "dataset.file_unlisted")),
    Case("temp_leftover", "dataset.interrupted_write", _touch("graphs.parquet.tgt-tmp-deadbeef",
                                 "dataset.interrupted_write")),
    Case("journal_leftover", "dataset.interrupted_write", _touch(".tgt-commit.json", "dataset.interrupted_write")),
    Case("being_written", "dataset.being_written", _being_written),
    Case("partial_collection", "dataset.partial_collection", _touch(".tgt-work/g.jsonl", "dataset.partial_collection")),
    Case("manifest_schema", "dataset.manifest_schema", _manifest(lambda m: m.pop("host"), "dataset.manifest_schema")),
    Case("manifest_type", "dataset.manifest_schema", _manifest(lambda m: m.update(devices="cpu"),
                                    "dataset.manifest_schema", "devices")),
    Case("manifest_unreadable", "dataset.manifest_unreadable", _garbage_manifest),
    Case("manifest_missing", "dataset.manifest_missing", _delete("manifest.json", "dataset.manifest_missing")),
    Case("format_too_new", "dataset.format_too_new", _manifest(lambda m: m.update(format_version=99),
                                     "dataset.format_too_new", "format_version")),
    Case("row_count", "dataset.row_count_mismatch", _table_edit("configs", lambda t: t, "dataset.row_count_mismatch", None)),
    Case("table_unreadable", "structure.unreadable", _truncate_table),
    Case("table_missing", "dataset.table_missing", _drop_table),
    Case("column_missing", "dataset.schema_column_missing", _table_edit("configs", lambda t: t.drop_columns(["strategy"]),
                                       "dataset.schema_column_missing", "strategy")),
    Case("column_unknown", "dataset.schema_column_unknown", _table_edit("configs", lambda t: t.append_column(
        "extra", pa.array([1] * t.num_rows)), "dataset.schema_column_unknown", "extra")),
    graph_cell("dataset.schema_type", "num_nodes", GRAPH_A, "7", type_=pa.string(),
               row_level=False),
    cfg("dataset.schema_null", "strategy", 1, None),
    cfg("dataset.schema_enum", "status", 4, "bogus"),
    graph_cell("dataset.schema_pattern", "fingerprint", GRAPH_B, "XYZ"),
    cfg("dataset.schema_minimum", "config_index", 4, -1),
    cfg("dataset.schema_duplicate_id", "config_index", 1, 0, key="graph_id,config_index"),
    cfg("dataset.schema_foreign_key", "graph_id", 4, "ghost"),
    graph_cell("dataset.npz_missing", "npz_file", GRAPH_A, "graphs/nope.npz",
               "dataset.npz_orphan"),
    graph_cell("dataset.hlo_missing", "hlo_file", GRAPH_A, "graphs/nope.hlo.txt"),
    graph_cell("dataset.absolute_path", "source_path", GRAPH_A, "/home/someone/model.hlo"),
    Case("npz_orphan", "dataset.npz_orphan", _orphan),
    Case("partition_invalid", "dataset.partition_invalid", _bad_partition),
    graph_cell("dataset.graph_row_mismatch", "num_nodes", GRAPH_A, 8),
    graph_cell("dataset.graph_row_mismatch", "num_edges", GRAPH_A, 5, suffix="-edges"),
    graph_cell("dataset.num_configs_mismatch", "num_configs", GRAPH_A, 5),
    cfg("dataset.npz_row_missing", "npz_row", 3, None, "dataset.npz_row_unreferenced"),
    cfg("dataset.npz_row_unexpected", "npz_row", 4, 0, "dataset.npz_row_duplicate"),
    cfg("dataset.npz_row_out_of_range", "npz_row", 3, 10, "dataset.npz_row_unreferenced"),
    cfg("dataset.npz_row_duplicate", "npz_row", 3, 2, "dataset.npz_row_unreferenced"),
    Case("npz_row_unreferenced", "dataset.npz_row_unreferenced", _drop_config_row),
    cfg("dataset.ok_runtime_invalid", "runtime_min_ns", 2, 0),
    cfg("dataset.honoured_invalid", "honoured", 2, '{"no_such_node": {"output": true}}'),
    cfg("dataset.relative_ci_invalid", "relative_to_default", 2, 50.0),
    cfg("dataset.control_outside_ci", "relative_ci_low", 5, 1.01),
    cfg("dataset.timing_cpus_mixed", "timing_cpus", 2, 512),
    cfg("dataset.schema_enum", "timer", 2, "gpu-clock"),
    cfg("dataset.timer_mixed", "timer", 2, "mixed"),
    cfg("dataset.tile_not_as_requested", "realized", 2,
        '{"matches_request": false, "tile": {"block_m": 32}}'),
    cfg("dataset.tile_infeasible", "status", 2, "infeasible", "dataset.npz_row_unexpected",
        key="status"),
    graph_cell("dataset.split_overlap", "program", GRAPH_B, "tiny_a"),
    graph_cell("dataset.split_overlap", "fingerprint", GRAPH_B, "a" * 64),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_dataset_fault(case: Case, tgt_ds: Path) -> None:
    expect = case.inject(tgt_ds)
    if case.id == "row_count":
        edit_manifest(tgt_ds, _row_count)
        expect = (Expect("dataset.row_count_mismatch", CONFIGS),)
    report = validate_path(tgt_ds)
    messages = [f"{f.check} {f.location()}: {f.message}" for f in report.findings]
    assert report.checks() == {e.check for e in expect}, messages
    for e in expect:
        assert any(f.check == e.check and (e.file is None or f.file == e.file)
                   and (e.key is None or f.key == e.key)
                   and (e.index is None or f.index == e.index)
                   for f in report.findings), (e, messages)
    assert report.ok() == all(CHECKS[e.check].severity == "warning" for e in expect)
