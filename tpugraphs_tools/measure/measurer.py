"""Pipelined measurement: compile workers run ahead while one process at a time times undisturbed.

Compile workers (``--workers N``) compile configs, read the optimized HLO back and serialize
the executable; the parent de-duplicates on (optimized fingerprint, options) *before* anything
is timed, so no-ops and duplicates cost no device time (``compile_side.py``). Measurement
processes deserialize executables (milliseconds), check numerics and time them in batches
against the default config (``timing_side.py``). Isolation keeps compilation off the timed
runs: ``pin`` gives the measurement processes the first CPU and the compile workers the others
(many-core hosts); ``pause`` lets the measurement use every CPU and stops the compile workers
(SIGSTOP/SIGCONT) for exactly the timed rounds, so they compile during everything else
(few-core hosts). The paired engine keeps ``SessionSpec.processes`` measurement processes and
times every batch in each in turn: what all copies in one process share varies between them,
and the labels' CIs include it (stats/replicas.py).

One :class:`Measurer` owns its worker pool, both sides and the graph's state
(:class:`GraphState`), which :meth:`Measurer.switch` replaces whole when the same workers
move on to another graph (:class:`SharedWorkers`: the kernels of a tile collection).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from multiprocessing.connection import wait
from typing import Self

from tpugraphs_tools.errors import WorkerError
from tpugraphs_tools.measure.compile_side import CompileSide, OnResult
from tpugraphs_tools.measure.engines import traits_of
from tpugraphs_tools.measure.messages import DefaultInfo, Job, SessionSpec
from tpugraphs_tools.measure.run_state import (
    GraphState,
    PipelineOptions,
    RunState,
    Session,
    Wave,
)
from tpugraphs_tools.measure.timing_side import Context, OnProgress, TimingSide
from tpugraphs_tools.measure.workers.compile_worker import compile_main
from tpugraphs_tools.measure.workers.measure_worker import measure_main
from tpugraphs_tools.measure.workers.pool import WorkerMains, WorkerPool

WORKER_MAINS = WorkerMains(measure=measure_main, compile=compile_main)


class Measurer:
    """Measure many configs of one graph (then, :meth:`switch`, of the next); ``run`` streams
    results to a callback. A context manager that stops its workers."""

    def __init__(self, session: Session, mains: WorkerMains = WORKER_MAINS) -> None:
        spec, pipeline = session.spec, session.pipeline
        self.traits = traits_of(spec.engine)
        if spec.processes > 1 and not self.traits.replicated:
            raise ValueError(f"the {spec.engine} engine times a batch in one process, "
                             f"not {spec.processes}")
        # A full batch must fit in the look-ahead window, or the loop would wait forever.
        self.opts = replace(pipeline, lookahead=max(
            pipeline.lookahead, pipeline.timing_batch + pipeline.compile_workers))
        self.pool = WorkerPool(spec, self.opts, max(1, spec.processes), mains)
        self.compiling = CompileSide(self.pool)
        self.timing = TimingSide(self.pool, self.traits)
        self.graph = GraphState.fresh(spec, self.traits.repeats_per_batch)

    @property
    def spec(self) -> SessionSpec:
        return self.graph.spec

    @property
    def restarts(self) -> int:
        """Workers replaced after they crashed or hung, over this measurer's life."""
        return self.pool.restarts

    def start(self) -> DefaultInfo:
        """Start the missing workers; the graph's default as its measurement processes
        compiled and checked it."""
        for slot, info in self.pool.start():
            self.graph.ready(slot, info)
        assert self.graph.default_info is not None  # a process is ready, or start() raised
        return self.graph.default_info

    def run(self, jobs: Iterable[Job], known: dict[str, int], on_result: OnResult,
            stop: Callable[[], bool] = lambda: False, context: Context = list,
            on_progress: OnProgress | None = None) -> None:
        """Measure ``jobs``; ``known`` maps dedupe keys to config indices (default → 0).

        Once ``stop()`` is true no further job is compiled; jobs in flight still finish.
        ``context()`` gives the ratio CIs of configs finished so far (paired engine: a batch
        stops a config once it is separated from its rank neighbours among them).
        ``on_progress`` hears where the batch being timed stands, when it is sent and then
        at least every ``timing_side.PROGRESS_EVERY_S`` until its results come.
        """
        self.start()
        self.timing.on_progress = on_progress
        state = RunState(deque(jobs))
        graph = self.graph
        while state.busy:
            if state.recycle and not state.batch:
                self.compiling.recycle(state)
            if state.todo and stop():
                state.todo.clear()
            self.compiling.feed(state)
            if not state.batch and (state.singles or state.compiled):
                self.timing.send_batch(state, graph, context, on_result)
            ready = self._wait(state)
            self.timing.report(state, graph)
            if ready is None:
                continue
            self.compiling.receive(state, ready, known, on_result)
            if state.batch:
                self.timing.receive(state, graph, ready, on_result)
        self.compiling.recycle(state)  # the next run() must find live workers

    def run_control(self, on_result: OnResult) -> None:
        """Paired engine: time the A/A control alone against the default (a graph none of
        whose configs reached timing still gets its default measured in a batch window)."""
        self.start()
        self.timing.run_control(self.graph, on_result)

    def switch(self, session: Session) -> None:
        """Move the live workers on to ``session``'s graph; nothing of the previous graph's
        state is kept (the repeat pool, the between-process spread, the wave, the default).
        A worker that failed on the new default leaves its slot to ``start()``."""
        self.graph = GraphState.fresh(session.spec, self.traits.repeats_per_batch)
        for slot, info in self.pool.switch(session.spec):
            self.graph.ready(slot, info)

    def close(self, now: bool = False) -> None:
        """Stop every worker (``now``: killed at once, :meth:`WorkerPool.close`)."""
        self.pool.close(now)
        self.graph.wave = Wave()   # no process holds or times a batch any more

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_exc: object) -> None:
        self.close(now=kind is not None)

    def _wait(self, state: RunState) -> Sequence[object] | None:
        """Wait for a worker's message or the nearest deadline; None when nothing is out."""
        conns = [self.pool.compilers[s].conn for s in state.compiling]
        deadlines = [c.started + self.opts.timeout_s for c in state.compiling.values()]
        if state.batch:
            conns.extend(self.timing.conns(self.graph))
            deadlines.append(self.timing.deadline(state, self.graph))
        if not conns:
            return None
        return wait(conns, timeout=max(0.0, min(deadlines) - time.monotonic()))


class SharedWorkers:
    """One set of worker processes for several graphs measured one after the other.

    Why: a tile collection measures dozens of small kernels, each with its own default config.
    A fresh :class:`Measurer` per kernel starts ``SessionSpec.processes`` measurement
    processes and the compile workers again, each importing jax and initialising a backend
    (seconds per process, on every kernel). Here they start once and the live workers are
    handed the next kernel's spec instead: a measurement process compiles and checks the new
    default and builds a fresh engine (``workers/measure_worker.py``), a compile worker
    switches to the new base text and options (``workers/compile_worker.py``); the graph's
    state is replaced whole (:meth:`Measurer.switch`) and each engine calibrates its own
    samples. A compile worker that exits after each job (``fresh_compiler_per_job``) still
    does. ``reuse`` False: fresh workers per graph, as a :class:`Measurer` of its own.
    """

    def __init__(self, reuse: bool = True) -> None:
        self.reuse = reuse
        self._measurer: Measurer | None = None
        self._pipeline: PipelineOptions | None = None

    def session(self, session: Session) -> Measurer:
        """A measurer for ``session``'s graph, its workers started (or switched) and its
        default ready. Raises WorkerError when the default cannot be compiled or run; the
        workers are then closed, and the next graph starts fresh ones."""
        measurer = self._measurer
        try:
            if (measurer is None or not self.reuse or session.pipeline != self._pipeline
                    or not _compatible(measurer.spec, session.spec)):
                self.close()
                measurer = self._measurer = Measurer(session)
                self._pipeline = session.pipeline
            else:
                measurer.switch(session)
            measurer.start()
        except WorkerError:
            self.close()
            raise
        return measurer

    def close(self, now: bool = False) -> None:
        """Stop the workers (``now``: killed at once, WorkerPool.close)."""
        if self._measurer is not None:
            self._measurer.close(now)
            self._measurer = None

    def __enter__(self) -> SharedWorkers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_exc: object) -> None:
        self.close(now=kind is not None)


def _compatible(old: SessionSpec, new: SessionSpec) -> bool:
    """Workers switch graphs only within one engine, process count, backend and compile-worker
    lifetime."""
    return ((old.engine, old.processes, old.backend, old.fresh_compiler_per_job)
            == (new.engine, new.processes, new.backend, new.fresh_compiler_per_job))
