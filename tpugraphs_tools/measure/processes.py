"""Worker-process plumbing shared by the measurement engines: spawning, pinning, parent death.

Workers are spawned (jax is not fork-safe), ask the kernel to kill them when the parent dies
(so a ``kill -9`` of ``tgt collect`` leaves no orphan compiling or timing), and can be pinned to
a CPU set so measurement keeps a core to itself while compilation runs on the others.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing as mp
import os
import signal
from collections.abc import Callable
from typing import Any

from tpugraphs_tools.measure.device_env import share_device_memory

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Linux: deliver SIGKILL to this process when its parent exits (no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def pin(cpus: set[int] | None) -> None:
    if cpus:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setaffinity(0, cpus)


def available_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return list(range(os.cpu_count() or 1))


ISOLATIONS = ("auto", "pin", "pause", "none")


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


def signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


class WorkerProcess:
    """A spawned child running ``target(conn, *args)`` with a duplex pipe to the parent."""

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        share_device_memory()  # inherited by the child: several jax processes share one GPU
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=target, args=(child, *args), daemon=True)
        self.proc.start()
        child.close()
        assert self.proc.pid is not None  # a started process has one
        self.pid: int = self.proc.pid

    def alive(self) -> bool:
        return self.proc.is_alive()

    def exit_description(self) -> str:
        self.proc.join(5)
        code = self.proc.exitcode
        sig = f" (signal {signal.Signals(-code).name})" if code is not None and code < 0 else ""
        return f"worker process died with exit code {code}{sig}"

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        with contextlib.suppress(OSError):
            self.conn.close()

    def stop(self) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):
            self.conn.send(None)
        self.proc.join(10)
        self.kill()
