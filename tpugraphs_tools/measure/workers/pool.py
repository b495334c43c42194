"""The worker processes one measurer drives: compile workers and measurement processes.

Why apart from the loop (pipeline.py): starting, awaiting, replacing and stopping workers is
the same whatever the loop does with them, and :class:`~tpugraphs_tools.measure.reuse.
ReusableMeasurer` hands these same workers to the next graph. A measurement process's slot
(its *phase*) is fixed: slot p times every batch as the p-th process.
"""

from __future__ import annotations

from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Self

from tpugraphs_tools.measure.engines import traits_of
from tpugraphs_tools.measure.messages import (
    DefaultInfo,
    DefaultTimeoutError,
    SessionSpec,
    WorkerError,
)
from tpugraphs_tools.measure.run_state import PipelineOptions
from tpugraphs_tools.measure.workers.compile_worker import compile_main
from tpugraphs_tools.measure.workers.measure_worker import measure_main
from tpugraphs_tools.measure.workers.processes import WorkerProcess, resolve_isolation, split_cpus
from tpugraphs_tools.measure.workers.round_board import RoundBoard

# A measurement worker starts by importing jax, compiling the default config and running it
# (fixed engine: timing it alone too): two config timeouts, plus a minute for the start.
READY_TIMEOUTS, READY_START_S = 2, 60.0


class WorkerSlots:
    """Compile workers and ``processes`` measurement processes of one session (``start``
    starts the missing ones; a context manager that stops them all)."""

    def __init__(self, spec: SessionSpec, options: PipelineOptions | None = None) -> None:
        self.spec = spec
        opts = options or PipelineOptions()
        # A full batch must fit in the look-ahead window, or the loop would wait forever.
        self.opts = replace(opts, lookahead=max(opts.lookahead,
                                                opts.timing_batch + opts.compile_workers))
        self.isolation = resolve_isolation(self.opts.isolation)
        self.measure_cpus, self.compile_cpus = split_cpus(self.isolation)
        self.default_info: DefaultInfo | None = None
        self.restarts = 0
        # Paired engine: every batch is timed in each measurement process, and the labels
        # are combined (replicas.py); ``_phase`` is the process timing now (the first of a
        # wave, pipeline.py).
        self.traits = traits_of(spec.engine)
        self.processes = max(1, spec.processes) if self.traits.replicated else 1
        self._measures: list[WorkerProcess | None] = [None] * self.processes
        # Per slot: the rounds its process has timed (round_board.py), read for progress.
        self._boards: list[RoundBoard] = [RoundBoard() for _ in range(self.processes)]
        self._phase = 0
        self._holding: set[int] = set()  # processes holding a loaded batch (pipeline.py)
        self._compilers: list[WorkerProcess] = []

    def _conn(self, phase: int) -> Connection:
        measure = self._measures[phase]
        assert measure is not None
        return measure.conn

    @property
    def _measurer(self) -> WorkerProcess:
        """The measurement worker timing now: started by ``start()``, replaced after it
        died."""
        measure = self._measures[self._phase]
        assert measure is not None, "start() the measurer first"
        return measure

    def _spawn_measure(self, slot: int) -> None:
        self._boards[slot] = RoundBoard()  # a dead process's last counts are not the new one's
        self._measures[slot] = WorkerProcess(measure_main, self.spec, self.measure_cpus,
                                             self._boards[slot])

    def _await_measure(self, slot: int) -> None:
        measure = self._measures[slot]
        assert measure is not None
        if not measure.conn.poll(self.opts.timeout_s * READY_TIMEOUTS + READY_START_S):
            measure.kill()
            limit = self.opts.timeout_s * READY_TIMEOUTS + READY_START_S
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
        if slot == 0 or self.default_info is None:
            self.default_info = payload

    def _pause_list(self) -> list[int]:
        """PIDs stopped during timed rounds (isolation ``pause``)."""
        return [p.pid for p in self._compilers] if self.isolation == "pause" else []

    def _new_compiler(self) -> WorkerProcess:
        return WorkerProcess(compile_main, self.spec, self.compile_cpus)

    def start(self) -> DefaultInfo:
        if not self._compilers:
            count = max(1, self.opts.compile_workers)
            self._compilers = [self._new_compiler() for _ in range(count)]
        missing = [slot for slot, m in enumerate(self._measures) if m is None]
        for slot in missing:  # start together: each imports jax and compiles the default
            self._spawn_measure(slot)
        for slot in missing:
            self._await_measure(slot)
        assert self.default_info is not None  # set by _await_measure, or it raised
        return self.default_info

    def close(self, now: bool = False) -> None:
        """Stop every worker: asked to exit (each may finish what it does, up to 10 s), or
        ``now`` (an error or Ctrl-C): killed at once, mid-round or stopped by the pause
        isolation alike; what was measured is journaled already (collect/journal.py)."""
        procs = [*self._compilers, *(m for m in self._measures if m)]
        if now:
            for proc in procs:
                proc.proc.kill()
        for proc in procs:
            if now:
                proc.kill()
            else:
                proc.stop()
        self._compilers = []
        self._measures = [None] * self.processes
        self._phase = 0
        self._holding.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_exc: object) -> None:
        self.close(now=kind is not None)

    def _replace_compiler(self, slot: int, restart: bool = True) -> None:
        self._compilers[slot].kill()
        self._compilers[slot] = self._new_compiler()
        self.restarts += int(restart)

    def _respawn(self, slot: int) -> None:
        """Replace the measurement process in ``slot`` (dead or hung) with a fresh one."""
        measure = self._measures[slot]
        assert measure is not None
        measure.kill()
        self._holding.discard(slot)
        self._spawn_measure(slot)
        self._await_measure(slot)
        self.restarts += 1
