"""Progress of a collection as typed events, for a person watching ``tgt collect``.

The library never prints: :func:`~tpugraphs_tools.collect.collect` hands a
:class:`ProgressEvent` to its callback at every stage change and every config result, and the
CLI draws it (a bar on a terminal, nothing when piped). The ETA is honest: it divides the work
left by the rate of *this run* (work measured per second since the graph, or the run, began;
rows resumed from a journal or skipped as complete do not count), counts down from the last
config measured, and does not exist until this run has timed something: before the first
timing batch is back it says what it waits for ("estimating…"). While a batch is timed (minutes
for a large graph, its results come at its end) the events say where it stands: the process
timing it, its rounds, its configs settled (measure/workers/round_board.py).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tpugraphs_tools.collect.labels import EXTRA_STATUSES, separated_pairs
from tpugraphs_tools.measure import OK, BatchProgress

Stage = Literal["lowering", "featurizing", "compiling", "timing", "storing"]


@dataclass(frozen=True)
class ProgressEvent:
    """Where a collection stands: the current graph, its configs, the whole run.

    Config counts of a tile item are in units of its kernels' measured-config targets
    (kernels × configs per kernel), so they reach the total when every kernel is done.
    """

    stage: Stage
    item: str                        # the program or HLO file being collected
    graph_index: int                 # 1-based position of the item in the request
    graphs_total: int
    configs_done: int                # of this graph (resumed rows included)
    configs_total: int | None        # of this graph; None until known (tile: kernels found)
    run_done: int                    # over all graphs so far
    run_total: int | None            # None while a graph's total is unknown
    labels: int                      # ok labels measured in this run, all graphs
    graph_measured: int = 0          # configs of this graph measured in this run
    graph_seconds: float = 0.0       # since this graph began
    run_measured: int = 0            # configs measured in this run, all graphs
    run_seconds: float = 0.0         # since the run began
    ci_half_width_median: float | None = None  # relative, over this graph's labels with a CI
    pairs_separated: int = 0         # pairs of this graph's labels whose 95% CIs are disjoint
    pairs: int = 0
    detail: str = ""                 # e.g. the tile kernel being measured
    graph_timed: bool = False        # a config of this graph was timed in this run
    run_timed: bool = False          # a config was timed in this run: a rate exists
    graph_idle_seconds: float = 0.0  # since this graph's last config measured in this run
    run_idle_seconds: float = 0.0    # since the run's last config measured
    batch: BatchProgress | None = None  # the timing batch out now, between its results

    @property
    def graph_eta_seconds(self) -> float | None:
        """Seconds left for this graph at this graph's rate so far, counted down since its
        last config; None until one of its configs was timed in this run."""
        return _eta(self.configs_total, self.configs_done, self.graph_measured,
                    self.graph_seconds, self.graph_idle_seconds, self.graph_timed)

    @property
    def run_eta_seconds(self) -> float | None:
        """Seconds left for the whole run at the run's rate so far; None until a config was
        timed in this run."""
        return _eta(self.run_total, self.run_done, self.run_measured, self.run_seconds,
                    self.run_idle_seconds, self.run_timed)


def _eta(total: int | None, done: int, measured: int, seconds: float, idle: float,
         timed: bool) -> float | None:
    """Work left at the rate up to the last config measured (``seconds - idle``), less the
    ``idle`` seconds since: an estimate that counts down between results."""
    if total is None:
        return None
    if done >= total:
        return 0.0
    busy = seconds - idle
    if not timed or measured <= 0 or busy <= 0:
        return None
    return (total - done) * busy / measured - idle


def format_eta(seconds: float | None, batch: BatchProgress | None = None) -> str:
    """``ETA 1:02:03`` / ``ETA 4:05``; while there is no rate yet, what it waits for
    (``ETA estimating… (after batch 1)``); past its estimate (below 0), ``ETA any moment``."""
    if seconds is None:
        waits = f"batch {batch.number}" if batch is not None else "the first timing batch"
        return f"ETA estimating… (after {waits})"
    if seconds < 0:
        return "ETA any moment"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"ETA {hours}:{minutes:02d}:{secs:02d}" if hours else f"ETA {minutes}:{secs:02d}"


@dataclass(frozen=True)
class BarLine:
    """One line of a progress display: ``description ━━━ done/total text``."""

    description: str
    done: int
    total: int | None
    text: str


def bar_lines(event: ProgressEvent) -> list[BarLine]:
    """What to draw for ``event``: the current graph, then (for several graphs) the run."""
    doing = event.stage + (f" {event.detail}" if event.detail else "")
    if event.batch is not None:
        doing += f"{' ·' if event.detail else ''} {describe_batch(event.batch)}"
    parts = [doing, format_eta(event.graph_eta_seconds, event.batch)]
    if event.ci_half_width_median is not None:
        parts.append(f"CI ±{100 * event.ci_half_width_median:.2f}%")
    if event.pairs:
        parts.append(f"{event.pairs_separated}/{event.pairs} pairs ordered")
    if event.graphs_total == 1:
        parts.append(_labels(event.labels))
    lines = [BarLine(f"graph {event.graph_index}/{event.graphs_total} {event.item}",
                     event.configs_done, event.configs_total, " · ".join(parts))]
    if event.graphs_total > 1:
        lines.append(BarLine("all graphs", event.run_done, event.run_total,
                             f"{format_eta(event.run_eta_seconds, event.batch)} · "
                             f"{_labels(event.labels)}"))
    return lines


def describe_batch(batch: BatchProgress) -> str:
    """``batch 1 (16 configs) · process 2/4 · round 312 · 5/16 settled``: where the timing
    batch out now stands (its results come only at its end)."""
    head = f"batch {batch.number} ({batch.configs} config{'s' if batch.configs != 1 else ''})"
    if batch.process == 0:
        ready = f" ({batch.loaded}/{batch.processes} processes ready)" \
            if batch.processes > 1 else ""
        return f"{head} · loading{ready}"
    last = batch.process + batch.lanes - 1
    who = (f"process {batch.process}" if last == batch.process
           else f"processes {batch.process}-{last}")
    parts = [head] + ([f"{who}/{batch.processes}"] if batch.processes > 1 else [])
    if batch.rounds == 0:
        return " · ".join([*parts, "warming up"])
    return " · ".join([*parts, f"round {batch.rounds}",
                       f"{batch.settled}/{batch.configs} settled"])


def _labels(count: int) -> str:
    return f"{count} label" + ("" if count == 1 else "s")


@dataclass
class _Graph:
    """The current graph's counters."""

    index: int
    item: str
    total: int | None
    started: float
    done: int = 0
    measured: int = 0
    stage: Stage = "lowering"
    detail: str = ""
    seen: set[int] = field(default_factory=set)
    intervals: list[tuple[float, float]] = field(default_factory=list)
    half_widths: list[float] = field(default_factory=list)
    default_ok: bool = False         # the default row is in: its label's CI is [1, 1]
    kernel_target: int = 0           # tile: measured configs wanted per kernel
    kernel_ok: int = 0               # tile: ok configs of the current kernel
    batch: BatchProgress | None = None   # the timing batch out now (until its results)
    timed: bool = False              # a config of this graph was timed in this run
    last_measured: float | None = None   # clock at its last config measured in this run


class ProgressTracker:
    """Turns the collection's hooks (graph begun, stage, row, kernel, graph ended) into
    :class:`ProgressEvent` s for ``sink``; ``planned`` is each item's config total when known
    before it starts (layout: its requested configs), else None."""

    def __init__(self, sink: Callable[[ProgressEvent], None], planned: list[int | None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._sink = sink
        self._planned = list(planned)
        self._clock = clock
        self._started = clock()
        self._finished_done = 0          # configs done in graphs already ended
        self._measured = 0               # configs measured in this run, ended graphs
        self.labels = 0
        self._graph: _Graph | None = None
        self._run_timed = False
        self._run_last_measured: float | None = None

    def begin(self, index: int, item: str) -> None:
        """Item ``index`` (0-based) starts: lowering it comes first."""
        self._graph = _Graph(index, item, self._planned[index], self._clock())
        self._emit()

    def stage(self, stage: Stage, detail: str = "") -> None:
        graph = self._current()
        graph.stage, graph.detail, graph.batch = stage, detail, None
        self._emit()

    def batch(self, progress: BatchProgress) -> None:
        """Where the timing batch out now stands (measure/workers/round_board.py); shown until a
        result of one of its configs comes."""
        graph = self._current()
        graph.stage, graph.batch = "timing", progress
        if not graph.kernel_target:  # a tile kernel's name stays; "configs" (compiling) goes
            graph.detail = ""
        self._emit()

    def resumed(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Rows an earlier run measured: done, but not part of this run's rate or labels."""
        for row in rows:
            self._count(row, measured=False)
        self._emit()

    def row(self, row: Mapping[str, Any]) -> None:
        """A layout config row measured now (control and repeat rows are not configs). A row
        settled without timing (the default's, a no-op, a compile error) means configs are
        still compiling; a timed one, that timing is under way."""
        graph = self._current()
        timed = row.get("measure_seconds") is not None
        if timed and graph.stage != "timing":
            graph.stage, graph.detail = "timing", ""
        elif not timed and graph.batch is None and not graph.timed:
            graph.stage, graph.detail = "compiling", "configs"
        if graph.batch is not None and row.get("config_index") in graph.batch.indices:
            graph.batch = None  # its results are coming in
        if self._count(row, measured=True):
            self._measured_now(graph, row)
            if row["status"] == OK:
                self.labels += 1
        self._emit()

    def kernel(self, number: int, kernels: int, per_kernel: int, name: str) -> None:
        """Tile: kernel ``number`` (1-based) of ``kernels`` starts; the ones before are done."""
        graph = self._current()
        if graph.total is None or graph.kernel_target != per_kernel:
            graph.total, graph.kernel_target = kernels * per_kernel, per_kernel
            self._planned[graph.index] = graph.total
        self._advance(graph, (number - 1) * per_kernel)
        graph.kernel_ok = 0
        graph.stage, graph.detail = "timing", f"kernel {number}/{kernels} {name}"
        self._emit()

    def tile_row(self, row: Mapping[str, Any]) -> None:
        """Tile: a kernel config measured now; each ok one fills one slot of its kernel."""
        graph = self._current()
        if row["status"] == OK:
            self.labels += 1
            if graph.kernel_ok < graph.kernel_target:
                graph.kernel_ok += 1
                self._advance(graph, graph.done + 1)
                self._measured_now(graph, row)
        self._emit()

    def tile_resumed(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Tile: rows of the current kernel an earlier run measured: they fill its slots, but
        are not part of this run's rate or labels."""
        graph = self._current()
        for row in rows:
            if row["status"] == OK and graph.kernel_ok < graph.kernel_target:
                graph.kernel_ok += 1
                graph.done += 1
        self._emit()

    def end(self) -> None:
        """The graph is stored (or skipped as complete): done equals its total from now on.

        A layout graph whose space held fewer configs than requested ends with the smaller
        total; a tile graph's unfilled kernel slots count as done (its kernels are finished).
        """
        graph = self._current()
        if graph.kernel_target:
            self._advance(graph, graph.total or 0)
        elif graph.seen:
            graph.total = graph.done
        else:  # skipped as complete, graph only, or nothing could be measured
            graph.done = graph.total = graph.total or 0
        self._planned[graph.index] = graph.total
        self._emit()
        self._finished_done += graph.done
        self._measured += graph.measured
        self._graph = None

    def _current(self) -> _Graph:
        if self._graph is None:
            raise RuntimeError("progress hook called outside a graph (begin() first)")
        return self._graph

    def _measured_now(self, graph: _Graph, row: Mapping[str, Any]) -> None:
        """A config measured in this run: the rate runs to now; a timed one (numerics checked
        and timed in a batch, not a no-op settled by its compile) makes the rate an ETA."""
        graph.last_measured = self._run_last_measured = self._clock()
        if row.get("measure_seconds") is not None:
            graph.timed = self._run_timed = True

    @staticmethod
    def _advance(graph: _Graph, done: int) -> None:
        if done > graph.done:
            graph.measured += done - graph.done
            graph.done = done

    def _count(self, row: Mapping[str, Any], *, measured: bool) -> bool:
        """Count one layout row once; True if it is a config row not seen before."""
        graph = self._current()
        index = row.get("config_index")
        if row["status"] in EXTRA_STATUSES or index is None or index in graph.seen:
            return False
        graph.seen.add(index)
        graph.done += 1
        graph.measured += measured
        low, high, ratio = (row.get("relative_ci_low"), row.get("relative_ci_high"),
                            row.get("relative_to_default"))
        if row["status"] == OK and row.get("is_default"):
            graph.default_ok = True
        elif row["status"] == OK and low is not None and high is not None:
            graph.intervals.append((low, high))
            if ratio:
                graph.half_widths.append((high - low) / 2 / ratio)
        return True

    def _emit(self) -> None:
        graph = self._current()
        now = self._clock()
        planned = [t for i, t in enumerate(self._planned) if i != graph.index]
        totals = [*planned, graph.total]
        # The paired engine's default is the reference: its CI is [1, 1] once others have one.
        intervals = graph.intervals + ([(1.0, 1.0)] if graph.intervals and graph.default_ok
                                       else [])
        lows = [low for low, _ in intervals]
        highs = [high for _, high in intervals]
        event = ProgressEvent(
            stage=graph.stage, item=graph.item, graph_index=graph.index + 1,
            graphs_total=len(self._planned), configs_done=graph.done,
            configs_total=graph.total, run_done=self._finished_done + graph.done,
            run_total=None if None in totals else sum(t or 0 for t in totals),
            labels=self.labels, graph_measured=graph.measured,
            graph_seconds=now - graph.started, run_measured=self._measured + graph.measured,
            run_seconds=now - self._started,
            ci_half_width_median=(statistics.median(graph.half_widths)
                                  if graph.half_widths else None),
            pairs_separated=separated_pairs(lows, highs) if len(lows) > 1 else 0,
            pairs=len(lows) * (len(lows) - 1) // 2, detail=graph.detail,
            graph_timed=graph.timed, run_timed=self._run_timed,
            graph_idle_seconds=_since(graph.last_measured, now),
            run_idle_seconds=_since(self._run_last_measured, now), batch=graph.batch)
        self._sink(event)


def _since(then: float | None, now: float) -> float:
    return 0.0 if then is None else now - then

