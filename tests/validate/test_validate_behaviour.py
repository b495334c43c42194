"""Valid inputs pass clean; path kinds are detected; nothing is modified; chunked reading agrees
with whole reads; every check id is documented and exercised by a fault case."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import test_validate_dataset_faults as dataset_faults
import test_validate_npz_faults as npz_faults
from validate_helpers import TREE_LAYOUT, TREE_TILE, edit_npz, edit_table, set_cell

from tpugraphs_tools.validate import CHECKS, table_checks, validate_path
from tpugraphs_tools.validate import npz_reader as reader_mod
from tpugraphs_tools.validate.npz_reader import NpzReader
from tpugraphs_tools.validate.report import Report

DOCS = Path(__file__).resolve().parents[2] / "docs" / "validate.md"


def _digest_tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_valid_tgt_dataset_is_clean(tgt_ds: Path) -> None:
    report = validate_path(tgt_ds)
    assert report.kind == "tgt"
    assert report.findings == []
    assert report.ok(strict=True)
    assert report.files_checked == 5  # 2 tables + 3 npz


def test_valid_tree_is_clean(tree: Path) -> None:
    report = validate_path(tree)
    assert (report.kind, report.findings, report.files_checked) == ("tpugraphs", [], 3)


def test_tree_subdirectory_knows_its_collection_and_split(tree: Path) -> None:
    report = validate_path(tree / "npz/layout/xla/default/train")
    assert report.kind == "tpugraphs" and report.ok(strict=True)


def test_bare_directory_detects_collection_from_keys(tree: Path, tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(tree / TREE_LAYOUT, flat / "a.npz")
    shutil.copy(tree / TREE_TILE, flat / "b.npz")
    report = validate_path(flat)
    assert report.kind == "npz" and report.findings == []
    edit_npz(flat, "a.npz", lambda a: {k: a[k] for k in ("node_feat", "node_opcode")})
    report = validate_path(flat)
    assert report.checks() == {"dataset.collection_unknown"}
    assert report.findings[0].file == "a.npz"


def test_single_file(tree: Path) -> None:
    report = validate_path(tree / TREE_TILE)
    assert report.kind == "npz" and report.findings == []


def test_empty_directory_is_not_a_dataset(tmp_path: Path) -> None:
    assert validate_path(tmp_path).checks() == {"dataset.not_a_dataset"}


def test_official_split_overlap_by_stem(tree: Path) -> None:
    shutil.copy(tree / TREE_LAYOUT, tree / "npz/layout/xla/default/valid/model_a.npz")
    report = validate_path(tree)
    assert report.checks() == {"dataset.split_overlap"}
    assert "model_a" in report.findings[0].message


def test_official_test_split_may_hide_runtimes(tree: Path) -> None:
    dst = tree / "npz/tile/xla/test/kernel_z.npz"
    dst.parent.mkdir(parents=True)
    shutil.copy(tree / TREE_TILE, dst)
    edit_npz(tree, "npz/tile/xla/test/kernel_z.npz", lambda a: {
        **a, "config_runtime": np.zeros(3, np.int64),
        "config_runtime_normalizers": np.zeros(3, np.int64)})
    assert validate_path(tree).findings == []


def test_validation_never_modifies(tgt_ds: Path) -> None:
    (tgt_ds / ".tgt-commit.json").write_text('{"renames": [], "deletes": []}')
    (tgt_ds / "graphs.parquet.tgt-tmp-0badf00d").write_bytes(b"partial")
    before = _digest_tree(tgt_ds)
    report = validate_path(tgt_ds)
    assert report.checks() == {"dataset.interrupted_write"}
    assert _digest_tree(tgt_ds) == before


def test_max_errors_stops_early(tree: Path) -> None:
    for rel in (TREE_LAYOUT, TREE_TILE):
        edit_npz(tree, rel, lambda a: {**a, "config_runtime": -a["config_runtime"]})
    full = validate_path(tree)
    assert len(full.errors) == 2 and not full.truncated
    capped = validate_path(tree, max_errors=1)
    assert len(capped.errors) == 1 and capped.truncated


def test_faults_found_across_chunk_boundaries(tree: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    """With 1-row chunks every scan crosses boundaries; locations must stay exact."""
    monkeypatch.setattr(reader_mod, "CHUNK_BYTES", 1)

    def fault(a: dict) -> None:
        a["node_config_feat"] = a["node_config_feat"].copy()
        a["node_config_feat"][3, 1, 6:8] = [1, 1]
        a["node_config_feat"][2] = a["node_config_feat"][0]
        a["node_feat"] = a["node_feat"].copy()
        a["node_feat"][6, 0] = np.nan

    edit_npz(tree, TREE_LAYOUT, fault)
    found = {(f.check, f.index) for f in validate_path(tree).findings}
    assert found == {("values.layout_group", 3), ("values.duplicate_config_conflict", 0),
                     ("values.non_finite", 6)}


def test_chunked_read_equals_whole_read(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    arrays = {"a": rng.random((1001, 7, 3), dtype=np.float32), "b": np.arange(5)}
    for save in (np.savez, np.savez_compressed):
        path = tmp_path / f"{save.__name__}.npz"
        save(path, **arrays)
        with NpzReader(path) as r:
            member = r.members["a"]
            parts = list(r.chunks(member, chunk_bytes=1000))
            assert len(parts) > 10
            assert np.array_equal(np.concatenate([p for _, p in parts]), arrays["a"])
            assert [s for s, _ in parts] == list(range(0, 1001, 11))
            assert np.array_equal(r.read(r.members["b"]), arrays["b"])


def test_abandoned_chunk_iteration_stops_reader_thread(tmp_path: Path) -> None:
    np.savez(tmp_path / "x.npz", a=np.zeros((10000, 10), np.float32))
    with NpzReader(tmp_path / "x.npz") as r:
        gen = r.chunks(r.members["a"], chunk_bytes=400)
        next(gen)
        gen.close()
    import threading
    assert not [t for t in threading.enumerate() if t.name.startswith("npz-read-")]


def test_every_check_is_documented() -> None:
    text = DOCS.read_text()
    documented = set(re.findall(r"`((?:structure|graph|values|dataset)\.[a-z_]+)`", text))
    assert set(CHECKS) <= documented, sorted(set(CHECKS) - documented)
    assert documented <= set(CHECKS), sorted(documented - set(CHECKS))


def test_every_check_has_a_fault_case() -> None:
    exercised = {e.check for c in npz_faults.CASES for e in c.expect}
    exercised |= {c.check for c in dataset_faults.CASES}
    exercised |= {"dataset.collection_unknown", "dataset.not_a_dataset"}  # tested above
    assert set(CHECKS) - exercised == set()


def test_configs_part_is_checked_whole_but_held_as_checked_columns(tgt_ds: Path) -> None:
    """read_table checks every column of a part (a null in `strategy`, which no row rule
    reads, is still found) but returns only the columns asked for: validate's memory is one
    column plus those, not the whole table."""
    rel = "tables/configs/part-00000.parquet"
    edit_table(tgt_ds, "configs", lambda t: set_cell(t, "strategy", 1, None))
    report = Report(root="")
    df = table_checks.read_table(tgt_ds / rel, rel, "configs", report,
                                 columns=["graph_id", "npz_row", "no_such_column"])
    assert df is not None and df.columns == ["graph_id", "npz_row"]
    assert [(f.check, f.key, f.index) for f in report.findings] == [
        ("dataset.schema_null", "strategy", 1)]
    whole = table_checks.read_table(tgt_ds / rel, rel, "configs", Report(root=""))
    assert whole is not None and "strategy" in whole.columns and whole.height == df.height
