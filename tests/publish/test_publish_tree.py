"""Export to / import from the official TpuGraphs tree: exact keys, lossless round trip."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.publish import (
    KEYS,
    arrays_fingerprint,
    export_tpugraphs,
    import_tpugraphs,
    parse_tree_path,
)
from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

# The TpuGraphs reference tables (tests/format/data/reference/README.md says where from).
REFERENCE = (Path(__file__).resolve().parents[1] / "format" / "data" / "reference"
             / "tpugraphs_npz_keys.csv")


@pytest.fixture(scope="module")
def exported(source_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "tree"
    export_tpugraphs(source_dataset, out, seed=0)
    return out


def _load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def _files(tree: Path) -> dict[str, Path]:
    return {p.relative_to(tree).as_posix(): p for p in sorted(tree.rglob("*.npz"))}


def test_files_have_exactly_the_official_keys_dtypes_and_shapes(exported: Path):
    files = _files(exported)
    assert files
    for rel, path in files.items():
        entry = parse_tree_path(rel)
        assert entry is not None, rel
        arrays = _load(path)
        spec = KEYS[entry.collection]
        assert list(arrays) == list(spec), rel
        for key, (dtype, shape) in spec.items():
            assert arrays[key].dtype == np.dtype(dtype), (rel, key)
            assert arrays[key].ndim == len(shape), (rel, key)
            for got, want in zip(arrays[key].shape, shape, strict=True):
                assert want is None or got == want, (rel, key)
        n = arrays["node_feat"].shape[0]
        assert arrays["node_opcode"].shape == (n,)
        c = arrays["config_runtime"].shape[0]
        config_key = "node_config_feat" if entry.collection == "layout" else "config_feat"
        assert c > 0 and arrays[config_key].shape[0] == c


def test_official_spec_matches_the_reference_table():
    with REFERENCE.open() as f:
        rows = list(csv.DictReader(f))
    for collection in ("layout", "tile"):
        ref = {r["key"]: r["dtype"] for r in rows if r["collection"] == collection}
        assert {k: d for k, (d, _) in KEYS[collection].items()} == ref


def test_tree_layout_strategies_and_program_splits(exported: Path, source_dataset: Path):
    graphs = Dataset.open(source_dataset).graphs()
    program_of = dict(graphs.select(["graph_id", "program"]).iter_rows())
    entries = [parse_tree_path(rel) for rel in _files(exported)]
    folders = {(e.collection, e.source, e.search) for e in entries}
    assert folders == {("layout", "xla", "default"), ("layout", "xla", "random"),
                       ("tile", "xla", None)}
    splits_of: dict[str, set[str]] = {}
    for e in entries:
        splits_of.setdefault(program_of[e.stem], set()).add(e.split)
    assert all(len(s) == 1 for s in splits_of.values()), splits_of
    assert {s for v in splits_of.values() for s in v} == {"train", "valid", "test"}
    # convnet's configs of each strategy land in that strategy's folder, in npz_row order.
    convnet = graphs.filter(pl.col("program") == "convnet")["graph_id"][0]
    source = Dataset.open(source_dataset)
    stored = source.load_arrays(convnet)
    configs = source.configs().filter((pl.col("graph_id") == convnet)
                                      & (pl.col("status") == "ok"))
    for e in entries:
        if e.stem == convnet:
            rows = configs.filter(pl.col("strategy") == e.search).sort("npz_row")["npz_row"]
            got = _load(exported / e.rel)
            assert np.array_equal(got["config_runtime"], stored["config_runtime"][rows])
            assert np.array_equal(got["node_config_feat"], stored["node_config_feat"][rows])


def test_export_import_export_is_byte_identical(exported: Path, tmp_path: Path):
    imported = tmp_path / "imported"
    result = import_tpugraphs(exported, imported)
    assert result.graphs == len(_files(exported)) and not result.warnings
    again = tmp_path / "again"
    export_tpugraphs(imported, again, seed=12345)  # stored splits win over the seed
    first, second = _files(exported), _files(again)
    assert list(first) == list(second)
    for rel in first:
        a, b = _load(first[rel]), _load(second[rel])
        assert list(a) == list(b)
        for key in a:
            assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape
            assert a[key].tobytes() == b[key].tobytes(), (rel, key)


def test_import_rows_say_where_each_file_came_from(exported: Path, tmp_path: Path,
                                                   source_dataset: Path):
    imported = Dataset.open(import_tpugraphs(exported, tmp_path / "imported").out)
    graphs, configs = imported.graphs(), imported.configs()
    original = {r["graph_id"]: r for r in Dataset.open(source_dataset).graphs().to_dicts()}
    for row in graphs.iter_rows(named=True):
        entry = parse_tree_path(row["source_path"])
        arrays = imported.load_arrays(row["graph_id"])
        first = original[entry.stem]  # provenance of a tgt export: the exported graph's row
        assert json.loads(row["program_args"])["tgt_graph_id"] == entry.stem
        for key in ("program", "backend", "device_kind", "config_space"):
            assert row[key] == first[key], key
        assert row["source"] == "tpugraphs"
        assert row["split"] == entry.split and row["collection"] == entry.collection
        assert row["fingerprint"] == arrays_fingerprint(arrays)
        rows = configs.filter(pl.col("graph_id") == row["graph_id"]).sort("config_index")
        assert rows["status"].unique().to_list() == ["ok"]
        assert rows["npz_row"].to_list() == list(range(row["num_configs"]))
        assert rows["runtime_min_ns"].to_list() == arrays["config_runtime"].tolist()
        assert set(rows["strategy"]) == {entry.search or "default"}
        if entry.collection == "layout":
            default = rows.filter(pl.col("is_default"))
            assert default.height == 1 and default["relative_to_default"][0] == 1.0
        else:
            assert np.allclose(rows["relative_to_default"].to_numpy(),
                               arrays["config_runtime"] / arrays["config_runtime_normalizers"])
    report = validate_path(imported.root)
    assert not report.errors, [f.message for f in report.errors]


def test_exported_tree_passes_tgt_validate(exported: Path):
    report = validate_path(exported)
    assert report.kind == "tpugraphs"
    assert not report.errors, [f.message for f in report.errors]


def _layout_arrays(c: int = 3, nc: int = 2, n: int = 5) -> dict[str, np.ndarray]:
    feat = np.full((c, nc, 18), -1, np.float32)
    feat[1:, :, :2] = (1, 0)
    return {"node_feat": np.zeros((n, 140), np.float32),
            "node_opcode": np.arange(1, n + 1, dtype=np.uint8),
            "edge_index": np.array([[1, 0], [2, 1], [4, 3]], np.int64),
            "node_config_ids": np.array([1, 2], np.int64)[:nc],
            "node_config_feat": feat,
            "config_runtime": np.arange(100, 100 + c, dtype=np.int64),
            "node_splits": np.array([0, n], np.int64)}


def _write(root: Path, rel: str, arrays: dict[str, np.ndarray]) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return path


def test_import_reads_the_real_download_layout(tmp_path: Path):
    tree = tmp_path / "download"
    arrays = _layout_arrays()
    stored = {**arrays, "node_splits": arrays["node_splits"][None, :], "extra": np.ones(2)}
    _write(tree, "npz_all/npz/layout/nlp/random/valid/bert_x.npz", stored)
    result = import_tpugraphs(tree, tmp_path / "data")
    assert result.graphs == 1 and "extra" in result.warnings[0]
    ds = Dataset.open(tmp_path / "data")
    row = ds.graphs().row(0, named=True)
    assert (row["program"], row["split"]) == ("bert_x", "valid")
    assert json.loads(row["program_args"]) == {
        "tree_path": "npz_all/npz/layout/nlp/random/valid/bert_x.npz"}
    assert ds.load_arrays(row["graph_id"])["node_splits"].shape == (1, 2)  # stored unchanged
    out = tmp_path / "tree"
    export_tpugraphs(tmp_path / "data", out, seed=99)
    files = _files(out)
    assert list(files) == ["npz/layout/nlp/random/valid/bert_x.npz"]
    got = _load(files["npz/layout/nlp/random/valid/bert_x.npz"])
    assert list(got) == list(KEYS["layout"]) and got["node_splits"].shape == (1, 2)
    for key in arrays:
        assert np.array_equal(got[key].reshape(arrays[key].shape), arrays[key])


@pytest.mark.parametrize(("rel", "arrays", "message"), [
    ("stray/graph.npz", None, "stray/graph.npz: not at an official tree position"),
    ("npz/layout/xla/default/train/g.npz", "missing", "g.npz: missing key 'node_splits'"),
    ("npz/layout/xla/default/train/g.npz", "object", "key 'config_runtime' cannot be read"),
    ("npz/layout/xla/default/train/g.npz", "garbage", "g.npz: not a readable npz"),
    ("npz/layout/xla/default/train/g.npz", "counts", "'node_config_feat' has 2 configurable"),
])
def test_import_rejects_bad_input_and_writes_nothing(tmp_path: Path, rel: str,
                                                     arrays: str | None, message: str):
    tree = tmp_path / "tree"
    _write(tree, "npz/layout/xla/default/train/ok.npz", _layout_arrays())
    good = _layout_arrays()
    if arrays == "garbage":
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(b"not a zip at all")
    else:
        if arrays == "missing":
            del good["node_splits"]
        elif arrays == "object":
            good["config_runtime"] = np.array([1, "x", None], dtype=object)
        elif arrays == "counts":
            good["node_config_ids"] = np.array([1], np.int64)
        _write(tree, rel, good)
    with pytest.raises(DatasetError, match=message.replace("(", r"\(")):
        import_tpugraphs(tree, tmp_path / "data")
    assert not (tmp_path / "data").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]  # no staging leftovers


def test_output_folders_are_never_overwritten_by_accident(source_dataset: Path, tmp_path: Path):
    out = tmp_path / "tree"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(DatasetError, match="not empty"):
        export_tpugraphs(source_dataset, out)
    assert (out / "keep.txt").read_text() == "mine"
    export_tpugraphs(source_dataset, out, overwrite=True)
    assert not (out / "keep.txt").exists() and _files(out)
    for inside in (source_dataset, source_dataset / "tree", source_dataset.parent):
        with pytest.raises(DatasetError, match="overlaps the input"):
            export_tpugraphs(source_dataset, inside, overwrite=True)
    assert (source_dataset / "manifest.json").exists()


def test_stored_split_column_is_respected(dataset_copy: Path, tmp_path: Path):
    ds = Dataset.open(dataset_copy)
    graph_ids = ds.graphs().filter(pl.col("program") == "mlp")["graph_id"].to_list()
    with ds.transaction() as tx:
        tx.set_graph_field(graph_ids[0], split="test")
    result = export_tpugraphs(dataset_copy, tmp_path / "tree", seed=5)
    assert {f.split for f in result.files if f.graph_id in graph_ids} == {"test"}


def test_cli_export_and_import(source_dataset: Path, tmp_path: Path):
    runner = CliRunner()
    tree, data = tmp_path / "tree", tmp_path / "data"
    res = runner.invoke(main, ["export", str(source_dataset), "--format", "tpugraphs",
                               "--out", str(tree), "--ratios", "0.6,0.2,0.2"])
    assert res.exit_code == 0, res.output
    assert "files" in res.output and _files(tree)
    res = runner.invoke(main, ["import", str(tree), "--out", str(data)])
    assert res.exit_code == 0, res.output
    assert Dataset.open(data).graphs().height == len(_files(tree))
    res = runner.invoke(main, ["import", str(tree), "--out", str(data)])
    assert res.exit_code == 1 and "not empty" in " ".join(res.output.split())
    res = runner.invoke(main, ["export", str(tmp_path / "missing"), "--out", str(tree)])
    assert res.exit_code == 1 and "not a tgt dataset" in " ".join(res.output.split())


def _without_times(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.drop("created_at") if "created_at" in frame.columns else frame


def test_parallel_import_equals_serial(exported: Path, tmp_path: Path):
    serial = Dataset.open(import_tpugraphs(exported, tmp_path / "serial", jobs=1).out)
    parallel = Dataset.open(import_tpugraphs(exported, tmp_path / "parallel", jobs=2,
                                             batch_bytes=1).out)  # one commit per file
    assert len(parallel.table_info("configs").parts) > 1
    assert _without_times(serial.graphs()).equals(_without_times(parallel.graphs()))
    assert serial.configs().equals(parallel.configs())
    for gid in serial.graphs()["graph_id"]:
        a, b = serial.load_arrays(gid), parallel.load_arrays(gid)
        assert list(a) == list(b) and all(np.array_equal(a[k], b[k]) for k in a)
    assert validate_path(tmp_path / "parallel").ok()
    assert len(serial.table_info("configs").parts) == 1  # 7 graphs in one part: pool runs
    for gid in serial.graphs()["graph_id"].to_list()[1:3]:  # faults in two graphs
        arrays = serial.load_arrays(gid)
        arrays["node_feat"][0, 0] = np.nan
        np.savez(serial.npz_path(gid), **arrays)
    serial_findings = validate_path(tmp_path / "serial").findings
    assert {f.check for f in serial_findings} >= {"values.non_finite",
                                                   "dataset.size_mismatch"}
    assert validate_path(tmp_path / "serial", jobs=2).findings == serial_findings


def test_parallel_import_error_names_the_file(tmp_path: Path):
    tree = tmp_path / "tree"
    for i in range(4):  # enough files for the pool to start
        _write(tree, f"npz/layout/xla/default/train/ok{i}.npz", _layout_arrays(n=5 + i))
    (tree / "npz/layout/xla/default/train/zz.npz").write_bytes(b"not a zip at all")
    with pytest.raises(DatasetError, match=r"zz\.npz: not a readable npz"):
        import_tpugraphs(tree, tmp_path / "data", jobs=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]
