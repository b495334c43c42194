"""manifest.json: what a dataset holds, who made it with which versions, and file checksums."""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tpugraphs_tools import __version__

FORMAT_VERSION = 2  # 2: tables as Parquet parts (tables/<name>/part-NNNNN.parquet)
MANIFEST = "manifest.json"


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def jax_versions() -> tuple[str | None, str | None]:
    """Installed jax/jaxlib versions, read from package metadata: importing jax to ask would
    cost ~200 MB of RSS in commands that never use it (import, publish)."""
    from importlib.metadata import PackageNotFoundError, version

    out: list[str | None] = []
    for name in ("jax", "jaxlib"):
        try:
            out.append(version(name))
        except PackageNotFoundError:
            out.append(None)
    return out[0], out[1]


def host_info() -> dict[str, Any]:
    return {"hostname": socket.gethostname(), "platform": platform.platform(),
            "machine": platform.machine(), "processor": platform.processor(),
            "cpu_count": os.cpu_count()}


def new_manifest() -> dict[str, Any]:
    jax_v, jaxlib_v = jax_versions()
    stamp = now()
    return {
        "format": "tgt-dataset", "format_version": FORMAT_VERSION,
        "created_at": stamp, "updated_at": stamp, "tgt_version": __version__,
        "jax_version": jax_v, "jaxlib_version": jaxlib_v,
        "python_version": sys.version.split()[0], "numpy_version": np.__version__,
        "host": host_info(), "devices": [],
        "tables": {name: {"key": "graph_id", "rows": 0, "next_part": 0, "parts": []}
                   for name in ("graphs", "configs")},
        "files": {},
    }
