"""The dataset store: round trips, idempotent re-commits, crash safety and the manifest."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tpugraphs_tools
from tpugraphs_tools.errors import DatasetError, FormatVersionError
from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import parse_hlo_text
from tpugraphs_tools.store import MANIFEST, Dataset, atomic, make_graph_id

TEMP_GLOB = f"*{atomic.TEMP_MARK}*"


@pytest.fixture
def arrays(tiny_hlo: str) -> dict[str, np.ndarray]:
    graph = featurize(parse_hlo_text(tiny_hlo))
    nc = len(graph.node_config_ids)
    return {**graph.arrays(),
            "node_config_feat": np.arange(2 * nc * 18, dtype=np.float32).reshape(2, nc, 18),
            "config_runtime": np.array([1200, 900], dtype=np.int64)}


def graph_row(graph_id: str, arrays: dict[str, np.ndarray], **extra: Any) -> dict[str, Any]:
    return {
        "graph_id": graph_id, "collection": "layout", "program": "tiny",
        "program_args": "{}", "source": "hlo-text", "hlo_stage": "unoptimized",
        "fingerprint": hashlib.sha256(graph_id.encode()).hexdigest(), "backend": "cpu",
        "num_nodes": int(arrays["node_feat"].shape[0]),
        "num_edges": int(arrays["edge_index"].shape[0]),
        "num_configurable": int(arrays["node_config_ids"].shape[0]),
        "num_configs": 2, **extra,
    }


def config_rows(runtimes: list[int]) -> list[dict[str, Any]]:
    return [{"config_index": i, "strategy": "random", "seed": 7, "is_default": i == 0,
             "status": "ok", "config": json.dumps({"i": i}), "runtime_min_ns": r}
            for i, r in enumerate(runtimes)]


def files_on_disk(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def assert_consistent(root: Path) -> dict[str, Any]:
    """Manifest lists exactly the files on disk with their sha256/bytes; no journal/temps."""
    manifest = json.loads((root / MANIFEST).read_text())
    assert files_on_disk(root) - {MANIFEST} == set(manifest["files"])
    for rel, info in manifest["files"].items():
        data = (root / rel).read_bytes()
        assert info == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}, rel
    assert not (root / atomic.JOURNAL).exists()
    assert not list(root.rglob(TEMP_GLOB))
    return manifest


def make_dataset(root: Path, arrays: dict[str, np.ndarray]) -> Dataset:
    ds = Dataset.open(root, create=True)
    with ds.transaction() as tx:
        tx.put_graph(graph_row("a.000000000001", arrays), arrays, hlo=b"HloModule a")
        tx.put_configs("a.000000000001", config_rows([1200, 900]))
    return ds


def test_round_trip_graph_configs_and_arrays(tmp_path: Path, arrays) -> None:
    root = tmp_path / "ds"
    make_dataset(root, arrays)
    ds = Dataset.open(root)
    row = ds.graph_row("a.000000000001")
    assert row["npz_file"] == "graphs/a.000000000001.npz"
    assert row["hlo_file"] == "graphs/a.000000000001.hlo.pb"
    assert (root / row["hlo_file"]).read_bytes() == b"HloModule a"
    assert row["num_nodes"] == 10 and row["program"] == "tiny" and row["created_at"]
    configs = ds.configs().sort("config_index").to_dicts()
    assert [(c["graph_id"], c["config_index"], c["runtime_min_ns"], c["is_default"])
            for c in configs] == [("a.000000000001", 0, 1200, True),
                                  ("a.000000000001", 1, 900, False)]
    loaded = ds.load_arrays("a.000000000001")
    assert loaded.keys() == arrays.keys()
    for key, value in arrays.items():
        assert loaded[key].dtype == value.dtype and np.array_equal(loaded[key], value), key
    only = ds.load_arrays("a.000000000001", keys=("edge_index",))
    assert list(only) == ["edge_index"]
    [(row2, arrays2)] = list(ds.iter_graphs())
    assert row2["graph_id"] == "a.000000000001" and np.array_equal(arrays2["node_feat"],
                                                                   arrays["node_feat"])
    assert_consistent(root)


def test_recommit_replaces_rows_instead_of_appending(tmp_path: Path, arrays) -> None:
    root = tmp_path / "ds"
    ds = make_dataset(root, arrays)
    with ds.transaction() as tx:
        tx.put_graph(graph_row("b.000000000002", arrays), arrays)
        tx.put_configs("b.000000000002", config_rows([5, 6, 7]))
    for _ in range(2):  # the same commit twice: same end state
        with ds.transaction() as tx:
            tx.put_graph(graph_row("a.000000000001", arrays, num_configs=1), arrays,
                         hlo=b"HloModule a2")
            tx.put_configs("a.000000000001", config_rows([800]))
    ds = Dataset.open(root)
    graphs = ds.graphs().sort("graph_id")
    assert graphs["graph_id"].to_list() == ["a.000000000001", "b.000000000002"]
    assert graphs["num_configs"].to_list() == [1, 2]
    configs = ds.configs().sort(["graph_id", "config_index"])
    assert list(zip(configs["graph_id"], configs["runtime_min_ns"], strict=True)) == [
        ("a.000000000001", 800), ("b.000000000002", 5), ("b.000000000002", 6),
        ("b.000000000002", 7)]
    manifest = assert_consistent(root)
    assert manifest["tables"]["graphs"]["rows"] == 2
    assert manifest["tables"]["configs"]["rows"] == 4
    assert (root / "graphs/a.000000000001.hlo.pb").read_bytes() == b"HloModule a2"


def crash_on_replace_call(monkeypatch: pytest.MonkeyPatch, failing_call: int) -> list[str]:
    """Make the ``failing_call``-th os.replace (1-based) raise, as if the process died there."""
    real = os.replace
    calls: list[str] = []

    def replace(src: Any, dst: Any) -> None:
        calls.append(Path(dst).name)
        if len(calls) == failing_call:
            raise OSError("simulated crash")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return calls


def second_commit(ds: Dataset, arrays: dict[str, np.ndarray]) -> None:
    with ds.transaction() as tx:
        tx.put_graph(graph_row("b.000000000002", arrays), arrays, hlo=b"HloModule b")
        tx.put_configs("b.000000000002", config_rows([30, 20]))
        tx.put_configs("a.000000000001", config_rows([1100]))


@pytest.mark.parametrize("failing_call", [2, 4])
def test_crash_after_journal_is_rolled_forward_by_open(tmp_path: Path, arrays, monkeypatch,
                                                       failing_call: int) -> None:
    root = tmp_path / "ds"
    ds = make_dataset(root, arrays)
    calls = crash_on_replace_call(monkeypatch, failing_call)
    with pytest.raises(OSError, match="simulated crash"):
        second_commit(ds, arrays)
    assert calls[0] == atomic.JOURNAL  # the journal was the first rename and it landed
    assert (root / atomic.JOURNAL).exists()
    assert list(root.rglob(TEMP_GLOB))  # staged files not yet renamed
    monkeypatch.undo()

    ds = Dataset.open(root)  # rolls the journal forward
    manifest = assert_consistent(root)
    assert ds.graphs()["graph_id"].sort().to_list() == ["a.000000000001", "b.000000000002"]
    assert manifest["tables"]["configs"]["rows"] == 3
    runtimes = ds.configs().sort(["graph_id", "config_index"])["runtime_min_ns"].to_list()
    assert runtimes == [1100, 30, 20]
    assert np.array_equal(ds.load_arrays("b.000000000002")["node_feat"], arrays["node_feat"])
    assert (root / "graphs/b.000000000002.hlo.pb").read_bytes() == b"HloModule b"


def test_crash_before_journal_keeps_old_dataset_and_temps_are_swept(tmp_path: Path, arrays,
                                                                    monkeypatch) -> None:
    root = tmp_path / "ds"
    ds = make_dataset(root, arrays)
    before = {rel: (root / rel).read_bytes() for rel in files_on_disk(root)}
    crash_on_replace_call(monkeypatch, 1)  # the journal's own rename fails
    with pytest.raises(OSError, match="simulated crash"):
        second_commit(ds, arrays)
    monkeypatch.undo()
    assert not (root / atomic.JOURNAL).exists()
    leftovers = list(root.rglob(TEMP_GLOB))
    assert leftovers  # staged files of the failed commit
    # the old dataset, byte for byte, is what a reader sees
    assert {rel: (root / rel).read_bytes() for rel in files_on_disk(root)
            if atomic.TEMP_MARK not in rel} == before
    reopened = Dataset.open(root)
    assert reopened.graphs()["graph_id"].to_list() == ["a.000000000001"]
    assert reopened.configs()["runtime_min_ns"].to_list() == [1200, 900]
    # the next commit sweeps the leftovers and lands its own changes
    second_commit(reopened, arrays)
    assert not any(p.exists() for p in leftovers)
    assert_consistent(root)
    assert Dataset.open(root).graphs().height == 2


def test_recover_sweeps_stray_temp_files(tmp_path: Path, arrays) -> None:
    root = tmp_path / "ds"
    make_dataset(root, arrays)
    stray = root / "graphs" / f"x.npz{atomic.TEMP_MARK}deadbeef"
    stray.write_bytes(b"partial")
    assert atomic.recover(root) is True
    assert not stray.exists()
    assert atomic.recover(root) is False
    assert_consistent(root)


def test_manifest_lists_every_file_with_checksums_and_versions(tmp_path: Path, arrays) -> None:
    import jax
    import jaxlib

    root = tmp_path / "ds"
    make_dataset(root, arrays)
    manifest = assert_consistent(root)
    assert set(manifest["files"]) == {"tables/graphs/part-00000.parquet",
                                      "tables/configs/part-00000.parquet",
                                      "graphs/a.000000000001.npz",
                                      "graphs/a.000000000001.hlo.pb"}
    assert manifest["format"] == "tgt-dataset" and manifest["format_version"] == 2
    assert manifest["jax_version"] == jax.__version__
    assert manifest["jaxlib_version"] == jaxlib.__version__
    assert manifest["tgt_version"] == tpugraphs_tools.__version__
    assert manifest["python_version"] == sys.version.split()[0]
    gid = "a.000000000001"
    assert manifest["tables"] == {
        "graphs": {"key": "graph_id", "rows": 1, "next_part": 1, "parts": [
            {"file": "tables/graphs/part-00000.parquet", "rows": 1, "min": gid, "max": gid}]},
        "configs": {"key": "graph_id", "rows": 2, "next_part": 1, "parts": [
            {"file": "tables/configs/part-00000.parquet", "rows": 2, "min": gid, "max": gid}]}}
    for npz_path in root.glob("graphs/*.npz"):
        with np.load(npz_path, allow_pickle=False) as npz:
            loaded = {k: npz[k] for k in npz.files}
        assert set(loaded) == set(arrays)
        assert all(v.dtype != object for v in loaded.values())


def test_open_errors(tmp_path: Path, arrays) -> None:
    with pytest.raises(DatasetError, match="not a tgt dataset"):
        Dataset.open(tmp_path / "nothing")
    root = tmp_path / "ds"
    ds = make_dataset(root, arrays)
    with pytest.raises(DatasetError, match="no graph 'zzz'"):
        ds.graph_row("zzz")
    npz = root / "graphs/a.000000000001.npz"
    npz.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(DatasetError, match=re.escape("a.000000000001.npz")):
        ds.load_arrays("a.000000000001")
    manifest = json.loads((root / MANIFEST).read_text())
    manifest["format_version"] = 99
    (root / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(FormatVersionError, match="99"):
        Dataset.open(root)


def test_graph_id_is_program_slug_and_fingerprint_prefix() -> None:
    fp = "0123456789abcdef" * 4
    assert make_graph_id("resnet50", fp) == "resnet50.0123456789ab"
    assert make_graph_id("my prog/v2", fp) == "my-prog-v2.0123456789ab"
    assert make_graph_id("///", fp) == "graph.0123456789ab"


@pytest.mark.parametrize("failing_call", [None, 1, 2])
def test_a_settled_work_file_goes_with_its_commit(tmp_path: Path, arrays, monkeypatch,
                                                  failing_call: int | None) -> None:
    """A work journal settled by a commit is removed in the commit's own journaled step: a
    crash before the commit journal keeps both the old dataset and the work file; a crash
    after it is rolled forward by the next open, which removes the work file too."""
    root = tmp_path / "ds"
    ds = make_dataset(root, arrays)
    work = root / ".tgt-work" / "b.000000000002.jsonl"
    work.parent.mkdir()
    work.write_text('{"header": {}}\n')
    if failing_call is not None:
        crash_on_replace_call(monkeypatch, failing_call)
    try:
        with ds.transaction() as tx:
            tx.put_graph(graph_row("b.000000000002", arrays), arrays, hlo=b"HloModule b")
            tx.put_configs("b.000000000002", config_rows([30, 20]))
            tx.settle_with_commit(work)
    except OSError:
        assert failing_call is not None
    monkeypatch.undo()
    ds = Dataset.open(root)
    committed = "b.000000000002" in ds.graphs()["graph_id"].to_list()
    assert committed == (failing_call != 1)
    assert work.exists() == (not committed)
