"""Per-graph npz checks: readable without unpickling, expected keys, dtypes and shapes.

Shapes and dtypes are read from the npy headers first, so a file declaring absurd sizes is
reported before any of its data is loaded.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

from tpugraphs_tools.validate.report import Finding, Report

# collection -> key -> (dtype, rank)
EXPECTED_KEYS: dict[str, dict[str, tuple[str, int]]] = {
    "layout": {"node_feat": ("float32", 2), "node_opcode": ("uint8", 1),
               "edge_index": ("int64", 2), "node_config_ids": ("int64", 1),
               "node_config_feat": ("float32", 3), "config_runtime": ("int64", 1),
               "node_splits": ("int64", 1)},
    "tile": {"node_feat": ("float32", 2), "node_opcode": ("uint8", 1),
             "edge_index": ("int64", 2), "config_feat": ("float32", 2),
             "config_runtime": ("int64", 1), "config_runtime_normalizers": ("int64", 1)},
}
OPTIONAL_KEYS = {"layout": set(), "tile": {"node_splits", "node_config_ids"}}
MAX_ARRAY_BYTES = 64 << 30


def read_headers(path: Path, rel: str, report: Report) -> dict[str, tuple[tuple, np.dtype]] | None:
    """Key → (shape, dtype) from the npy headers, or None (with a finding) if unreadable."""
    headers: dict[str, tuple[tuple, np.dtype]] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                key = info.filename[:-4]
                with zf.open(info) as f:
                    version = npy_format.read_magic(f)
                    reader = (npy_format.read_array_header_1_0 if version == (1, 0)
                              else npy_format.read_array_header_2_0)
                    shape, _, dtype = reader(f)
                headers[key] = (shape, dtype)
    except Exception as exc:  # zlib, zipfile, numpy header errors: any means "unreadable"
        report.add(Finding("structure.unreadable", f"not a readable npz: {exc}", rel))
        return None
    return headers


def check_structure(path: Path, rel: str, collection: str, report: Report
                    ) -> dict[str, tuple[tuple, np.dtype]] | None:
    headers = read_headers(path, rel, report)
    if headers is None:
        return None
    expected = EXPECTED_KEYS[collection]
    ok = True
    for key, (shape, dtype) in headers.items():
        if dtype.hasobject:
            report.add(Finding("structure.pickled", "object array (would need unpickling)", rel,
                               key=key))
            ok = False
        elif int(np.prod(shape, dtype=np.float64)) * dtype.itemsize > MAX_ARRAY_BYTES:
            report.add(Finding("structure.absurd_size", f"declares shape {shape} ({dtype})",
                               rel, key=key))
            ok = False
    for key, (want_dtype, rank) in expected.items():
        if key not in headers:
            if key not in OPTIONAL_KEYS[collection]:
                report.add(Finding("structure.missing_key", "required key missing", rel, key=key))
                ok = False
            continue
        shape, dtype = headers[key]
        if str(dtype) != want_dtype:
            report.add(Finding("structure.dtype", f"dtype {dtype}, expected {want_dtype}", rel,
                               key=key))
        if len(shape) != rank:
            report.add(Finding("structure.rank", f"shape {shape}, expected rank {rank}", rel,
                               key=key))
            ok = False
    for key in sorted(set(headers) - set(expected) - OPTIONAL_KEYS[collection]):
        report.add(Finding("structure.extra_key", "key not in the TpuGraphs format", rel,
                           key=key, severity="warning"))
    return headers if ok else None


def load_arrays(path: Path, rel: str, report: Report) -> dict[str, np.ndarray] | None:
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except Exception as exc:  # same: corrupt data surfaces as many exception types
        report.add(Finding("structure.unreadable", f"cannot load arrays: {exc}", rel))
        return None
