"""Worker-process plumbing shared by the measurement engines: starting, pinning, parent death.

Workers are forked from a *forkserver* that imported jax once but initialised no backend
(jax is not fork-safe once a backend runs; the server never runs one). A spawned worker
imports jax itself: ~3 s of CPU each, and a paired collection starts four measurement
processes and a compile worker per graph (tile: per kernel). Forked from the server, four
workers were ready in 0.6 s instead of 9 s. Where the start method is missing, or the
environment changed since the server started (its children see the server's environment:
tests that set variables, ``share_device_memory``), workers are spawned as before;
``TGT_WORKER_START=spawn`` forces that.

Workers ask the kernel to kill them when their parent dies (the forkserver exits when
``tgt collect`` does, so a ``kill -9`` leaves no orphan compiling or timing), and can be pinned
to a CPU set so measurement keeps a core to itself while compilation runs on the others.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing as mp
import multiprocessing.forkserver as forkserver
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from tpugraphs_tools.measure.device_env import ISOLATIONS, share_device_memory
from tpugraphs_tools.measure.workers.logs import (
    first_reason,
    new_log,
    read_log,
    run_logged,
    settle_log,
)

_PR_SET_PDEATHSIG = 1
# Imported by the forkserver before it forks any worker: jax and the two worker mains (with
# what they import: the compiler, the engines, the logs).
PRELOAD = ["jax", "tpugraphs_tools.measure.workers.measure_worker",
           "tpugraphs_tools.measure.workers.compile_worker"]
START_ENV = "TGT_WORKER_START"
_server_env: dict[str, str] | None = None   # os.environ when the forkserver was started


def worker_context() -> Any:
    """The multiprocessing context a new worker starts from: the jax-preloaded forkserver
    where it is available and the environment is the one it started with, else spawn."""
    global _server_env
    spawn = mp.get_context("spawn")
    if (os.environ.get(START_ENV, "forkserver") == "spawn"
            or "forkserver" not in mp.get_all_start_methods()):
        return spawn
    env = dict(os.environ)
    if _server_env is None:
        server = mp.get_context("forkserver")
        server.set_forkserver_preload(PRELOAD)
        with _imports_as_here():
            forkserver.ensure_running()
        _server_env = env
        return server
    return mp.get_context("forkserver") if env == _server_env else spawn


@contextlib.contextmanager
def _imports_as_here() -> Iterator[None]:
    """The forkserver starts as ``python -c``, which puts its working directory first on its
    import path and never applies the parent's (Python 3.11-3.13): from a folder holding another
    tpugraphs_tools checkout, or a ``numpy.py``, workers imported those, not what ``tgt`` runs.
    Started here, it imports from the parent's path and nothing implicit."""
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "PYTHONSAFEPATH")}
    os.environ["PYTHONSAFEPATH"] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in sys.path)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def die_with_parent() -> None:
    """Linux: deliver SIGKILL to this process when its parent exits (no-op elsewhere). Ctrl-C
    reaches the whole foreground process group: a worker ignores it and the parent, which
    stops its workers on the way out, reports it once (cli handle_errors)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _threads() -> list[int]:
    """This process's thread ids: Linux keeps a CPU mask per thread, and XLA's CPU client
    runs programs on pool threads, not on the thread that calls them."""
    try:
        return [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def pin(cpus: set[int] | None) -> None:
    """Every thread of this process onto ``cpus`` (threads started later inherit it)."""
    if not cpus:
        return
    for tid in _threads():
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setaffinity(tid, cpus)


@contextlib.contextmanager
def pinned(cpus: set[int] | None) -> Iterator[None]:
    """Run the block on ``cpus`` (None: where the process runs now), then go back."""
    if not cpus:
        yield
        return
    try:
        before = os.sched_getaffinity(0)
    except AttributeError:
        yield
        return
    pin(cpus)
    try:
        yield
    finally:
        pin(before)


def available_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return list(range(os.cpu_count() or 1))


def resolve_isolation(isolation: str) -> str:
    """``auto``: pin when a spare core pair exists (≥ 4 CPUs), else pause compilation."""
    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation must be one of {ISOLATIONS}, got {isolation!r}")
    if isolation != "auto":
        return isolation
    return "pin" if len(available_cpus()) >= 4 else "pause"


def split_cpus(isolation: str) -> tuple[set[int] | None, set[int] | None]:
    """(measure cpus, compile cpus) for ``pin``: the first CPU times, the others compile."""
    cpus = available_cpus()
    if isolation != "pin" or len(cpus) < 2:
        return None, None
    return {cpus[0]}, set(cpus[1:])


def lanes_for(lanes: int, processes: int, isolation: str) -> int:
    """Measurement processes that time a batch at once: each needs a CPU of its own, and
    only ``pause`` isolation leaves every CPU to measurement (``pin`` keeps one)."""
    if isolation != "pause":
        return 1
    return max(1, min(lanes, processes, len(available_cpus())))


def signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


class WorkerProcess:
    """A spawned child running ``target(conn, *args)`` with a duplex pipe to the parent."""

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        share_device_memory()  # inherited by the child: several jax processes share one GPU
        ctx = worker_context()
        self.conn, child = ctx.Pipe()
        self.log = new_log()   # its stdout/stderr (workers/logs.py); None: the parent's
        self._mark = 0
        self.proc = ctx.Process(target=run_logged, daemon=True, args=(
            target, None if self.log is None else str(self.log), child, *args))
        self.proc.start()
        child.close()
        assert self.proc.pid is not None  # a started process has one
        self.pid: int = self.proc.pid
        self.role = f"{getattr(target, '__name__', 'worker')} pid {self.pid}"

    def alive(self) -> bool:
        return self.proc.is_alive()

    def mark(self) -> None:
        """A job starts: what the worker writes from here on is about it."""
        with contextlib.suppress(OSError):
            self._mark = self.log.stat().st_size if self.log is not None else 0

    def exit_description(self) -> str:
        """Why the worker died: its exit status and the first line it wrote that says why
        (since the last :meth:`mark`)."""
        self.proc.join(5)
        code = self.proc.exitcode
        sig = f" (signal {signal.Signals(-code).name})" if code is not None and code < 0 else ""
        reason = first_reason(read_log(self.log, self._mark))
        return f"worker process died with exit code {code}{sig}" + (
            f": {reason}" if reason else "")

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        with contextlib.suppress(OSError):
            self.conn.close()
        settle_log(self.log, self.role)

    def stop(self) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):
            self.conn.send(None)
        self.proc.join(10)
        self.kill()
