"""manifest.json: what a dataset holds, who made it with which versions, and file checksums.

Its reading (with the checks that turn a missing, damaged or too-new manifest into one clear
line) and its staged writing live here, apart from the dataset's read API (``dataset.py``) and
the commit that swaps the staged manifest in (``transaction.py``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tpugraphs_tools import __version__
from tpugraphs_tools.errors import DatasetError, DatasetFileError, FormatVersionError
from tpugraphs_tools.store import atomic, tables

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


def load_manifest(root: Path, create: bool = False) -> dict[str, Any]:
    """The manifest of the dataset at ``root`` (a new one where ``create`` and there is none
    yet; ``root`` is made then), after checking it is a tgt manifest this tgt can read."""
    path = root / MANIFEST
    if not path.exists():
        # A first commit killed before its manifest leaves parts nothing names; with the
        # work journals beside them it is that, and collect starts the manifest afresh.
        interrupted = create and (root / atomic.WORK_DIR).is_dir()
        if (root / tables.TABLES_DIR).is_dir() and not interrupted:
            raise DatasetFileError(f"{path}: missing, but {tables.TABLES_DIR}/ is there: a "
                                   "damaged tgt dataset (restore manifest.json from a copy)")
        if not create:
            raise DatasetError(f"{root}: not a tgt dataset (no {MANIFEST}); "
                               f"create one with `tgt collect --out {root}`")
        root.mkdir(parents=True, exist_ok=True)
        return new_manifest()
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetFileError(f"{path}: unreadable manifest: {exc}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("tables", {}), dict):
        raise DatasetFileError(f"{path}: not a tgt manifest (no tables object)")
    version = manifest.get("format_version")
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise FormatVersionError(f"{path}: format_version {version} is newer than this tgt "
                                 f"supports ({FORMAT_VERSION}); upgrade tpugraphs-tools")
    return manifest


def stage_manifest(root: Path, manifest: dict[str, Any]) -> Path:
    """Stamp ``manifest`` as written now in this format and write it, durable, to a temp file
    beside manifest.json: the commit renames it into place last."""
    manifest["format_version"] = FORMAT_VERSION
    manifest["updated_at"] = now()
    body = json.dumps(manifest, indent=2, sort_keys=True).encode()
    staged = atomic.temp_path(root / MANIFEST)
    staged.write_bytes(body)
    atomic.fsync_path(staged)
    return staged
