"""Structural checks from npy headers alone: keys, dtypes, ranks, fixed dims, declared sizes.

Nothing here reads array data, so a pickled or absurdly sized member is reported without being
touched. The symbolic dims (n nodes, m edges, nc configurable nodes, c configs) are bound here
once, and every later check works against those numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tpugraphs_tools.format import COLLECTIONS, ArraySpec, detect_kind
from tpugraphs_tools.validate.npz_reader import Member, NpzReader
from tpugraphs_tools.validate.report import Report

MAX_ARRAY_BYTES = 64 << 30


# kind → key → spec, in check order (the contract itself lives in ``format``).
SPECS: dict[str, dict[str, ArraySpec]] = {kind: spec.specs() for kind, spec in COLLECTIONS.items()}
_MISMATCH_CHECK = {"n": "graph.node_count_mismatch", "c": "values.config_count_mismatch",
                   "nc": "values.config_count_mismatch"}
_DIM_NAMES = {"n": "nodes", "m": "edges", "c": "configs", "nc": "configurable nodes"}


@dataclass
class FileLayout:
    """What later checks may read: members whose header passed, and the bound dims."""

    collection: str
    usable: dict[str, Member] = field(default_factory=dict)
    dims: dict[str, int] = field(default_factory=dict)
    dim_source: dict[str, str] = field(default_factory=dict)


def detect_collection(reader: NpzReader) -> str | None:
    """layout vs tile from the keys (for bare directories of npz files)."""
    kind = detect_kind(set(reader.members) | set(reader.bad_headers))
    return None if kind is None else kind.value


def check_structure(reader: NpzReader, rel: str, collection: str, report: Report,
                    max_array_bytes: int = MAX_ARRAY_BYTES) -> FileLayout:
    specs = SPECS[collection]
    layout = FileLayout(collection)
    for key, why in sorted(reader.bad_headers.items()):
        report.emit("structure.unreadable", why, rel, key=key)
    for name in reader.other:
        report.emit("structure.extra_key", "zip member is not an .npy array", rel, key=name)
    for key in sorted(set(reader.members) - set(specs)):
        m = reader.members[key]
        report.emit("structure.extra_key",
                    f"key not in the TpuGraphs {collection} format ({m.dtype} {m.shape})",
                    rel, key=key)
    for key, spec in specs.items():
        member = reader.members.get(key)
        if member is None:
            if spec.required and key not in reader.bad_headers:
                report.emit("structure.missing_key", f"required {collection} key missing", rel,
                            key=key)
            continue
        if _check_member(member, spec, rel, report, max_array_bytes):
            layout.usable[key] = member
            _bind_dims(layout, key, member, spec, rel, report)
    return layout


def _check_member(member: Member, spec: ArraySpec, rel: str, report: Report,
                  max_array_bytes: int) -> bool:
    """Header-level checks of one member; True if its data may be read and checked."""
    key = member.key
    if member.dtype.hasobject:
        report.emit("structure.pickled", f"object array ({member.dtype}); refusing to unpickle",
                    rel, key=key)
        return False
    problem = member.size_problem(max_array_bytes)
    if problem is not None:
        report.emit("structure.absurd_size", problem, rel, key=key)
        return False
    usable = True
    if member.dtype != spec.np_dtype:  # dtype equality: byte order counts, str() is slow
        report.emit("structure.dtype", f"dtype {member.dtype}, expected {spec.dtype}", rel,
                    key=key)
        usable = member.dtype.kind in "biuf"
    ranks = (len(spec.dims),) + ((len(spec.written_dims),) if spec.written_dims else ())
    if len(member.shape) not in ranks:
        want = " or ".join(str(r) for r in ranks)
        report.emit("structure.rank", f"shape {member.shape} has rank {len(member.shape)}, "
                    f"expected {want} ({_dims_text(spec.dims)})", rel, key=key)
        return False
    if spec.written_dims is None:  # two shapes allowed: no fixed dims to compare
        for axis, dim in enumerate(spec.dims):
            if isinstance(dim, int) and member.shape[axis] != dim:
                report.emit("structure.shape", f"shape {member.shape}: axis {axis} is "
                            f"{member.shape[axis]}, expected {dim} ({_dims_text(spec.dims)})",
                            rel, key=key)
                usable = False
    return usable


def _bind_dims(layout: FileLayout, key: str, member: Member, spec: ArraySpec, rel: str,
               report: Report) -> None:
    if spec.written_dims is not None:  # which axis holds a dim depends on the shape
        return
    for axis, sym in enumerate(spec.dims):
        if not isinstance(sym, str):
            continue
        size = member.shape[axis]
        if sym not in layout.dims:
            layout.dims[sym] = size
            layout.dim_source[sym] = f"{key} axis {axis}"
        elif layout.dims[sym] != size:
            report.emit(_MISMATCH_CHECK.get(sym, "values.config_count_mismatch"),
                        f"{key} axis {axis} has {size} {_DIM_NAMES.get(sym, sym)}, but "
                        f"{layout.dim_source[sym]} has {layout.dims[sym]}", rel, key=key)


def _dims_text(dims: tuple[str | int, ...]) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def as_int64(arr: np.ndarray) -> np.ndarray:
    """Integer view for value checks on arrays whose dtype was already reported as wrong."""
    if arr.dtype == np.int64:
        return arr
    if arr.dtype.kind == "f":
        return np.nan_to_num(arr, nan=-1, posinf=-1, neginf=-1).astype(np.int64)
    return arr.astype(np.int64)
