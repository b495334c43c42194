"""Sharded tables: a commit writes only its own part, replacing rows rewrites only the parts
that hold them, small parts are merged, and format-1 datasets still open and validate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from test_store_dataset import arrays, assert_consistent, config_rows, graph_row

from tpugraphs_tools.store import MANIFEST, Dataset, tables
from tpugraphs_tools.validate import validate_path

V1 = Path(__file__).parent / "data" / "format-v1"
__all__ = ["arrays"]  # the fixture, imported for pytest


def commit_graph(ds: Dataset, gid: str, arrays: dict[str, np.ndarray],
                 runtimes: tuple[int, ...] = (10, 20)) -> None:
    arrays = with_configs(arrays, len(runtimes), runtimes)
    c = len(runtimes)
    with ds.transaction() as tx:
        row = graph_row(gid, arrays, num_configs=c)
        tx.put_graph(row, arrays)
        tx.put_configs(gid, rows_of(runtimes))


def with_configs(arrays: dict[str, np.ndarray], c: int, runtimes: tuple[int, ...]
                 ) -> dict[str, np.ndarray]:
    nc = arrays["node_config_ids"].shape[0]
    return {**arrays, "node_config_feat": np.full((c, nc, 18), -1, np.float32),
            "config_runtime": np.array(runtimes, np.int64)}


def rows_of(runtimes: tuple[int, ...] | list[int]) -> list[dict[str, Any]]:
    return [{**r, "npz_row": r["config_index"]} for r in config_rows(list(runtimes))]


def assert_valid(root: Path) -> None:
    """No errors and no dataset-level finding (the tiny arrays draw value warnings)."""
    report = validate_path(root)
    bad = [f for f in report.findings if f.severity == "error" or f.check.startswith("dataset.")]
    assert not bad, [f"{f.check} {f.location()}: {f.message}" for f in bad]


def part_bytes(root: Path, name: str) -> dict[str, bytes]:
    info = Dataset.open(root).table_info(name)
    return {p.file: (root / p.file).read_bytes() for p in info.parts}


def test_commit_appends_one_part_and_leaves_the_others_untouched(tmp_path: Path,
                                                                 arrays) -> None:
    root = tmp_path / "ds"
    ds = Dataset.open(root, create=True)
    commit_graph(ds, "a.000000000001", arrays)
    commit_graph(ds, "b.000000000002", arrays)
    before = part_bytes(root, "configs")
    commit_graph(ds, "c.000000000003", arrays)
    after = part_bytes(root, "configs")
    assert len(after) == 3 and set(before) < set(after)
    assert all(after[rel] == data for rel, data in before.items())
    info = ds.table_info("configs")
    assert [(p.lo, p.hi) for p in info.parts][-1] == ("c.000000000003", "c.000000000003")
    assert ds.configs().height == 6 and ds.count_rows("configs") == 6
    assert ds.configs_of("b.000000000002")["runtime_min_ns"].to_list() == [10, 20]
    assert_consistent(root)
    assert_valid(root)


def test_recommit_rewrites_only_the_part_holding_the_graph(tmp_path: Path, arrays) -> None:
    root = tmp_path / "ds"
    ds = Dataset.open(root, create=True)
    with ds.transaction() as tx:  # one part holding two graphs
        for gid in ("a.000000000001", "b.000000000002"):
            tx.put_graph(graph_row(gid, arrays), with_configs(arrays, 2, (10, 20)))
            tx.put_configs(gid, rows_of([10, 20]))
    commit_graph(ds, "c.000000000003", arrays)
    first, second = ds.table_info("configs").parts
    untouched = (root / second.file).read_bytes()
    commit_graph(ds, "a.000000000001", arrays, runtimes=(7,))
    parts = ds.table_info("configs").parts
    assert not (root / first.file).exists()  # rewritten without graph a
    assert (root / second.file).read_bytes() == untouched
    assert [p.rows for p in parts] == [2, 2, 1]  # b (rewritten), c, the new a
    configs = ds.configs().sort("graph_id", "config_index")
    assert configs.select("graph_id", "runtime_min_ns").rows() == [
        ("a.000000000001", 7), ("b.000000000002", 10), ("b.000000000002", 20),
        ("c.000000000003", 10), ("c.000000000003", 20)]
    assert ds.graphs().height == 3
    assert_consistent(root)
    assert_valid(root)


def test_small_parts_are_merged_and_rows_kept(tmp_path: Path, arrays,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "COMPACT_AT", 4)
    monkeypatch.setattr(tables.compact, "__defaults__", (tables.SMALL_PART_BYTES, 4))
    root = tmp_path / "ds"
    ds = Dataset.open(root, create=True)
    gids = [f"g{i:02d}.{i:012d}" for i in range(9)]
    for gid in gids:
        commit_graph(ds, gid, arrays)
    info = ds.table_info("configs")
    assert len(info.parts) < len(gids)
    assert ds.configs()["graph_id"].unique().sort().to_list() == gids
    groups = dict(ds.iter_config_groups())
    assert sorted(groups) == gids
    assert all(g["config_index"].to_list() == [0, 1] for g in groups.values())
    assert_consistent(root)
    assert_valid(root)


def test_a_column_added_to_the_schema_reads_as_null_from_old_parts(tmp_path: Path, arrays,
                                                                   monkeypatch) -> None:
    from tpugraphs_tools.store import schema

    root = tmp_path / "ds"
    ds = Dataset.open(root, create=True)
    commit_graph(ds, "a.000000000001", arrays)
    real = schema.load_schema
    grown: dict[str, Any] = json.loads(json.dumps(real("configs")))
    grown["properties"]["new_label"] = {"type": ["number", "null"], "x-arrow": "double"}
    monkeypatch.setattr(schema, "load_schema",
                        lambda name: grown if name == "configs" else real(name))
    ds = Dataset.open(root)
    frame = ds.configs()
    assert frame["new_label"].to_list() == [None, None]
    with ds.transaction() as tx:  # a new part with the column, beside the old one
        tx.put_configs("b.000000000002", [{**r, "new_label": 0.5}
                                          for r in rows_of([30])])
    assert ds.configs().sort("graph_id")["new_label"].to_list() == [None, None, 0.5]


def test_format_1_dataset_opens_validates_and_upgrades_on_commit(tmp_path: Path) -> None:
    root = tmp_path / "v1"
    shutil.copytree(V1, root)
    assert json.loads((root / MANIFEST).read_text())["format_version"] == 1
    report = validate_path(root)
    # written by an older tgt; its protos' source file names were since made portable (relative,
    # as tgt stores them now), so a user's clone holds no path of the machine that wrote it
    assert report.ok() and not report.findings, [f.message for f in report.findings]
    ds = Dataset.open(root)
    graphs, configs = ds.graphs(), ds.configs()
    assert graphs.height == 3 and configs.height == ds.manifest["tables"]["configs"]["rows"]
    gid = graphs["graph_id"][0]
    assert ds.configs_of(gid).height == configs.filter(pl.col("graph_id") == gid).height
    assert ds.table("partitions").height == 3
    assert set(ds.load_arrays(gid)) >= {"node_feat", "edge_index"}
    # first commit: the old file is kept as the first part, nothing is rewritten
    before = (root / "configs.parquet").read_bytes()
    row = ds.graph_row(gid)
    with ds.transaction() as tx:
        tx.set_graph_field(gid, split="train")
    assert (root / "configs.parquet").read_bytes() == before
    manifest = assert_consistent(root)
    assert manifest["format_version"] == 2
    assert manifest["tables"]["configs"]["parts"][0]["file"] == "configs.parquet"
    assert not (root / "graphs.parquet").exists()  # rewritten: it held the changed row
    again = Dataset.open(root)
    assert again.graph_row(gid)["split"] == "train"
    assert {k: v for k, v in again.graph_row(gid).items() if k != "split"} == \
        {k: v for k, v in row.items() if k != "split"}
    assert again.configs().sort("graph_id", "config_index").equals(
        configs.sort("graph_id", "config_index"))
    assert_valid(root)


def test_conform_to_some_columns_equals_conforming_all_then_selecting() -> None:
    """Readers that want a few columns conform just those (no null buffers for the others):
    same types, values, nulls for an absent column, and order as the whole schema selected."""
    import pyarrow as pa

    stored = pa.table({"relative_to_default": pa.array([1.5, None], pa.float32()),
                       "graph_id": ["a", "b"], "status": ["ok", "noop"]})
    wanted = ["status", "relative_ci_low", "graph_id", "relative_to_default"]
    some = tables.conform(stored, "configs", wanted)
    assert some.equals(tables.conform(stored, "configs").select(wanted))
    assert some.column_names == wanted
    assert some.schema.field("relative_to_default").type == pa.float64()
    assert some.column("relative_ci_low").null_count == 2
