"""What ``tgt collect`` shows while it runs: the bars, and a Ctrl-C answered at once.

Why a handler of its own: Ctrl-C used to stay silent while the workers were stopped one by one
(~30 s: a measurement process in the middle of a batch was given 10 s to exit). Now the first
Ctrl-C prints ``stopping: …`` before anything else happens, saying what is kept, and then
stops the collection (its workers are killed at once, measure/workers/pool.py); the closing
``interrupted:`` line and exit status 130 stay those of every command (``handle_errors``).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from tpugraphs_tools.cli._common import terminal


def stopping_line(event: Any | None) -> str:
    """What a Ctrl-C keeps, from the collection's latest ``ProgressEvent`` (None: none yet):
    committed graphs and journaled config rows survive it, a batch still being timed does
    not."""
    if event is None:
        return "stopping: nothing measured yet"
    kept = (f"{event.run_done} of {event.run_total} config rows kept (committed or journaled)"
            if event.run_total else "the graphs stored so far kept")
    dropped = "; the batch being timed is dropped" if event.batch is not None else ""
    return f"stopping: {kept}{dropped}; the same command resumes"


@contextmanager
def acknowledged_interrupt(line: Callable[[], str]) -> Iterator[None]:
    """While the block runs, Ctrl-C prints ``line()`` at once and then interrupts the block
    (KeyboardInterrupt, as Python's own handler would); a second Ctrl-C interrupts the
    stopping too. Off the main thread (where no signal handler can be set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    acknowledged = False

    def on_interrupt(_signum: int, _frame: FrameType | None) -> None:
        nonlocal acknowledged
        if not acknowledged:
            acknowledged = True
            # Above the live bars on a terminal (they would draw over a stderr line);
            # on stderr when piped, where stdout holds only results.
            console = terminal.console if terminal.interactive else terminal.err_console
            console.print(f"[yellow]{line()}[/]", highlight=False)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_with_bars(run: Callable[[Callable[[Any], None]], Any],
                  bar_lines: Callable[[Any], Any]) -> Any:
    """``run(progress)`` with the bars drawn from each event, and Ctrl-C acknowledged with what
    the latest event says is kept."""
    latest: list[Any] = [None]

    def progress(event: Any) -> None:
        latest[0] = event
        show(bar_lines(event))

    with terminal.bars() as show, acknowledged_interrupt(lambda: stopping_line(latest[0])):
        return run(progress)
