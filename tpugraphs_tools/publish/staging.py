"""Output folders that appear whole or not at all: build beside the target, then rename.

A killed export/import/publish/report must never leave a half-written tree that a later
reader takes for complete, so everything is written into a sibling temp folder first.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.store import check_out_folder, dataset_lock, sha256_file

STAGING_MARK = ".tgt-staging-"
# Config rows per commit of an import into a staged dataset (tree or tuning data), so one table
# part (what validate reads at once) stays small.
MAX_PART_ROWS = 250_000


def check_target(out: Path, overwrite: bool) -> None:
    """Refuse to write over a non-empty folder unless asked to (the rule every command's
    --out follows: store/out_folder.py)."""
    check_out_folder(out, overwrite=overwrite)


def check_separate(source: str | Path, out: str | Path) -> None:
    """The output may neither be, contain, nor sit inside the input (a rename would eat it)."""
    a, b = Path(source).resolve(), Path(out).resolve()
    if a == b or a in b.parents or b in a.parents:
        raise DatasetError(f"--out {out} overlaps the input {source}; choose a separate folder")


@contextmanager
def staged_dir(out: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temp folder next to ``out``; on success it replaces ``out`` in one rename.

    ``out``'s write lock is held meanwhile (the folder is made for it), so a collection into
    it, or a second export, is refused until the rename; a folder made for nothing is
    removed again."""
    out = Path(out)
    check_target(out, overwrite)
    made = not out.exists()
    try:
        with dataset_lock(out):
            yield from _build_and_swap(out)
    finally:
        if made and out.is_dir() and not any(out.iterdir()):
            out.rmdir()


def _build_and_swap(out: Path) -> Iterator[Path]:
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = out.parent / f".{out.name}{STAGING_MARK}{uuid.uuid4().hex[:8]}"
    stage.mkdir()
    try:
        yield stage
        old = None
        if out.exists():
            old = out.parent / f".{out.name}{STAGING_MARK}old-{uuid.uuid4().hex[:8]}"
            os.replace(out, old)
        os.replace(stage, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def write_checksums(root: Path, name: str = "SHA256SUMS") -> Path:
    """``sha256sum``-format list of every file under ``root`` (``sha256sum -c`` checks it)."""
    lines = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel != name:
            lines.append(f"{sha256_file(path)}  {rel}\n")
    target = root / name
    target.write_text("".join(lines))
    return target
