"""Crash-safe writes: temp file + fsync + rename, and a commit journal for multi-file updates.

A dataset update replaces several fixed-name files (npz, both tables, the manifest). Each is
first written under a temporary name; then a journal listing the renames is written atomically;
then the renames run and the journal is removed. A crash before the journal leaves the old
dataset intact (temps are swept later); a crash after it is rolled forward by the next open.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

JOURNAL = ".tgt-commit.json"
TEMP_MARK = ".tgt-tmp-"
# Work journals of unfinished collections (collect/journal.py): outside the committed data.
WORK_DIR = ".tgt-work"
# Logs of collections (worker output, XLA's included): not data, never checked or published.
LOG_DIR = ".tgt-logs"
# Derived, rebuildable data (baseline/configstore.py): outside the committed data too.
CACHE_DIR = ".tgt-cache"
# Temp files staged by this process's open transactions: sweeping must leave them alone.
LIVE: set[Path] = set()


def temp_path(final: Path) -> Path:
    return final.with_name(f"{final.name}{TEMP_MARK}{uuid.uuid4().hex[:8]}")


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(final: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` then rename onto ``final``; ``final`` is never seen half-written."""
    tmp = temp_path(final)
    try:
        write(tmp)
        fsync_path(tmp)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes_atomic(final: Path, data: bytes) -> None:
    write_atomic(final, lambda p: p.write_bytes(data))


def commit(root: Path, renames: list[tuple[Path, Path]], deletes: Sequence[Path] = ()) -> None:
    """Apply ``(temp, final)`` renames and deletions as one roll-forward-able step."""
    journal = {"renames": [[str(t.relative_to(root)), str(f.relative_to(root))]
                           for t, f in renames],
               "deletes": [str(p.relative_to(root)) for p in deletes]}
    write_bytes_atomic(root / JOURNAL, json.dumps(journal).encode())
    recover(root)


def recover(root: Path) -> bool:
    """Finish an interrupted commit (if any) and sweep stray temp files; True if it did work."""
    journal_path = root / JOURNAL
    did = False
    if journal_path.exists():
        journal = json.loads(journal_path.read_text())
        for tmp, final in journal["renames"]:
            if (root / tmp).exists():
                os.replace(root / tmp, root / final)
        for rel in journal["deletes"]:
            (root / rel).unlink(missing_ok=True)
        journal_path.unlink()
        did = True
    for stray in root.rglob(f"*{TEMP_MARK}*"):
        if stray in LIVE:
            continue
        stray.unlink(missing_ok=True)
        did = True
    return did
