"""The official TpuGraphs npz contract (keys, dtypes, shapes) and the tree's path scheme.

Facts from the reference tables (tpugraphs_npz_keys.csv): dtypes are what the tpu_graphs
extractors emit, not the README's int32s. Export writes exactly these keys; import reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tpugraphs_tools.errors import DatasetError

SPLITS = ("train", "valid", "test")
LAYOUT_SOURCES = ("xla", "nlp")
# key -> (dtype, shape with None for a free dim); order is the order files are written in.
LAYOUT_KEYS: dict[str, tuple[str, tuple[int | None, ...]]] = {
    "node_feat": ("float32", (None, 140)),
    "node_opcode": ("uint8", (None,)),
    "edge_index": ("int64", (None, 2)),
    "node_config_ids": ("int64", (None,)),
    "node_config_feat": ("float32", (None, None, 18)),
    "config_runtime": ("int64", (None,)),
    "node_splits": ("int64", (1, None)),  # (1, s) as in the published files
}
TILE_KEYS: dict[str, tuple[str, tuple[int | None, ...]]] = {
    "node_feat": ("float32", (None, 140)),
    "node_opcode": ("uint8", (None,)),
    "edge_index": ("int64", (None, 2)),
    "config_feat": ("float32", (None, 24)),
    "config_runtime": ("int64", (None,)),
    "config_runtime_normalizers": ("int64", (None,)),
}
KEYS = {"layout": LAYOUT_KEYS, "tile": TILE_KEYS}
# Arrays indexed by config (first axis), per collection.
CONFIG_KEYS = {"layout": ("node_config_feat", "config_runtime"),
               "tile": ("config_feat", "config_runtime", "config_runtime_normalizers")}
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_STEM = re.compile(r"^(?!\.)[^/\\\x00]+$")  # official stems: any single, non-hidden name


@dataclass(frozen=True)
class TreeEntry:
    """Where one file sits in an official tree: what its path components say."""

    rel: str
    collection: str
    source: str
    search: str | None
    split: str
    stem: str


def tree_path(collection: str, source: str, search: str | None, split: str, name: str) -> str:
    """``npz/layout/{source}/{search}/{split}/{name}.npz`` or ``npz/tile/xla/{split}/...``."""
    if collection == "tile":
        return f"npz/tile/xla/{split}/{name}.npz"
    return f"npz/layout/{source}/{search}/{split}/{name}.npz"


def parse_tree_path(rel: str) -> TreeEntry | None:
    """Read collection/source/search/split from a path; None if it is not a tree file.

    The nearest ``layout``/``tile`` component anchors the match, so a download unpacked under
    any prefix (``npz_all/npz/layout/...``) parses the same.
    """
    parts = rel.replace("\\", "/").split("/")
    if not parts[-1].endswith(".npz"):
        return None
    stem = parts[-1][: -len(".npz")]
    for i in range(len(parts) - 2, -1, -1):
        tail = parts[i + 1:]
        if parts[i] == "layout" and len(tail) == 4:
            source, search, split = tail[:3]
            if _NAME.match(source) and _NAME.match(search) and split in SPLITS:
                return TreeEntry(rel, "layout", source, search, split, stem)
        if parts[i] == "tile" and len(tail) == 3:
            source, split = tail[:2]
            if _NAME.match(source) and split in SPLITS:
                return TreeEntry(rel, "tile", source, None, split, stem)
    return None


def check_name(name: str, what: str, stem: bool = False) -> str:
    """A path component we write must not escape its folder (``stem``: a file stem as found in
    an official tree, which may hold any character but a separator)."""
    if not (_STEM if stem else _NAME).match(name):
        raise DatasetError(f"{what} {name!r} cannot be used as a file or folder name")
    return name


def conform(arrays: dict[str, np.ndarray], collection: str, where: str) -> dict[str, np.ndarray]:
    """Exactly the official keys, dtypes and ranks; values are never changed.

    A dtype is converted only when every value survives the conversion; ``node_splits`` is
    given the published files' ``(1, s)`` shape (tgt stores it as ``(s,)``).
    """
    out: dict[str, np.ndarray] = {}
    for key, (dtype, shape) in KEYS[collection].items():
        if key not in arrays:
            raise DatasetError(f"{where}: missing key {key!r} needed by a {collection} file")
        arr = np.asarray(arrays[key])
        if key == "node_splits" and arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.dtype != np.dtype(dtype):
            cast = arr.astype(dtype)
            if cast.shape != arr.shape or not np.array_equal(cast, arr):
                raise DatasetError(f"{where}: key {key!r} has dtype {arr.dtype} whose values "
                                   f"do not fit the official {dtype}")
            arr = cast
        if arr.ndim != len(shape) or any(want is not None and got != want
                                         for got, want in zip(arr.shape, shape, strict=True)):
            want_text = "(" + ", ".join("*" if d is None else str(d) for d in shape) + ")"
            raise DatasetError(f"{where}: key {key!r} has shape {arr.shape}, "
                               f"official is {want_text}")
        out[key] = arr
    check_counts(out, collection, where)
    return out


def check_counts(arrays: dict[str, np.ndarray], collection: str, where: str) -> None:
    """Nodes, configs and configurable nodes agree across keys."""
    n = arrays["node_feat"].shape[0]
    if arrays["node_opcode"].shape[0] != n:
        raise DatasetError(f"{where}: key 'node_opcode' has {arrays['node_opcode'].shape[0]} "
                           f"nodes but 'node_feat' has {n}")
    counts = {k: arrays[k].shape[0] for k in CONFIG_KEYS[collection]}
    if len(set(counts.values())) > 1:
        raise DatasetError(f"{where}: config arrays disagree on the number of configs: {counts}")
    if collection == "layout":
        nc, got = arrays["node_config_ids"].shape[0], arrays["node_config_feat"].shape[1]
        if nc != got:
            raise DatasetError(f"{where}: key 'node_config_feat' has {got} configurable nodes "
                               f"but 'node_config_ids' lists {nc}")


def num_configs(arrays: dict[str, np.ndarray], collection: str) -> int:
    return int(arrays[CONFIG_KEYS[collection][0]].shape[0])


def take_configs(arrays: dict[str, np.ndarray], collection: str,
                 rows: np.ndarray | None) -> dict[str, np.ndarray]:
    """The file restricted to config ``rows`` (None: all, untouched)."""
    if rows is None:
        return arrays
    picked = dict(arrays)
    for key in CONFIG_KEYS[collection]:
        picked[key] = np.ascontiguousarray(arrays[key][rows])
    return picked
