"""The format records: the reference table, the folder scheme both ways, docs/format.md."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from tpugraphs_tools.format import (
    KINDS,
    LAYOUT,
    TILE,
    Kind,
    collection_of,
    detect_kind,
    official_keys_table,
    parse_tree_path,
    tree_hints,
    tree_path,
)

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "format.md"


# The TpuGraphs reference tables (README.md there says where each fact comes from).
NPZ_KEYS = Path(__file__).resolve().parent / "data" / "reference" / "tpugraphs_npz_keys.csv"


def _dims_text(dims: tuple[str | int, ...]) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def test_official_arrays_match_the_reference_table():
    with NPZ_KEYS.open() as f:
        rows = list(csv.DictReader(f))
    for kind in KINDS:
        ref = {r["key"]: (r["dtype"], r["shape"].replace(" ", "")) for r in rows
               if r["collection"] == kind}
        ours = {a.key: (a.dtype, _dims_text(a.dims).replace(" ", ""))
                for a in collection_of(kind).official()}
        assert ours == ref, kind


def test_written_order_and_config_keys_are_the_published_ones():
    table = official_keys_table()
    assert list(table["layout"]) == ["node_feat", "node_opcode", "edge_index", "node_config_ids",
                                     "node_config_feat", "config_runtime", "node_splits"]
    assert table["layout"]["node_splits"] == ("int64", (1, None))
    assert list(table["tile"]) == ["node_feat", "node_opcode", "edge_index", "config_feat",
                                   "config_runtime", "config_runtime_normalizers"]
    assert LAYOUT.config_keys == ("node_config_feat", "config_runtime")
    assert TILE.config_keys == ("config_feat", "config_runtime", "config_runtime_normalizers")


@pytest.mark.parametrize(("kind", "source", "search"), [("layout", "xla", "default"),
                                                        ("layout", "nlp", "random"),
                                                        ("tile", "xla", None)])
@pytest.mark.parametrize("split", ["train", "valid", "test"])
def test_tree_path_and_parse_are_inverse(kind: str, source: str, search: str | None,
                                         split: str):
    rel = tree_path(kind, source, search, split, "model.v1")
    entry = parse_tree_path("downloads/npz_all/" + rel)
    assert entry is not None
    assert (entry.collection, entry.source, entry.search, entry.split, entry.stem) == \
        (kind, source, search, split, "model.v1")
    assert entry.group == "/".join(p for p in (kind, source, search) if p)


@pytest.mark.parametrize("rel", ["npz/layout/xla/train/a.npz", "npz/tile/xla/dev/a.npz",
                                 "npz/layout/xla/default/train/a.txt", "a.npz",
                                 "npz/tile/xla/default/train/a.npz"])
def test_parse_refuses_paths_off_the_scheme(rel: str):
    assert parse_tree_path(rel) is None


def test_hints_fall_back_to_the_nearest_folders():
    hints = tree_hints(("data", "tile", "odd", "deeper", "valid", "k.npz"))
    assert (hints.collection, hints.split, hints.group) == (Kind.TILE, "valid", "tile/odd/deeper")
    assert tree_hints(("x", "train", "k.npz")).collection is None
    official = tree_hints(("npz", "layout", "xla", "random", "test", "m.npz"))
    assert (official.collection, official.split, official.group) == \
        (Kind.LAYOUT, "test", "layout/xla/random")


def test_records_answer_what_callers_used_to_compare_strings_for():
    assert LAYOUT.per_node_configs and not TILE.per_node_configs
    assert LAYOUT.has_node_configs and not TILE.has_node_configs
    assert (LAYOUT.config_feat_key, TILE.config_feat_key) == ("node_config_feat", "config_feat")
    assert detect_kind({"node_feat", "node_config_feat"}) == Kind.LAYOUT
    assert detect_kind({"config_runtime_normalizers"}) == Kind.TILE
    assert detect_kind({"node_feat"}) is None
    with pytest.raises(ValueError, match="collection 'fusion'"):
        collection_of("fusion")


def test_empty_configs_have_every_config_key_with_zero_rows():
    layout = LAYOUT.empty_configs(5)
    assert {k: (a.dtype, a.shape) for k, a in layout.items()} == {
        "node_config_feat": (np.float32, (0, 5, 18)), "config_runtime": (np.int64, (0,))}
    tile = TILE.empty_configs()
    assert [(k, a.shape) for k, a in tile.items()] == [
        ("config_feat", (0, 24)), ("config_runtime", (0,)), ("config_runtime_normalizers", (0,))]


def _doc_tables() -> dict[str, dict[str, tuple[str, str]]]:
    """docs/format.md's layout and tile npz tables: key → (dtype, shape)."""
    text = DOCS.read_text()
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for kind, heading in (("layout", "Layout collection (`collection = layout`)"),
                          ("tile", "Tile collection (`collection = tile`")):
        block = text[text.index(heading):]
        block = block[block.index("| key |"):]
        rows: dict[str, tuple[str, str]] = {}
        for line in block.splitlines()[2:]:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip("|").split("|")]
            for key in re.findall(r"`([a-z_]+)`", cells[0]):
                rows[key] = (cells[1], cells[2])
        out[kind] = rows
    return out


def test_docs_npz_tables_match_the_format_records():
    docs = _doc_tables()
    for kind in KINDS:
        spec = collection_of(kind)
        rows = docs[kind]
        assert set(spec.official_keys) <= set(rows), kind
        for key, (dtype, shape) in rows.items():
            array = spec.specs()[key]
            if dtype == "as above":
                array_layout = LAYOUT.specs()[key]
                assert (array.dtype, array.dims) == (array_layout.dtype, array_layout.dims)
                continue
            assert dtype == array.dtype, (kind, key)
            assert shape == _dims_text(array.dims), (kind, key)
