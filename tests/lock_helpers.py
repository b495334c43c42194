"""A second process holding a dataset's write lock, for the one-writer tests."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLD = """
import sys, time
from tpugraphs_tools.store import dataset_lock
with dataset_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


@contextmanager
def held_by_another_process(root: Path) -> Iterator[subprocess.Popen[str]]:
    """A live process holding ``root``'s write lock until the block ends (then SIGKILLed, so
    its lock is left behind as a ``kill -9``ed collection leaves it)."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(root)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        kill_hard(proc)


def kill_hard(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
