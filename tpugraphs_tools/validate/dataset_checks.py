"""Dataset-level checks: manifest schema and version, listed vs present files, sizes, checksums.

Checksums are computed by a background thread while the npz checks run (hashlib releases the
GIL), so hashing costs wall time only when it is the slower of the two. Files are hashed in
1 MiB blocks: memory does not grow with file size.
"""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jsonschema

from tpugraphs_tools.store import (
    CACHE_DIR,
    FORMAT_VERSION,
    JOURNAL,
    LOCK_FILE,
    LOG_DIR,
    MANIFEST,
    TEMP_MARK,
    WORK_DIR,
    Part,
    TableInfo,
    live_holder,
    load_schema,
    sha256_file,
    table_info,
)
from tpugraphs_tools.validate.report import Report


def check_manifest(root: Path, report: Report) -> dict[str, Any] | None:
    """The parsed manifest if later checks can use it, else None (with findings)."""
    path = root / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        report.emit("dataset.manifest_missing", "no manifest.json", MANIFEST)
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        report.emit("dataset.manifest_unreadable", f"cannot parse: {exc}", MANIFEST)
        return None
    if not isinstance(manifest, dict):
        report.emit("dataset.manifest_schema", "top level is not a JSON object", MANIFEST)
        return None
    validator = jsonschema.Draft202012Validator(load_schema("manifest"))
    for err in sorted(validator.iter_errors(manifest), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or None
        report.emit("dataset.manifest_schema", err.message, MANIFEST, key=where)
    version = manifest.get("format_version")
    if isinstance(version, int) and version > FORMAT_VERSION:
        report.emit("dataset.format_too_new", f"format_version {version} is newer than this "
                    f"tgt supports ({FORMAT_VERSION}); upgrade tpugraphs-tools", MANIFEST,
                    key="format_version")
        return None
    if not isinstance(manifest.get("files"), dict):
        return None
    if not isinstance(manifest.get("tables"), dict):
        manifest["tables"] = {}
    return manifest


class Hasher:
    """sha256 of listed files in a background thread; :meth:`finish` reports mismatches."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tgt-hash")
        self._jobs: list[tuple[str, str, Future[str]]] = []

    def submit(self, rel: str, path: Path, expected: str) -> None:
        self._jobs.append((rel, expected, self._pool.submit(sha256_file, path)))

    def finish(self, report: Report) -> None:
        for rel, expected, job in self._jobs:
            if report.full:
                job.cancel()
                continue
            try:
                digest = job.result()
            except OSError as exc:
                report.emit("structure.unreadable", f"cannot read: {exc}", rel)
                continue
            if digest != expected:
                report.emit("dataset.checksum_mismatch", f"sha256 {digest[:12]}… differs from "
                            f"manifest {str(expected)[:12]}…", rel)
        self.close()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def check_files(root: Path, manifest: dict[str, Any], report: Report, hasher: Hasher) -> None:
    """Every listed file exists with its byte count (sha256 queued); every file is listed."""
    listed: dict[str, Any] = manifest["files"]
    for rel, info in sorted(listed.items()):
        path = root / rel
        if not path.is_file():
            report.emit("dataset.file_missing", "listed in manifest but missing", rel)
            continue
        info = info if isinstance(info, dict) else {}
        size = path.stat().st_size
        if size != info.get("bytes"):
            report.emit("dataset.size_mismatch",
                        f"{size} bytes on disk, manifest says {info.get('bytes')}", rel)
            continue
        hasher.submit(rel, path, str(info.get("sha256")))
    holder = live_holder(root)
    if holder is not None:
        report.emit("dataset.being_written", f"being written by {holder.describe()}; check "
                    "again once it ends", LOCK_FILE)
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if rel == MANIFEST or rel in listed or rel.startswith(
                (f"{CACHE_DIR}/", f"{LOG_DIR}/", LOCK_FILE)):
            continue
        if rel.startswith(f"{WORK_DIR}/"):
            report.emit("dataset.partial_collection",
                        "config rows of an unfinished collection (rerun the same `tgt collect` "
                        "to finish it; `tgt collect --status` shows progress)", rel)
        elif TEMP_MARK in rel or rel == JOURNAL:
            report.emit("dataset.interrupted_write",
                        "leftover of an interrupted write (re-open with tgt to recover)", rel)
        else:
            report.emit("dataset.file_unlisted", "present but not in manifest", rel)


def table_infos(manifest: dict[str, Any]) -> dict[str, TableInfo]:
    """table name → its parts for every table the manifest lists (format 1: one file)."""
    out = {name: table_info(manifest, name) for name in manifest.get("tables", {})}
    for name in ("graphs", "configs"):
        if name not in out:
            out[name] = TableInfo(name, parts=[Part(f"{name}.parquet", None)])  # type: ignore[arg-type]
    return out
