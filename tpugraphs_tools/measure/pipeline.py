"""Pipelined measurement: compile workers run ahead while one worker times undisturbed.

Compile workers (``--workers N``) compile configs, read the optimized HLO back and serialize the
executable; the parent de-duplicates on (optimized fingerprint, options) *before* anything is
timed, so no-ops and duplicates cost no device time. One measurement worker deserializes
executables (milliseconds), checks numerics and times them in batches against the default config
(``timing.time_batch``). Isolation keeps compilation off the timed runs: ``pin`` gives the
measurement worker the first CPU and the compile workers the others (many-core hosts); ``pause``
lets the measurement use every CPU and stops the compile workers (SIGSTOP/SIGCONT) for exactly
the timed rounds, so they compile during everything else (few-core hosts).

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
        self._measure: WorkerProcess | None = None
        self._compilers: list[WorkerProcess] = []

    # -- worker management ---------------------------------------------------------------
    @property
    def _measurer(self) -> WorkerProcess:
        """The measurement worker: started by ``start()``, replaced after it died."""
        assert self._measure is not None, "start() the measurer first"
        return self._measure

    def _start_measure(self) -> None:
        measure = self._measure = WorkerProcess(W.measure_main, self.spec, self.measure_cpus)
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
        self.default_info = payload

    def _new_compiler(self) -> WorkerProcess:
        return WorkerProcess(W.compile_main, self.spec, self.compile_cpus)

    def start(self) -> DefaultInfo:
        if not self._compilers:
            count = max(1, self.opts.compile_workers)
            self._compilers = [self._new_compiler() for _ in range(count)]
        if self._measure is None:
            self._start_measure()
        assert self.default_info is not None  # set by _start_measure, or it raised
        return self.default_info

    def close(self) -> None:
        for proc in [*self._compilers, *([self._measure] if self._measure else [])]:
            proc.stop()
        self._compilers = []
        self._measure = None

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
                    pause = ([p.pid for p in self._compilers]
                             if self.isolation == "pause" else [])
                    self._measurer.conn.send(Batch([*batch, *self._repeat(singles)], pause,
                                                   context()))
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
        pause = [p.pid for p in self._compilers] if self.isolation == "pause" else []
        self._measurer.conn.send(Batch([], pause))
        if not self._measurer.conn.poll(self.opts.timeout_s):
            self._measurer.kill()
            signal_all(pause, signal.SIGCONT)
            self._measure = None
            raise WorkerError("the default config could not be timed in time")
        try:
            _kind, results = self._measurer.conn.recv()
        except (EOFError, ConnectionError):
            raise WorkerError("measurement worker died timing the default: "
                              + self._measurer.exit_description()) from None
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
