"""Conforming arrays to the official TpuGraphs contract (the contract itself: ``format``).

Export writes exactly the official keys of :mod:`tpugraphs_tools.format`; import reads them.
"""

from __future__ import annotations

import numpy as np

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import (
    LAYOUT_SOURCES,
    SPLITS,
    TreeEntry,
    check_name,
    collection_of,
    official_keys_table,
    parse_tree_path,
    tree_path,
)

__all__ = ["CONFIG_KEYS", "KEYS", "LAYOUT_SOURCES", "SPLITS", "TreeEntry", "check_counts",
           "check_name", "conform", "num_configs", "parse_tree_path", "take_configs",
           "tree_path"]

# key -> (dtype, shape with None for a free dim) per kind; order is the order files are written.
KEYS = official_keys_table()
# Arrays indexed by config (first axis), per kind.
CONFIG_KEYS = {kind: collection_of(kind).config_keys for kind in KEYS}


def conform(arrays: dict[str, np.ndarray], collection: str, where: str) -> dict[str, np.ndarray]:
    """Exactly the official keys, dtypes and ranks; values are never changed.

    A dtype is converted only when every value survives the conversion; ``node_splits`` is
    given the published files' ``(1, s)`` shape (tgt stores it as ``(s,)``).
    """
    out: dict[str, np.ndarray] = {}
    for spec in collection_of(collection).official():
        key, dtype, shape = spec.key, spec.dtype, spec.official_shape()
        if key not in arrays:
            raise DatasetError(f"{where}: missing key {key!r} needed by a {collection} file")
        arr = np.asarray(arrays[key])
        if spec.written_dims is not None and arr.ndim == len(spec.dims):
            arr = arr.reshape(1, -1)  # node_splits: tgt stores (s,), official files (1, s)
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
    kind = collection_of(collection)
    if kind.per_node_configs:
        key = kind.config_feat_key
        nc, got = arrays["node_config_ids"].shape[0], arrays[key].shape[1]
        if nc != got:
            raise DatasetError(f"{where}: key {key!r} has {got} configurable nodes "
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
