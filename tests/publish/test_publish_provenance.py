"""tgt export → tgt import keeps what the npz keys cannot carry; other trees fall back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tpugraphs_tools.baseline.synthetic import tile_graph
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.publish import export_tpugraphs, import_tpugraphs
from tpugraphs_tools.publish.tree.provenance import PROVENANCE
from tpugraphs_tools.store import Dataset


@pytest.fixture(scope="module")
def exported(source_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("prov") / "tree"
    export_tpugraphs(source_dataset, out, seed=0)
    return out


def _imported(tree: Path, out: Path, **kwargs) -> Dataset:
    return Dataset.open(import_tpugraphs(tree, out, **kwargs).out)


def test_every_file_has_one_default_row_from_the_export(exported: Path, tmp_path: Path):
    ds = _imported(exported / "npz", tmp_path / "d")  # provenance found one level up
    configs = ds.configs()
    for row in ds.graphs().iter_rows(named=True):
        rows = configs.filter(pl.col("graph_id") == row["graph_id"])
        default = rows.filter(pl.col("is_default"))
        assert default.height == 1, row["source_path"]
        assert default["relative_to_default"][0] == 1.0
        assert (row["backend"], row["device_kind"]) == ("cpu", "cpu")
    assert {"platform": "cpu", "device_kind": "cpu"} in ds.manifest["devices"]
    tile = ds.graphs().filter(pl.col("collection") == "tile")
    assert tile.height and set(tile["config_space"]) == {"tile"}


def test_backend_option_wins_and_edited_files_fall_back(exported: Path, tmp_path: Path):
    tree = tmp_path / "tree"
    shutil.copytree(exported, tree)
    edited = sorted(tree.rglob("npz/layout/*/*/*/*.npz"))[0]
    with np.load(edited) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["config_runtime"] = arrays["config_runtime"] + 1
    np.savez(edited, **arrays)
    ds = _imported(tree, tmp_path / "d")
    rel = edited.relative_to(tree).as_posix()
    rows = {r["source_path"]: r for r in ds.graphs().to_dicts()}
    changed = rows[rel]
    assert changed["backend"] == "tpu" and changed["program"] == edited.stem
    assert all(r["backend"] == "cpu" for p, r in rows.items() if p != rel)
    forced = _imported(tree, tmp_path / "f", backend="gpu")
    assert set(forced.graphs()["backend"]) == {"gpu"}


def test_plain_tree_defaults_and_tile_default_row(tmp_path: Path):
    arrays = tile_graph(3, 12, 5)
    arrays["config_feat"][2] = 0.0  # tgt's encoding of the compiler's default tile config
    path = tmp_path / "tree" / "npz" / "tile" / "xla" / "train" / "k.npz"
    path.parent.mkdir(parents=True)
    np.savez(path, **arrays)
    ds = _imported(tmp_path / "tree", tmp_path / "d")
    [row] = ds.graphs().to_dicts()
    assert (row["backend"], row["program"]) == ("tpu", "k")
    configs = ds.configs().sort("config_index")
    assert configs["is_default"].to_list() == [False, False, True, False, False]


def test_a_broken_provenance_file_is_named(exported: Path, tmp_path: Path):
    tree = tmp_path / "tree"
    shutil.copytree(exported, tree)
    (tree / PROVENANCE).write_text(json.dumps({"format": "something else"}))
    with pytest.raises(DatasetError, match=PROVENANCE):
        import_tpugraphs(tree, tmp_path / "d")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize(("key", "value"), [("default_row", "0"), ("backend", 3),
                                            ("arrays_sha256", None)])
def test_a_mistyped_provenance_entry_is_named(exported: Path, tmp_path: Path, key: str,
                                              value: object):
    tree = tmp_path / "tree"
    shutil.copytree(exported, tree)
    body = json.loads((tree / PROVENANCE).read_text())
    rel = sorted(body["files"])[0]
    body["files"][rel][key] = value
    (tree / PROVENANCE).write_text(json.dumps(body))
    with pytest.raises(DatasetError, match=rf"{PROVENANCE}: files\['{rel}'\]\.{key}"):
        import_tpugraphs(tree, tmp_path / "d")
    assert not (tmp_path / "d").exists()
