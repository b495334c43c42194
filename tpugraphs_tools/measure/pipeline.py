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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from multiprocessing.connection import wait

from tpugraphs_tools.measure import workers as W
from tpugraphs_tools.measure.processes import (
    WorkerProcess,
    resolve_isolation,
    signal_all,
    split_cpus,
)
from tpugraphs_tools.measure.replicas import ProcessSpread, combine
from tpugraphs_tools.measure.worker import (
    CRASH,
    DUPLICATE,
    NOOP,
    OK,
    TIMEOUT,
    Batch,
    Compiled,
    ConfigResult,
    DefaultInfo,
    Job,
    SessionSpec,
    WorkerError,
)

OnResult = Callable[[ConfigResult], None]

REPEATS_PER_BATCH = 2  # paired engine: earlier configs re-timed per batch (between-window SD)


@dataclass
class PipelineOptions:
    """How the workers are driven (derived from MeasureOptions in measure/options.py)."""

    compile_workers: int = 1
    timing_batch: int = 16    # configs timed together against one default per round
    timeout_s: float = 120.0
    isolation: str = "auto"   # auto | pin | pause | none (processes.resolve_isolation)
    lookahead: int = 8


@dataclass
class _Compiling:
    job: Job
    started: float


class PipelinedMeasurer:
    """Measure many configs of one graph; ``run`` streams results to a callback."""

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
        self.repeats_sent = 0
        self._timed_ok: list[Compiled] = []  # compiled items timed ok (repeat pool)
        # Paired engine: every batch is timed in each measurement process in turn, and the
        # labels are combined (replicas.py); ``_phase`` is the process timing now.
        self.processes = max(1, spec.processes) if spec.engine == "paired" else 1
        self.spread = ProcessSpread()
        self._measures: list[WorkerProcess | None] = [None] * self.processes
        self._phase = 0
        self._compilers: list[WorkerProcess] = []

    # -- worker management ---------------------------------------------------------------
    @property
    def _measurer(self) -> WorkerProcess:
        """The measurement worker timing now: started by ``start()``, replaced after it
        died."""
        measure = self._measures[self._phase]
        assert measure is not None, "start() the measurer first"
        return measure

    def _start_measure(self, slot: int | None = None) -> None:
        slot = self._phase if slot is None else slot
        self._spawn_measure(slot)
        self._await_measure(slot)

    def _spawn_measure(self, slot: int) -> None:
        self._measures[slot] = WorkerProcess(W.measure_main, self.spec, self.measure_cpus)

    def _await_measure(self, slot: int) -> None:
        measure = self._measures[slot]
        assert measure is not None
        if not measure.conn.poll(self.opts.timeout_s * 2 + 60):
            measure.kill()
            raise WorkerError("measurement worker did not finish the default config in time")
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
        """PIDs the measurement worker stops during timed rounds (isolation ``pause``)."""
        return [p.pid for p in self._compilers] if self.isolation == "pause" else []

    def _new_compiler(self) -> WorkerProcess:
        return WorkerProcess(W.compile_main, self.spec, self.compile_cpus)

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

    def close(self) -> None:
        for proc in [*self._compilers, *(m for m in self._measures if m)]:
            proc.stop()
        self._compilers = []
        self._measures = [None] * self.processes
        self._phase = 0

    def __enter__(self) -> PipelinedMeasurer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the loop --------------------------------------------------------------------------
    def run(self, jobs: Iterable[Job], known: dict[str, int], on_result: OnResult,
            stop: Callable[[], bool] = lambda: False,
            context: Callable[[], list[tuple[float, float]]] = list) -> None:
        """Measure ``jobs``; ``known`` maps dedupe keys to config indices (default → 0).

        Once ``stop()`` is true no further job is compiled; jobs in flight still finish.
        ``context()`` gives the ratio CIs of configs finished so far (paired engine: a batch
        stops a config once it is separated from its rank neighbours among them).
        """
        self.start()
        todo = deque(jobs)
        compiling: dict[int, _Compiling] = {}       # compiler slot -> job in flight
        compiled: deque[Compiled] = deque()   # waiting to be timed
        singles: deque[Compiled] = deque()    # retried alone after a batch died
        batch: list[Compiled] = []
        batch_started = 0.0
        message = Batch([])
        timed_by: list[list[ConfigResult]] = []  # the batch's results per process so far
        timeout = self.opts.timeout_s
        # fresh_compiler_per_job: slots whose worker exited, restarted once no round is timed
        # (a new process is not in the round's pause list).
        recycle: set[int] = set()

        while todo or compiling or compiled or singles or batch:
            if recycle and not batch:
                for slot in recycle:
                    self._replace_compiler(slot, restart=False)
                recycle.clear()
            if todo and stop():
                todo.clear()
            in_flight = len(compiling) + len(compiled) + len(batch)
            for slot, proc in enumerate(self._compilers):
                if (slot not in compiling and slot not in recycle and todo
                        and in_flight < self.opts.lookahead):
                    job = todo.popleft()
                    proc.conn.send(job)
                    compiling[slot] = _Compiling(job, time.monotonic())
                    in_flight += 1
            if not batch and (singles or compiled):
                done_compiling = not todo and not compiling
                if singles:
                    batch = [singles.popleft()]
                elif len(compiled) >= self.opts.timing_batch or done_compiling:
                    batch = [compiled.popleft() for _ in range(min(self.opts.timing_batch,
                                                                   len(compiled)))]
                if batch:
                    message = Batch([*batch, *self._repeat(singles)], self._pause_list(),
                                    context())
                    self._phase, timed_by = 0, []
                    self._measurer.conn.send(message)
                    batch_started = time.monotonic()

            conns = [self._compilers[s].conn for s in compiling]
            if batch:
                conns.append(self._measurer.conn)
            if not conns:
                continue
            deadlines = [c.started + timeout for c in compiling.values()]
            if batch:
                deadlines.append(batch_started + self._batch_limit(len(batch)))
            ready = wait(conns, timeout=max(0.0, min(deadlines) - time.monotonic()))

            for slot in list(compiling):
                proc = self._compilers[slot]
                if proc.conn in ready:
                    flight = compiling.pop(slot)
                    try:
                        kind, payload = proc.conn.recv()
                    except (EOFError, ConnectionError):
                        on_result(ConfigResult(flight.job.index, CRASH,
                                               error=proc.exit_description()))
                        self._replace_compiler(slot)
                        continue
                    if kind == "result":
                        on_result(payload)
                    elif payload.key in known:
                        first = known[payload.key]
                        on_result(ConfigResult.of(payload, NOOP if first == 0 else DUPLICATE,
                                                  duplicate_of=first))
                    else:
                        known[payload.key] = payload.index
                        compiled.append(payload)
                    if self.spec.fresh_compiler_per_job:
                        recycle.add(slot)
                elif time.monotonic() - compiling[slot].started > timeout:
                    flight = compiling.pop(slot)
                    on_result(ConfigResult(flight.job.index, TIMEOUT,
                                           error=f"compile gave no result within {timeout:.0f}"
                                                 " s; worker killed"))
                    self._replace_compiler(slot)

            if batch and self._measurer.conn in ready:
                try:
                    _kind, results = self._measurer.conn.recv()
                except (EOFError, ConnectionError):
                    self._measure_failed(batch, self._measurer.exit_description(), CRASH,
                                         singles, on_result)
                else:
                    paused = max((r.paused_seconds for r in results), default=0.0)
                    for flight in compiling.values():  # stopped compiles did not progress
                        flight.started += paused
                    timed_by.append(results)
                    if self._phase + 1 < self.processes:  # the next process times it too
                        self._phase += 1
                        k = next((r.runs_per_sample for r in results if r.runs_per_sample),
                                 None)
                        # the compile workers alive now (any replaced since the first)
                        message = replace(message, runs_per_sample=k, pause=self._pause_list())
                        self._measurer.conn.send(message)
                        batch_started = time.monotonic()
                        continue
                    self._phase = 0
                    if len(timed_by) > 1:
                        results = combine(timed_by, self.spread, self.spec.stop.confidence)
                    ok = {r.index for r in results if r.status == OK and r.repeat_of is None}
                    # Keep the latest few (serialized executables are big) to re-time.
                    self._timed_ok = [*self._timed_ok,
                                      *(item for item in batch if item.index in ok)][-8:]
                    for result in results:
                        on_result(result)
                batch = []
            elif batch and time.monotonic() - batch_started > self._batch_limit(len(batch)):
                self._measure_failed(batch, f"no result within "
                                     f"{self._batch_limit(len(batch)):.0f} s; worker killed",
                                     TIMEOUT, singles, on_result)
                batch = []
        for slot in recycle:  # the next run() must find live workers
            self._replace_compiler(slot, restart=False)

    def _batch_limit(self, items: int) -> float:
        """Seconds before a timing batch counts as hung: ``timeout`` per item (control
        included) plus, for the paired engine, every item's timing budget (its own samples
        and its share of the default's, ≤ 2 × ``max_seconds_per_config``)."""
        limit = self.opts.timeout_s * (items + 1)
        if self.spec.engine == "paired":
            limit += 2 * self.spec.stop.max_seconds_per_config * (items + 1 + REPEATS_PER_BATCH)
        return limit

    def _repeat(self, singles: deque[Compiled]) -> list[Compiled]:
        """Paired engine: configs of earlier batches timed again in this one, so the labels' CIs
        can include the variance between timing windows (collect/labels.py widens them)."""
        if self.spec.engine != "paired" or not self._timed_ok or singles:
            return []
        picked = []
        for _ in range(min(REPEATS_PER_BATCH, len(self._timed_ok))):
            item = self._timed_ok[self.repeats_sent % len(self._timed_ok)]
            self.repeats_sent += 1
            picked.append(replace(item, repeat_of=item.index))
        return picked

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
                raise WorkerError("the default config could not be timed in time")
            try:
                _kind, results = self._measurer.conn.recv()
            except (EOFError, ConnectionError):
                self._phase = 0
                raise WorkerError("measurement worker died timing the default: "
                                  + self._measurer.exit_description()) from None
            timed_by.append(results)
            k = next((r.runs_per_sample for r in results if r.runs_per_sample), None)
        self._phase = 0
        results = combine(timed_by, self.spread, self.spec.stop.confidence) \
            if len(timed_by) > 1 else timed_by[0]
        for result in results:
            on_result(result)

    def _replace_compiler(self, slot: int, restart: bool = True) -> None:
        self._compilers[slot].kill()
        self._compilers[slot] = self._new_compiler()
        self.restarts += int(restart)

    def _measure_failed(self, batch: list[Compiled], message: str, status: str,
                        singles: deque[Compiled], on_result: OnResult) -> None:
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
        self._start_measure()
        self._phase = 0  # the batch's results so far are dropped: it is timed again whole
