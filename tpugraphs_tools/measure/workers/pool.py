"""The worker processes one measurer drives: compile workers and measurement processes.

Why apart from the loop (``measurer.py`` and its compile and timing sides): starting,
awaiting, replacing and stopping workers is the same whatever the loop does with them, and
moving to the next graph hands these same workers its spec (:meth:`WorkerPool.switch`). A
measurement process's slot (its *phase*) is fixed: slot p times every batch as the p-th
process. What runs in the processes is given (:class:`WorkerMains`): the pool starts them and
does not import them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Self

from tpugraphs_tools.measure.messages import (
    DefaultInfo,
    DefaultTimeoutError,
    SessionSpec,
    WorkerError,
)
from tpugraphs_tools.measure.run_state import PipelineOptions
from tpugraphs_tools.measure.workers.processes import WorkerProcess, resolve_isolation, split_cpus
from tpugraphs_tools.measure.workers.round_board import RoundBoard

# A measurement worker starts by importing jax, compiling the default config and running it
# (fixed engine: timing it alone too): two config timeouts, plus a minute for the start.
READY_TIMEOUTS, READY_START_S = 2, 60.0
Ready = list[tuple[int, DefaultInfo]]   # (slot, its "ready" info) of processes just awaited


@dataclass(frozen=True)
class WorkerMains:
    """What the processes run: ``measure(conn, spec, cpus, board)`` in a measurement process,
    ``compile(conn, spec, cpus)`` in a compile worker (module-level functions: a spawned
    process finds them by name)."""

    measure: Callable[..., None]
    compile: Callable[..., None]


class WorkerPool:
    """Compile workers and ``processes`` measurement processes (``start`` starts the missing
    ones; a context manager that stops them all)."""

    def __init__(self, spec: SessionSpec, opts: PipelineOptions, processes: int,
                 mains: WorkerMains) -> None:
        self.spec = spec   # what a worker started from now on is given
        self.opts = opts
        self.mains = mains
        self.isolation = resolve_isolation(opts.isolation)
        self.measure_cpus, self.compile_cpus = split_cpus(self.isolation)
        self.processes = processes
        self.restarts = 0
        self.compilers: list[WorkerProcess] = []
        self.measures: list[WorkerProcess | None] = [None] * processes
        # Per slot: the rounds its process has timed (round_board.py), read for progress.
        self.boards: list[RoundBoard] = [RoundBoard() for _ in range(processes)]

    def measure(self, slot: int) -> WorkerProcess:
        """The measurement process in ``slot``: started by ``start()``, replaced after it
        died."""
        measure = self.measures[slot]
        assert measure is not None, "start() the measurement processes first"
        return measure

    def conn(self, slot: int) -> Connection:
        return self.measure(slot).conn

    def start(self) -> Ready:
        """Start the missing workers: the measurement processes together (each imports jax and
        compiles the default), then await each."""
        if not self.compilers:
            count = max(1, self.opts.compile_workers)
            self.compilers = [self._new_compiler() for _ in range(count)]
        missing = [slot for slot, m in enumerate(self.measures) if m is None]
        for slot in missing:
            self._spawn(slot)
        return [(slot, self.await_ready(slot)) for slot in missing]

    def await_ready(self, slot: int) -> DefaultInfo:
        """The measurement process in ``slot`` compiled and checked the default ("ready");
        raises DefaultTimeoutError or WorkerError (the process killed) when it did not."""
        measure = self.measure(slot)
        limit = self.opts.timeout_s * READY_TIMEOUTS + READY_START_S
        if not measure.conn.poll(limit):
            measure.kill()
            raise DefaultTimeoutError(
                f"the measurement worker did not load the default config within {limit:g} s "
                f"({READY_TIMEOUTS} x --timeout + {READY_START_S:g} s)", self.opts.timeout_s)
        try:
            kind, payload = measure.conn.recv()
        except EOFError:
            raise WorkerError("measurement worker died on the default config: "
                              + measure.exit_description()) from None
        if kind != "ready":
            measure.kill()
            raise WorkerError(f"default config failed: {payload}")
        info: DefaultInfo = payload
        return info

    def respawn(self, slot: int) -> DefaultInfo:
        """Replace the measurement process in ``slot`` (dead, hung or failed) with a fresh
        one, and await it."""
        self.measure(slot).kill()
        self._spawn(slot)
        self.restarts += 1
        return self.await_ready(slot)

    def replace_compiler(self, slot: int, restart: bool = True) -> None:
        """A fresh compile worker in ``slot`` (``restart`` False: it exited after its job, as
        ``fresh_compiler_per_job`` asks, which is no restart)."""
        self.compilers[slot].kill()
        self.compilers[slot] = self._new_compiler()
        self.restarts += int(restart)

    def pause_pids(self) -> list[int]:
        """PIDs stopped during timed rounds (isolation ``pause``)."""
        return [p.pid for p in self.compilers] if self.isolation == "pause" else []

    def switch(self, spec: SessionSpec) -> Ready:
        """Give the live workers the graph of ``spec``.

        Every live measurement process is sent the spec and awaited before any failure is
        raised, so no "ready" message is left in a pipe for the next graph to misread; a
        process that failed leaves its slot empty (``start()`` spawns a fresh one)."""
        self.spec = spec
        for slot, proc in enumerate(self.compilers):
            try:
                proc.conn.send(spec)
            except OSError:  # exited (e.g. after its one job): a fresh one gets ``spec``
                self.replace_compiler(slot, restart=False)
        sent = []
        for slot, measure in enumerate(self.measures):
            if measure is None:
                continue
            try:
                measure.conn.send(spec)
                sent.append(slot)
            except OSError:
                measure.kill()
                self.measures[slot] = None
        ready: Ready = []
        errors = []
        for slot in sent:
            try:
                ready.append((slot, self.await_ready(slot)))
            except WorkerError as exc:
                self.measure(slot).kill()
                self.measures[slot] = None
                errors.append(exc)
        if errors:
            raise errors[0]
        return ready

    def close(self, now: bool = False) -> None:
        """Stop every worker: asked to exit (each may finish what it does, up to 10 s), or
        ``now`` (an error or Ctrl-C): killed at once, mid-round or stopped by the pause
        isolation alike; what was measured is journaled already (collect/journal.py)."""
        procs = [*self.compilers, *(m for m in self.measures if m)]
        if now:
            for proc in procs:
                proc.proc.kill()
        for proc in procs:
            if now:
                proc.kill()
            else:
                proc.stop()
        self.compilers = []
        self.measures = [None] * self.processes

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_exc: object) -> None:
        self.close(now=kind is not None)

    def _spawn(self, slot: int) -> None:
        self.boards[slot] = RoundBoard()  # a dead process's last counts are not the new one's
        self.measures[slot] = WorkerProcess(self.mains.measure, self.spec, self.measure_cpus,
                                            self.boards[slot])

    def _new_compiler(self) -> WorkerProcess:
        return WorkerProcess(self.mains.compile, self.spec, self.compile_cpus)
