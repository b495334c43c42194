"""Pipelined measurement: compile workers run ahead while one worker at a time times undisturbed.

Compile workers (``--workers N``) compile configs, read the optimized HLO back and serialize the
executable; the parent de-duplicates on (optimized fingerprint, options) *before* anything is
timed, so no-ops and duplicates cost no device time. A measurement worker deserializes
executables (milliseconds), checks numerics and times them in batches against the default config
(``timing.time_batch``). Isolation keeps compilation off the timed runs: ``pin`` gives the
measurement worker the first CPU and the compile workers the others (many-core hosts); ``pause``
lets the measurement use every CPU and stops the compile workers (SIGSTOP/SIGCONT) for exactly
the timed rounds, so they compile during everything else (few-core hosts). The paired engine
keeps ``SessionSpec.processes`` measurement workers and times every batch in each in turn: what
all copies in one process share varies between them, and the labels' CIs include it
(replicas.py).

Crashes and hangs in either kind of worker become ``crash``/``timeout`` records; a batch whose
worker died is retried one config at a time so a single bad config cannot take valid ones down.
"""

from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from multiprocessing.connection import Connection, wait

from tpugraphs_tools.measure.compile_side import CompileSide, OnResult
from tpugraphs_tools.measure.messages import (
    Batch,
    Compiled,
    DefaultTimeoutError,
    Go,
    Job,
    SessionSpec,
    WorkerError,
)
from tpugraphs_tools.measure.results import CRASH, OK, TIMEOUT, ConfigResult
from tpugraphs_tools.measure.run_state import (
    PipelineOptions,
    RepeatPool,
    RunState,
)
from tpugraphs_tools.measure.stats.racing import budget_share
from tpugraphs_tools.measure.stats.replicas import ProcessSpread, combine, partial_between
from tpugraphs_tools.measure.workers.processes import (
    available_cpus,
    lanes_for,
    signal_all,
)
from tpugraphs_tools.measure.workers.round_board import BatchProgress, batch_progress

# A timed item's budget is its own samples plus its share of the default's: at most twice
# ``max_seconds_per_config`` (measure/paired.py charges the default's sample to the round).
BUDGET_SHARES = 2
# While a batch is timed and someone watches, the loop wakes at least this often to report
# its rounds (round_board.py).
PROGRESS_EVERY_S = 1.0
OnProgress = Callable[[BatchProgress], None]


class PipelinedMeasurer(CompileSide):
    """Measure many configs of one graph; ``run`` streams results to a callback."""

    def __init__(self, spec: SessionSpec, options: PipelineOptions | None = None) -> None:
        super().__init__(spec, options)
        self.repeats = RepeatPool(self.traits.repeats_per_batch)
        self.spread = ProcessSpread()
        # Processes timing the batch now (a wave) and the results of those that finished;
        # ``lanes`` processes time at once (``PipelineOptions.timing_lanes``).
        self._timing: list[int] = []
        self._wave: dict[int, list[ConfigResult]] = {}
        self._wave_paused: float | None = None   # when this process stopped the compilers
        self.lanes = lanes_for(self.opts.timing_lanes, self.processes, self.isolation)
        self.batches = 0   # timing batches sent for this graph (numbered in BatchProgress)
        self._on_progress: OnProgress | None = None

    # -- the loop --------------------------------------------------------------------------
    def run(self, jobs: Iterable[Job], known: dict[str, int], on_result: OnResult,
            stop: Callable[[], bool] = lambda: False,
            context: Callable[[], list[tuple[float, float]]] = list,
            on_progress: OnProgress | None = None) -> None:
        """Measure ``jobs``; ``known`` maps dedupe keys to config indices (default → 0).

        Once ``stop()`` is true no further job is compiled; jobs in flight still finish.
        ``context()`` gives the ratio CIs of configs finished so far (paired engine: a batch
        stops a config once it is separated from its rank neighbours among them).
        ``on_progress`` hears where the batch being timed stands, when it is sent and then
        at least every :data:`PROGRESS_EVERY_S` until its results come.
        """
        self.start()
        self._on_progress = on_progress
        state = RunState(deque(jobs))
        while state.busy:
            if state.recycle and not state.batch:
                self._recycle(state)
            if state.todo and stop():
                state.todo.clear()
            self._feed_compilers(state)
            if not state.batch and (state.singles or state.compiled):
                self._send_batch(state, context, on_result)
            ready = self._wait(state)
            self._report(state)
            if ready is None:
                continue
            self._receive_compiled(state, ready, known, on_result)
            if state.batch and any(self._conn(p) in ready for p in self._timing):
                self._receive_timed(state, ready, on_result)
            elif state.batch and time.monotonic() - state.batch_started > \
                    self._batch_limit(len(state.batch)):
                self._timing_failed(state, self._timing[0], f"no result within "
                                    f"{self._batch_limit(len(state.batch)):.0f} s; worker "
                                    "killed", TIMEOUT, on_result)
        self._recycle(state)  # the next run() must find live workers

    def _send_batch(self, state: RunState, context: Callable[[], list[tuple[float, float]]],
                    on_result: OnResult) -> None:
        """Send the next batch to the first measurement process: a config retried alone, a
        full batch, or what is left once nothing is compiling. With several processes, every
        process loads it first, all at once (``_preload``)."""
        done_compiling = not state.todo and not state.compiling
        if state.singles:
            state.batch = [state.singles.popleft()]
        elif len(state.compiled) >= self.opts.timing_batch or done_compiling:
            size = min(self.opts.timing_batch, len(state.compiled))
            state.batch = [state.compiled.popleft() for _ in range(size)]
        if state.batch:
            later = (len(state.todo) + len(state.compiling) + len(state.compiled)
                     + len(state.singles))
            share = budget_share(self.spec.stop.budget_seconds, state.spent,
                                 len(state.batch), later)
            earlier = self.spread.between()[0] if self.spread.own else None  # past batches
            state.message = Batch([*state.batch, *self.repeats.pick(state.singles)],
                                  self._pause_list(), context(), budget_seconds=share,
                                  process_var=earlier)
            self._phase, state.timed_by = 0, []
            self.batches += 1
            self._report(state)   # loading: every process at once, or the first
            if self.processes > 1:
                if self._preload(state, on_result):
                    self._start_wave(state, 0, None, state.message.process_var)
            else:
                self._measurer.conn.send(state.message)
                self._timing = [0]
                state.batch_started = time.monotonic()

    def _start_wave(self, state: RunState, first: int, k: int | None,
                    process_var: float | None) -> None:
        """Let the next ``lanes`` processes holding the batch time it. One lane: the process
        stops the compile workers for its timed rounds. Several: each is pinned to a CPU of
        its own and this process stops the compile workers for the whole wave."""
        self._timing = list(range(first, min(first + self.lanes, self.processes)))
        lanes = self.lanes > 1
        if lanes:
            signal_all(self._pause_list(), signal.SIGSTOP)
            self._wave_paused = time.monotonic()
        cpus = available_cpus()
        for lane, phase in enumerate(self._timing):
            self._holding.discard(phase)
            self._conn(phase).send(Go(
                [] if lanes else self._pause_list(), runs_per_sample=k,
                process_var=process_var,
                cpus={cpus[lane % len(cpus)]} if lanes else None))
        state.batch_started = time.monotonic()

    def _preload(self, state: RunState, on_result: OnResult) -> bool:
        """Every measurement process checks and loads the batch at once, then holds it until
        its turn to time it (a ``Go``). Loading is most of a process's non-timed work (the
        copies' deserialization and first runs): done side by side it uses the CPUs the
        one-at-a-time timing leaves idle. False: a process died or hung loading; the batch
        failed as a timing failure would (its configs retried alone)."""
        message = replace(state.message, hold=True)
        for measure in self._measures:
            assert measure is not None
            measure.conn.send(message)
        deadline = time.monotonic() + self.opts.timeout_s * (len(state.batch) + 1)
        failed: dict[int, tuple[str, str]] = {}
        for phase, measure in enumerate(self._measures):
            assert measure is not None
            if not self._loaded(measure.conn, deadline, state):
                failed[phase] = (TIMEOUT, f"no batch loaded within {self.opts.timeout_s:.0f}"
                                          " s per config; worker killed")
                continue
            try:
                measure.conn.recv()
            except (EOFError, ConnectionError):
                failed[phase] = (CRASH, measure.exit_description())
                continue
            self._holding.add(phase)
        if not failed:
            return True
        first = min(failed)
        for phase in failed:
            if phase != first:
                self._respawn(phase)
        self._phase = first
        status, why = failed[first]
        self._measure_failed(state.batch, why, status, state.singles, on_result)
        state.batch = []
        return False

    def _loaded(self, conn: Connection, deadline: float, state: RunState) -> bool:
        """Whether a process answered "loaded" by ``deadline``; reports the batch while it
        waits (the processes load at once: tens of seconds for a large graph)."""
        while True:
            left = deadline - time.monotonic()
            step = min(left, PROGRESS_EVERY_S) if self._on_progress is not None else left
            if conn.poll(max(0.0, step)):
                return True
            if left <= step:
                return False
            self._report(state)

    def _wait(self, state: RunState) -> Sequence[object] | None:
        """Wait for a worker's message or the nearest deadline; None when nothing is out."""
        conns = [self._compilers[s].conn for s in state.compiling]
        deadlines = [c.started + self.opts.timeout_s for c in state.compiling.values()]
        if state.batch:
            conns.extend(self._conn(p) for p in self._timing)
            deadlines.append(state.batch_started + self._batch_limit(len(state.batch)))
        if not conns:
            return None
        if state.batch and self._on_progress is not None:
            deadlines.append(time.monotonic() + PROGRESS_EVERY_S)
        return wait(conns, timeout=max(0.0, min(deadlines) - time.monotonic()))

    def _report(self, state: RunState) -> None:
        """Tell ``on_progress`` where the batch out now stands (nothing without one)."""
        if self._on_progress is None or not state.batch:
            return
        self._on_progress(batch_progress(
            self.batches, tuple(item.index for item in state.batch), self.processes,
            self._timing, [self._boards[p].read() for p in self._timing],
            loaded=len(self._holding)))

    def _receive_timed(self, state: RunState, ready: Sequence[object],
                       on_result: OnResult) -> None:
        """Take the results of the processes timing now; once the wave is done, send the batch
        on to the next processes, or combine the processes' labels and report them."""
        for phase in [p for p in self._timing if self._conn(p) in ready]:
            try:
                _kind, results = self._conn(phase).recv()
            except (EOFError, ConnectionError):
                measure = self._measures[phase]
                assert measure is not None
                self._timing_failed(state, phase, measure.exit_description(), CRASH, on_result)
                return
            self._timing.remove(phase)
            self._wave[phase] = results
        if self._timing:
            return
        paused = max((r.paused_seconds for rs in self._wave.values() for r in rs), default=0.0)
        if self._wave_paused is not None:
            signal_all(self._pause_list(), signal.SIGCONT)
            paused, self._wave_paused = time.monotonic() - self._wave_paused, None
        for flight in state.compiling.values():  # stopped compiles did not progress
            flight.started += paused
        wave = [self._wave[p] for p in sorted(self._wave)]
        self._wave.clear()
        state.timed_by.extend(wave)
        state.spent += sum(r.timed_seconds or 0.0 for rs in wave for r in rs) / self.processes
        done = len(state.timed_by)
        if done < self.processes:  # the next processes time it too
            k = next((r.runs_per_sample for rs in wave for r in rs if r.runs_per_sample), None)
            self._start_wave(state, done, k, partial_between(state.timed_by, self.spread))
            return
        self._phase = 0
        results = state.timed_by[0]
        if len(state.timed_by) > 1:
            results = combine(state.timed_by, self.spread, self.spec.stop.confidence,
                              item_spread=self.spec.item_spread)
        ok = {r.index for r in results if r.status == OK and r.repeat_of is None}
        self.repeats.keep(item for item in state.batch if item.index in ok)
        for result in results:
            on_result(result)
        state.batch = []

    def _timing_failed(self, state: RunState, phase: int, message: str, status: str,
                       on_result: OnResult) -> None:
        """A process died or hung timing the batch: the others of its wave are replaced (their
        results would answer the next batch) and the batch fails in ``phase``."""
        for other in self._timing:
            if other != phase:
                self._respawn(other)
        self._timing, self._wave_paused = [], None
        self._wave.clear()
        self._phase = phase
        self._measure_failed(state.batch, message, status, state.singles, on_result)
        state.batch = []

    def _batch_limit(self, items: int) -> float:
        """Seconds before a timing batch counts as hung: ``timeout`` per item (control
        included) plus, for an engine with a timing budget, every item's budget (its own
        samples and its share of the default's, ≤ 2 × ``max_seconds_per_config``)."""
        limit = self.opts.timeout_s * (items + 1)
        if self.traits.budgeted:
            limit += (BUDGET_SHARES * self.spec.stop.max_seconds_per_config
                      * (items + 1 + self.traits.repeats_per_batch))
        return limit

    def run_control(self, on_result: OnResult) -> None:
        """Paired engine: time the A/A control alone against the default (a graph none of
        whose configs reached timing still gets its default measured in a batch window)."""
        self.start()
        pause = self._pause_list()
        timed_by: list[list[ConfigResult]] = []
        k = None
        for phase in range(self.processes):
            self._phase = phase
            self._measurer.conn.send(Batch([], pause, runs_per_sample=k))
            if not self._measurer.conn.poll(self.opts.timeout_s):
                self._measurer.kill()
                signal_all(pause, signal.SIGCONT)
                self._measures[phase], self._phase = None, 0
                raise DefaultTimeoutError(
                    f"the default config was not timed within --timeout "
                    f"{self.opts.timeout_s:g} s", self.opts.timeout_s)
            try:
                _kind, results = self._measurer.conn.recv()
            except (EOFError, ConnectionError):
                self._phase = 0
                raise WorkerError("measurement worker died timing the default: "
                                  + self._measurer.exit_description()) from None
            timed_by.append(results)
            k = next((r.runs_per_sample for r in results if r.runs_per_sample), None)
        self._phase = 0
        results = combine(timed_by, self.spread, self.spec.stop.confidence,
                          item_spread=self.spec.item_spread) \
            if len(timed_by) > 1 else timed_by[0]
        for result in results:
            on_result(result)

    def _measure_failed(self, batch: list[Compiled], message: str, status: str,
                        singles: deque[Compiled], on_result: OnResult) -> None:
        for slot in self._holding - {self._phase}:  # loaded this batch: drop it untimed
            measure = self._measures[slot]
            assert measure is not None
            measure.conn.send(Go(cancel=True))
        self._holding.clear()
        self._measurer.kill()
        # A worker killed mid-round may have left the compile workers stopped.
        signal_all([p.pid for p in self._compilers], signal.SIGCONT)
        self.restarts += 1
        if len(batch) > 1:
            singles.extend(batch)  # isolate the culprit: retry each config alone
        else:
            item = batch[0]
            on_result(ConfigResult(item.index, status, error=message,
                                   compile_seconds=item.compile_seconds, realized=item.realized))
        self._spawn_measure(self._phase)
        self._await_measure(self._phase)
        self._phase = 0  # the batch's results so far are dropped: it is timed again whole
