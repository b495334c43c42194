"""Worker processes' own output (XLA's C++ logging included) kept off the terminal.

Why: each config XLA refuses makes a compile worker print a multi-line C++ error block to its
stderr (autotuner dumps run to kilobytes), which inherits the terminal and tears through the
progress bar, while the stored row said only ``compile_error``. Under :func:`log_workers_to` every
worker started from then on has its fds 1 and 2 on a file of its own in the log folder; when
the worker ends, its output is appended to ``collect.log`` there under a header naming the
worker. A failure's row keeps the first line that says why (:func:`first_reason`), the log
keeps the rest. Without :func:`log_workers_to` (``tgt collect --verbose``, library calls that
do not ask) workers write where their parent does, as before.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

LOG_NAME = "collect.log"
# A glog line's prefix (``E1205 23:06:01.123456  4242 config_assigner.cc:536] ``).
_GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]]+\] ")
# Lines that say nothing about a failure.
_NOISE = ("WARNING: All log messages before absl::InitializeLog()", "Traceback (most recent",
          "During handling of the above exception", "The above exception was the direct")
REASON_LIMIT = 300

_folder: Path | None = None


@contextlib.contextmanager
def log_workers_to(folder: Path | None) -> Iterator[None]:
    """Workers started inside the block write their output under ``folder`` (None: nowhere
    but their parent's stdout/stderr)."""
    global _folder
    saved = _folder
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        for orphan in sorted(folder.glob("worker-*.out")):  # a killed run's workers
            settle_log(orphan, f"{orphan.stem}, left by an interrupted run")
    _folder = folder
    try:
        yield
    finally:
        _folder = saved


def new_log() -> Path | None:
    """The output file of a worker about to start (None: not redirected)."""
    return None if _folder is None else _folder / f"worker-{uuid.uuid4().hex[:12]}.out"


def run_logged(target: Callable[..., None], log: str | None, *args: Any) -> None:
    """Child entry: fds 1 and 2 onto ``log`` (native writes included), then ``target``."""
    if log is not None:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    target(*args)


def read_log(log: Path | None, since: int = 0) -> str:
    if log is None:
        return ""
    try:
        with open(log, "rb") as f:
            f.seek(since)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def settle_log(log: Path | None, what: str) -> None:
    """Append a finished worker's output (if any) to the folder's ``collect.log``, then drop
    its own file."""
    if log is None or not log.exists():
        return
    text = read_log(log)
    if text.strip():
        with open(log.parent / LOG_NAME, "a", encoding="utf-8") as out:
            out.write(f"----- {what} -----\n{text}")
            if not text.endswith("\n"):
                out.write("\n")
    log.unlink(missing_ok=True)


def first_reason(text: str) -> str | None:
    """The first line of ``text`` that says why something failed: glog prefixes dropped,
    Python traceback frames passed over (their last line, the exception, is the reason),
    bounded to :data:`REASON_LIMIT` characters. None when no line says anything."""
    lines = [line.rstrip() for line in text.splitlines()]
    if any(line.startswith("Traceback (most recent") for line in lines):
        # the exception line: the last unindented line after the frames
        tail = [line for line in lines if line and not line.startswith((" ", "\t"))
                and not line.startswith(_NOISE)]
        lines = tail[-1:] + lines
    for line in lines:
        line = _GLOG.sub("", line.strip())
        if not line or line.startswith(_NOISE) or set(line) <= set("-=*_ ."):
            continue
        return line if len(line) <= REASON_LIMIT else line[:REASON_LIMIT] + "…"
    return None


def reason_of(status: str, message: str | None) -> str:
    """A failure as counted by reason (collect summary, ``tgt report``): its status and the
    first line of its message that says why."""
    return f"{status}: {first_reason(message or '') or 'no message'}"
