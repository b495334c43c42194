"""The timing side of the measurement loop: batches to the measurement processes, labels back.

Why apart from the compile side (``compile_side.py``): what is timed, in which process and
when (waves of ``--timing-lanes`` processes, the batch loaded by every process at once, the
compile workers stopped for the timed rounds), how a process that dies or hangs is replaced
and its batch retried, and how the processes' labels are combined (stats/replicas.py) touch
only the measurement processes and the graph's state (:class:`GraphState`).

Crashes and hangs become ``crash``/``timeout`` records; a batch whose process died is retried
one config at a time so a single bad config cannot take valid ones down.
"""

from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from multiprocessing.connection import Connection

from tpugraphs_tools.measure.engines.base import Traits
from tpugraphs_tools.measure.messages import (
    Batch,
    Compiled,
    DefaultTimeoutError,
    Go,
    WorkerError,
)
from tpugraphs_tools.measure.results import CRASH, OK, TIMEOUT, ConfigResult
from tpugraphs_tools.measure.run_state import GraphState, RunState
from tpugraphs_tools.measure.stats.racing import budget_share
from tpugraphs_tools.measure.stats.replicas import combine, partial_between
from tpugraphs_tools.measure.workers.pool import WorkerPool
from tpugraphs_tools.measure.workers.processes import available_cpus, lanes_for, signal_all
from tpugraphs_tools.measure.workers.round_board import BatchProgress, batch_progress

OnResult = Callable[[ConfigResult], None]
OnProgress = Callable[[BatchProgress], None]
Context = Callable[[], list[tuple[float, float]]]
# A timed item's budget is its own samples plus its share of the default's: at most twice
# ``max_seconds_per_config`` (stats/rounds.py charges the default's sample to the round).
BUDGET_SHARES = 2
# While a batch is timed and someone watches, the loop wakes at least this often to report
# its rounds (round_board.py).
PROGRESS_EVERY_S = 1.0


class TimingSide:
    """The timing half of a :class:`~tpugraphs_tools.measure.measurer.Measurer`: it drives
    the pool's measurement processes, ``lanes`` of them timing at once."""

    def __init__(self, pool: WorkerPool, traits: Traits) -> None:
        self.pool = pool
        self.traits = traits
        self.lanes = lanes_for(pool.opts.timing_lanes, pool.processes, pool.isolation)
        self.on_progress: OnProgress | None = None   # the run's watcher (Measurer.run)

    # -- what the loop waits on ------------------------------------------------------------
    def conns(self, graph: GraphState) -> list[Connection]:
        """The pipes of the processes timing the batch now."""
        return [self.pool.conn(p) for p in graph.wave.timing]

    def deadline(self, state: RunState, graph: GraphState) -> float:
        """When the batch out counts as hung, or sooner when its progress is due."""
        limit = state.batch_started + self._batch_limit(graph, len(state.batch))
        if self.on_progress is not None:
            return min(limit, time.monotonic() + PROGRESS_EVERY_S)
        return limit

    def report(self, state: RunState, graph: GraphState) -> None:
        """Tell ``on_progress`` where the batch out now stands (nothing without one)."""
        if self.on_progress is None or not state.batch:
            return
        timing = graph.wave.timing
        self.on_progress(batch_progress(
            graph.batches, tuple(item.index for item in state.batch), self.pool.processes,
            timing, [self.pool.boards[p].read() for p in timing],
            loaded=len(graph.wave.holding)))

    # -- a batch out and back --------------------------------------------------------------
    def send_batch(self, state: RunState, graph: GraphState, context: Context,
                   on_result: OnResult) -> None:
        """Send the next batch to the first measurement process: a config retried alone, a
        full batch, or what is left once nothing is compiling. With several processes, every
        process loads it first, all at once (``_preload``)."""
        done_compiling = not state.todo and not state.compiling
        if state.singles:
            state.batch = [state.singles.popleft()]
        elif len(state.compiled) >= self.pool.opts.timing_batch or done_compiling:
            size = min(self.pool.opts.timing_batch, len(state.compiled))
            state.batch = [state.compiled.popleft() for _ in range(size)]
        if not state.batch:
            return
        later = (len(state.todo) + len(state.compiling) + len(state.compiled)
                 + len(state.singles))
        share = budget_share(graph.spec.stop.budget_seconds, state.spent, len(state.batch),
                             later)
        earlier = graph.spread.between()[0] if graph.spread.own else None  # past batches
        state.message = Batch([*state.batch, *graph.repeats.pick(state.singles)],
                              self.pool.pause_pids(), context(), budget_seconds=share,
                              process_var=earlier)
        graph.wave.phase, state.timed_by = 0, []
        graph.batches += 1
        self.report(state, graph)   # loading: every process at once, or the first
        if self.pool.processes > 1:
            if self._preload(state, graph, on_result):
                self._start_wave(state, graph, 0, None, state.message.process_var)
        else:
            self.pool.conn(graph.wave.phase).send(state.message)
            graph.wave.timing = [0]
            state.batch_started = time.monotonic()

    def receive(self, state: RunState, graph: GraphState, ready: Sequence[object],
                on_result: OnResult) -> None:
        """Take the results of the processes timing now, or fail the batch in the first of
        them once it ran past its limit."""
        if any(conn in ready for conn in self.conns(graph)):
            self._receive_timed(state, graph, ready, on_result)
        elif time.monotonic() - state.batch_started > self._batch_limit(graph, len(state.batch)):
            limit = self._batch_limit(graph, len(state.batch))
            self._timing_failed(state, graph, graph.wave.timing[0],
                                f"no result within {limit:.0f} s; worker killed", TIMEOUT,
                                on_result)

    def run_control(self, graph: GraphState, on_result: OnResult) -> None:
        """Paired engine: time the A/A control alone against the default (a graph none of
        whose configs reached timing still gets its default measured in a batch window)."""
        pause = self.pool.pause_pids()
        timed_by: list[list[ConfigResult]] = []
        k = None
        for phase in range(self.pool.processes):
            measure = self.pool.measure(phase)
            measure.conn.send(Batch([], pause, runs_per_sample=k))
            if not measure.conn.poll(self.pool.opts.timeout_s):
                measure.kill()
                signal_all(pause, signal.SIGCONT)
                self.pool.measures[phase] = None
                raise DefaultTimeoutError(
                    f"the default config was not timed within --timeout "
                    f"{self.pool.opts.timeout_s:g} s", self.pool.opts.timeout_s)
            try:
                _kind, results = measure.conn.recv()
            except (EOFError, ConnectionError):
                raise WorkerError("measurement worker died timing the default: "
                                  + measure.exit_description()) from None
            timed_by.append(results)
            k = next((r.runs_per_sample for r in results if r.runs_per_sample), None)
        results = combine(timed_by, graph.spread, graph.spec.stop.confidence,
                          item_spread=graph.spec.item_spread) \
            if len(timed_by) > 1 else timed_by[0]
        for result in results:
            on_result(result)

    # -- waves -----------------------------------------------------------------------------
    def _start_wave(self, state: RunState, graph: GraphState, first: int, k: int | None,
                    process_var: float | None) -> None:
        """Let the next ``lanes`` processes holding the batch time it. One lane: the process
        stops the compile workers for its timed rounds. Several: each is pinned to a CPU of
        its own and this process stops the compile workers for the whole wave."""
        wave = graph.wave
        wave.timing = list(range(first, min(first + self.lanes, self.pool.processes)))
        lanes = self.lanes > 1
        if lanes:
            signal_all(self.pool.pause_pids(), signal.SIGSTOP)
            wave.paused_at = time.monotonic()
        cpus = available_cpus()
        for lane, phase in enumerate(wave.timing):
            wave.holding.discard(phase)
            self.pool.conn(phase).send(Go(
                [] if lanes else self.pool.pause_pids(), runs_per_sample=k,
                process_var=process_var,
                cpus={cpus[lane % len(cpus)]} if lanes else None))
        state.batch_started = time.monotonic()

    def _preload(self, state: RunState, graph: GraphState, on_result: OnResult) -> bool:
        """Every measurement process checks and loads the batch at once, then holds it until
        its turn to time it (a ``Go``). Loading is most of a process's non-timed work (the
        copies' deserialization and first runs): done side by side it uses the CPUs the
        one-at-a-time timing leaves idle. False: a process died or hung loading; the batch
        failed as a timing failure would (its configs retried alone)."""
        message = replace(state.message, hold=True)
        for slot in range(self.pool.processes):
            self.pool.conn(slot).send(message)
        timeout = self.pool.opts.timeout_s
        deadline = time.monotonic() + timeout * (len(state.batch) + 1)
        failed: dict[int, tuple[str, str]] = {}
        for phase in range(self.pool.processes):
            measure = self.pool.measure(phase)
            if not self._loaded(measure.conn, deadline, state, graph):
                failed[phase] = (TIMEOUT, f"no batch loaded within {timeout:.0f}"
                                          " s per config; worker killed")
                continue
            try:
                measure.conn.recv()
            except (EOFError, ConnectionError):
                failed[phase] = (CRASH, measure.exit_description())
                continue
            graph.wave.holding.add(phase)
        if not failed:
            return True
        first = min(failed)
        for phase in failed:
            if phase != first:
                self._respawn(graph, phase)
        graph.wave.phase = first
        status, why = failed[first]
        self._measure_failed(state, graph, why, status, on_result)
        return False

    def _loaded(self, conn: Connection, deadline: float, state: RunState,
                graph: GraphState) -> bool:
        """Whether a process answered "loaded" by ``deadline``; reports the batch while it
        waits (the processes load at once: tens of seconds for a large graph)."""
        while True:
            left = deadline - time.monotonic()
            step = min(left, PROGRESS_EVERY_S) if self.on_progress is not None else left
            if conn.poll(max(0.0, step)):
                return True
            if left <= step:
                return False
            self.report(state, graph)

    def _receive_timed(self, state: RunState, graph: GraphState, ready: Sequence[object],
                       on_result: OnResult) -> None:
        """Take the results of the processes timing now; once the wave is done, send the batch
        on to the next processes, or combine the processes' labels and report them."""
        wave = graph.wave
        for phase in [p for p in wave.timing if self.pool.conn(p) in ready]:
            try:
                _kind, results = self.pool.conn(phase).recv()
            except (EOFError, ConnectionError):
                self._timing_failed(state, graph, phase,
                                    self.pool.measure(phase).exit_description(), CRASH,
                                    on_result)
                return
            wave.timing.remove(phase)
            wave.results[phase] = results
        if wave.timing:
            return
        paused = max((r.paused_seconds for rs in wave.results.values() for r in rs),
                     default=0.0)
        if wave.paused_at is not None:
            signal_all(self.pool.pause_pids(), signal.SIGCONT)
            paused, wave.paused_at = time.monotonic() - wave.paused_at, None
        for flight in state.compiling.values():  # stopped compiles did not progress
            flight.started += paused
        timed = [wave.results[p] for p in sorted(wave.results)]
        wave.results.clear()
        state.timed_by.extend(timed)
        state.spent += (sum(r.timed_seconds or 0.0 for rs in timed for r in rs)
                        / self.pool.processes)
        done = len(state.timed_by)
        if done < self.pool.processes:  # the next processes time it too
            k = next((r.runs_per_sample for rs in timed for r in rs if r.runs_per_sample),
                     None)
            self._start_wave(state, graph, done, k, partial_between(state.timed_by,
                                                                    graph.spread))
            return
        wave.phase = 0
        results = state.timed_by[0]
        if len(state.timed_by) > 1:
            results = combine(state.timed_by, graph.spread, graph.spec.stop.confidence,
                              item_spread=graph.spec.item_spread)
        ok = {r.index for r in results if r.status == OK and r.repeat_of is None}
        graph.repeats.keep(item for item in state.batch if item.index in ok)
        for result in results:
            on_result(result)
        state.batch = []

    # -- failures --------------------------------------------------------------------------
    def _timing_failed(self, state: RunState, graph: GraphState, phase: int, message: str,
                       status: str, on_result: OnResult) -> None:
        """A process died or hung timing the batch: the others of its wave are replaced (their
        results would answer the next batch) and the batch fails in ``phase``."""
        wave = graph.wave
        for other in wave.timing:
            if other != phase:
                self._respawn(graph, other)
        wave.timing, wave.paused_at = [], None
        wave.results.clear()
        wave.phase = phase
        self._measure_failed(state, graph, message, status, on_result)

    def _measure_failed(self, state: RunState, graph: GraphState, message: str, status: str,
                        on_result: OnResult) -> None:
        """The batch failed in the process ``wave.phase``: the others drop it untimed, that
        process is replaced, and the batch's configs are retried one at a time (a batch of
        one is that config's failed result)."""
        wave = graph.wave
        for slot in wave.holding - {wave.phase}:  # loaded this batch: drop it untimed
            self.pool.conn(slot).send(Go(cancel=True))
        wave.holding.clear()
        self.pool.measure(wave.phase).kill()
        # A worker killed mid-round may have left the compile workers stopped.
        signal_all([p.pid for p in self.pool.compilers], signal.SIGCONT)
        _retry_alone(state.batch, message, status, state.singles, on_result)
        state.batch = []
        self._respawn(graph, wave.phase)
        wave.phase = 0  # the batch's results so far are dropped: it is timed again whole

    def _respawn(self, graph: GraphState, slot: int) -> None:
        """A fresh measurement process in ``slot``, ready; it holds no batch."""
        graph.wave.holding.discard(slot)
        graph.ready(slot, self.pool.respawn(slot))

    def _batch_limit(self, graph: GraphState, items: int) -> float:
        """Seconds before a timing batch counts as hung: ``timeout`` per item (control
        included) plus, for an engine with a timing budget, every item's budget (its own
        samples and its share of the default's, ≤ 2 × ``max_seconds_per_config``)."""
        limit = self.pool.opts.timeout_s * (items + 1)
        if self.traits.budgeted:
            limit += (BUDGET_SHARES * graph.spec.stop.max_seconds_per_config
                      * (items + 1 + self.traits.repeats_per_batch))
        return limit


def _retry_alone(batch: list[Compiled], message: str, status: str, singles: deque[Compiled],
                 on_result: OnResult) -> None:
    """A failed batch's configs go back to be timed one at a time (isolating the culprit);
    a config that failed alone gets its failed result."""
    if len(batch) > 1:
        singles.extend(batch)
    else:
        item = batch[0]
        on_result(ConfigResult(item.index, status, error=message,
                               compile_seconds=item.compile_seconds, realized=item.realized))
