"""`tgt collect`'s progress: typed events from the library, a bar only on a terminal, an honest
ETA, and labels per minute in the summary.

The collection tests replace the measurement processes with a fake measurer that returns
synthetic paired labels at once (the events, not the timings, are under test), so they run in
seconds; everything else (lowering, featurizing, layout rows, journal, store) is real.
"""

from __future__ import annotations

import io
import re
import signal
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from tpugraphs_tools.cli import main
from tpugraphs_tools.cli._common import Terminal
from tpugraphs_tools.collect import (
    CollectItem,
    CollectRequest,
    MeasureOptions,
    ProgressEvent,
    bar_lines,
    collect,
    format_eta,
)
from tpugraphs_tools.collect.progress import ProgressTracker
from tpugraphs_tools.measure import OK, BatchProgress, ConfigResult, Job, StopReason, Timing
from tpugraphs_tools.measure.messages import DefaultInfo

BAR_CHARS = set("━╸╺")
TABLE_CORNERS = set("┏┓┡┩┗┛╇┳┻")  # a heavy table border uses ━ too


def _bar_rows(text: str) -> list[str]:
    """Lines holding a progress bar (bar characters outside a table border)."""
    return [line for line in text.splitlines()
            if BAR_CHARS & set(line) and not TABLE_CORNERS & set(line)]


class FakeMeasurer:
    """Stands in for Measurer: every config ok with a paired label, instantly."""

    restarts = 0

    def __init__(self, *_args: Any) -> None:
        pass

    def __enter__(self) -> FakeMeasurer:
        return self

    def __exit__(self, *_exc: object) -> None:
        pass

    def start(self) -> DefaultInfo:
        return DefaultInfo(compile_seconds=0.1, realized={"fingerprint": "default"}, key="d")

    def run(self, jobs: Iterable[Job], _known: dict[str, int],
            record: Callable[[ConfigResult], None],
            on_progress: Callable[[BatchProgress], None] | None = None, **_kw: Any) -> None:
        default = Timing(1000, 1000, 0.01, 50)
        jobs = list(jobs)
        if on_progress is not None:  # one batch, seen half-way through its rounds
            on_progress(BatchProgress(1, tuple(j.index for j in jobs), 1, 1, rounds=25))
        for job in jobs:
            ratio = 1 + 0.1 * job.index
            record(ConfigResult(
                job.index, OK, realized={"fingerprint": f"fp{job.index}"},
                timing=Timing(round(1000 * ratio), round(1000 * ratio), 0.01, 50),
                default_timing=default, relative_to_default=ratio,
                relative_ci_low=ratio * 0.99, relative_ci_high=ratio * 1.01, rounds=50,
                stop_reason=StopReason.PRECISION, compile_seconds=0.1, measure_seconds=0.01))

    def run_control(self, _record: Callable[[ConfigResult], None]) -> None:
        raise AssertionError("every label has an in-window default: no control needed")


@pytest.fixture
def fake_measurer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tpugraphs_tools.collect.layout.Measurer", FakeMeasurer)


@pytest.fixture
def two_modules(write_file: Callable[[str, str], Path], tiny_hlo: str) -> list[str]:
    """Two different tiny modules (different shapes: different graphs)."""
    other = (tiny_hlo.replace("HloModule tiny", "HloModule tiny2")
             .replace("f32[3,4]", "f32[3,8]").replace("f32[2,4]", "f32[2,8]")
             .replace("f32[8]{0}", "f32[16]{0}"))
    return [str(write_file("a.hlo", tiny_hlo)), str(write_file("b.hlo", other))]


class FakeClock:
    """Seconds that advance only when a test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _row(index: int, ratio: float | None = None, status: str = OK,
         timed: bool = True) -> dict[str, Any]:
    """A layout row; ``timed``: measured in a timing batch (the default's row and no-ops are
    settled without one)."""
    ci = (ratio * 0.98, ratio * 1.02) if ratio else (None, None)
    return {"config_index": index, "status": status, "is_default": index == 0,
            "relative_to_default": ratio, "relative_ci_low": ci[0], "relative_ci_high": ci[1],
            "measure_seconds": 0.5 if timed and index else None}


def test_eta_waits_for_the_first_timed_batch_then_counts_down() -> None:
    clock, events = FakeClock(), []
    tracker = ProgressTracker(events.append, [4, 4], clock=clock)
    tracker.begin(0, "a")
    tracker.stage("compiling")
    clock.now += 10
    tracker.resumed([])
    assert events[-1].graph_eta_seconds is None and events[-1].run_eta_seconds is None
    assert "ETA estimating… (after the first timing batch)" in bar_lines(events[-1])[0].text
    tracker.row(_row(0))  # the default's row: compiled, not timed, so no rate yet
    assert events[-1].graph_eta_seconds is None and events[-1].run_eta_seconds is None
    clock.now += 10
    tracker.row(_row(1, 1.2))
    last = events[-1]
    # 2 configs measured in 20 s: 2 left in this graph (20 s), 6 left in the run (60 s).
    assert last.stage == "timing"
    assert last.graph_eta_seconds == pytest.approx(20)
    assert last.run_eta_seconds == pytest.approx(60)
    graph_line, run_line = bar_lines(last)
    assert graph_line.text.split(" · ")[1] == "ETA 0:20"
    assert run_line.text.split(" · ")[0] == "ETA 1:00"
    assert format_eta(3725) == "ETA 1:02:05"
    clock.now += 5  # no result for 5 s: the estimate counts down instead of standing still
    tracker.stage("timing")
    assert events[-1].graph_eta_seconds == pytest.approx(15)
    assert events[-1].run_eta_seconds == pytest.approx(55)
    clock.now += 30  # past the estimate: said so, not a negative time
    tracker.stage("timing")
    assert bar_lines(events[-1])[0].text.split(" · ")[1] == "ETA any moment"


def test_resumed_rows_are_done_but_not_part_of_the_rate() -> None:
    clock, events = FakeClock(), []
    tracker = ProgressTracker(events.append, [4], clock=clock)
    tracker.begin(0, "a")
    tracker.resumed([_row(0), _row(1, 1.1), _row(2, 0.9)])
    clock.now += 30
    assert events[-1].configs_done == 3 and events[-1].graph_eta_seconds is None
    tracker.row(_row(3, 1.3))
    assert events[-1].configs_done == 4 and events[-1].graph_eta_seconds == 0
    assert events[-1].labels == 1  # only the label measured by this run
    # Precision so far: the median half-width of the labels with a CI (2%), and the pairs of
    # labels (the default's CI is [1, 1]) whose CIs are disjoint: all 6 here.
    assert events[-1].ci_half_width_median == pytest.approx(0.02)
    assert (events[-1].pairs_separated, events[-1].pairs) == (6, 6)


def test_control_rows_are_not_configs_and_a_smaller_space_ends_at_its_size() -> None:
    events: list[ProgressEvent] = []
    tracker = ProgressTracker(events.append, [10], clock=FakeClock())
    tracker.begin(0, "a")
    tracker.row(_row(0))
    tracker.row(_row(1, 1.1))
    tracker.row({**_row(2, 1.0), "status": "control"})
    assert events[-1].configs_done == 2
    tracker.end()  # the space held 2 configs, not the 10 requested
    assert (events[-1].configs_done, events[-1].configs_total) == (2, 2)
    assert (events[-1].run_done, events[-1].run_total) == (2, 2)


def test_tile_progress_counts_kernel_slots_and_reaches_its_total() -> None:
    clock, events = FakeClock(), []
    tracker = ProgressTracker(events.append, [None], clock=clock)
    tracker.begin(0, "resnet18")
    assert events[-1].configs_total is None and events[-1].run_total is None
    tracker.kernel(1, 3, 2, "fusion.1")
    tracker.tile_row(_row(0))
    clock.now += 5
    tracker.tile_row(_row(1, 1.1))
    tracker.tile_row(_row(2, 1.2))  # past the kernel's target: no slot
    assert (events[-1].configs_done, events[-1].configs_total) == (2, 6)
    assert events[-1].graph_eta_seconds == pytest.approx(10)
    tracker.kernel(2, 3, 2, "fusion.2")  # the first kernel stops short: none left for it
    assert events[-1].detail == "kernel 2/3 fusion.2"
    tracker.end()
    assert events[-1].configs_done == events[-1].configs_total == 6


def _events_of(request: CollectRequest) -> tuple[list[ProgressEvent], Any]:
    events: list[ProgressEvent] = []
    summary = collect(request, progress=events.append)
    return events, summary


def test_a_collection_reports_every_stage_and_reaches_done_for_every_graph(
        tmp_path: Path, fake_measurer: None, two_modules: list[str]) -> None:
    options = MeasureOptions(configs=3)
    request = CollectRequest(items=[CollectItem(hlo=h, options=options) for h in two_modules],
                             out=str(tmp_path / "d"))
    events, summary = _events_of(request)
    for graph in (1, 2):
        mine = [e for e in events if e.graph_index == graph]
        stages = [e.stage for e in mine]
        assert stages[0] == "lowering" and stages[-1] == "storing"
        assert {"featurizing", "compiling", "timing"} <= set(stages)
        batches = [i for i, e in enumerate(mine) if e.batch is not None]
        assert batches and mine[batches[0]].batch.rounds == 25  # type: ignore[union-attr]
        assert mine[batches[-1] + 1].batch is None  # gone once its results come
        assert mine[-1].configs_done == mine[-1].configs_total == 3
        done = [e.configs_done for e in mine]
        assert done == sorted(done)
    assert events[-1].run_done == events[-1].run_total == 6
    assert events[-1].labels == summary.labels == 6
    assert events[-1].ci_half_width_median == pytest.approx(0.01, rel=1e-6)
    assert summary.wall_seconds > 0 and summary.labels_per_minute is not None
    # Resumed: the graphs are complete, nothing is measured, every graph still ends done.
    events, summary = _events_of(request)
    assert all(e.stage == "storing" or e.labels == 0 for e in events)
    assert summary.labels == 0 and events[-1].run_done == events[-1].run_total == 6


def test_piped_collect_prints_results_and_labels_per_minute_but_no_bar(
        tmp_path: Path, fake_measurer: None, two_modules: list[str]) -> None:
    args = ["collect", "--hlo", two_modules[0], "--configs", "3", "--out", str(tmp_path / "d")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert _bar_rows(result.output) == []
    assert "ETA" not in result.output and "timing" not in result.output
    line = next(x for x in result.output.splitlines() if x.startswith("labels per minute:"))
    assert re.fullmatch(r"labels per minute: \d+\.\d \(3 ok labels measured in \d+\.\d min "
                        r"of wall time\)", line), line
    again = CliRunner().invoke(main, args)  # complete: nothing measured, no rate to state
    assert "labels per minute: - (no ok labels measured in this run;" in again.output


def _terminal() -> tuple[Terminal, io.StringIO]:
    out = io.StringIO()
    return Terminal(Console(file=out, width=160, force_terminal=True),
                    Console(file=io.StringIO())), out


def _event(**fields: Any) -> ProgressEvent:
    base: dict[str, Any] = dict(stage="timing", item="resnet18", graph_index=1, graphs_total=2,
                                configs_done=3, configs_total=12, run_done=3, run_total=24,
                                labels=3, graph_measured=3, graph_seconds=30.0,
                                run_measured=3, run_seconds=30.0,
                                ci_half_width_median=0.0091, pairs_separated=4, pairs=6,
                                graph_timed=True, run_timed=True)
    return ProgressEvent(**{**base, **fields})


def test_the_bar_is_drawn_on_a_terminal() -> None:
    term, out = _terminal()
    with term.bars() as show:
        show(bar_lines(_event()))
    text = out.getvalue()
    assert len(_bar_rows(text)) >= 2  # the graph's bar and the run's
    for part in ("graph 1/2 resnet18", "3/12", "timing", "ETA 1:30", "CI ±0.91%",
                 "4/6 pairs ordered", "all graphs", "3/24", "ETA 3:30", "3 labels"):
        assert part in text, part


def test_the_next_graph_replaces_the_previous_ones_row() -> None:
    term, out = _terminal()
    with term.bars() as show:
        show(bar_lines(_event(stage="storing")))
        show(bar_lines(_event(stage="lowering", item="gpt", graph_index=2, configs_done=0,
                              graph_measured=0, ci_half_width_median=None, pairs=0,
                              graph_timed=False)))
    last = out.getvalue().rsplit("graph 2/2 gpt", 1)[1].splitlines()[0]
    assert "0/12" in last and "CI" not in last
    assert "lowering · ETA estimating… (after the first timing batch)" in last


@pytest.mark.parametrize("console", [
    Console(file=io.StringIO(), width=160),                                    # a pipe
    Console(file=io.StringIO(), width=160, force_terminal=True,
            _environ={"TERM": "dumb"}),                                         # TERM=dumb
], ids=["pipe", "dumb-terminal"])
def test_no_bar_where_the_spinner_is_not_drawn_either(console: Console) -> None:
    term = Terminal(console, Console(file=io.StringIO()))
    assert not term.interactive  # the spinner's rule (Terminal.status)
    with term.bars() as show:
        show(bar_lines(_event()))
    assert console.file.getvalue() == ""  # type: ignore[attr-defined]


def test_the_first_batch_moves_the_bar_and_no_eta_is_shown_until_it_is_timed() -> None:
    # Seen on resnet50 (2 cores): `1/20 … ETA 4:22` unchanged from 0:19 to 5:27, an ETA made
    # from the default's row alone, then a jump to 17/20 when the first batch came back.
    clock, events = FakeClock(), []
    tracker = ProgressTracker(events.append, [20], clock=clock)
    tracker.begin(0, "resnet50")
    tracker.stage("compiling", "the default config")
    clock.now += 19
    tracker.row(_row(0, timed=False))  # the default: compiled and checked, not timed
    batch = tuple(range(1, 17))
    term, out = _terminal()
    texts = []
    with term.bars() as show:
        for rounds, settled, process in [(0, 0, 0), (0, 0, 1), (40, 0, 1), (120, 3, 1),
                                         (60, 2, 3)]:
            clock.now += 60
            tracker.batch(BatchProgress(1, batch, 4, process, rounds=rounds, settled=settled))
            show(bar_lines(events[-1]))
            texts.append(bar_lines(events[-1])[0].text)
        shown = out.getvalue()
        assert len(set(texts)) == len(texts)  # every report says something new
        assert texts[0].startswith("timing batch 1 (16 configs) · loading (0/4 processes "
                                   "ready) · ")
        assert "process 1/4 · warming up" in texts[1]
        assert "process 1/4 · round 40 · 0/16 settled" in texts[2]
        assert "process 3/4 · round 60 · 2/16 settled" in texts[4]
        assert all("ETA estimating… (after batch 1)" in t for t in texts)
        assert not re.search(r"ETA \d", shown)  # no number until a batch was timed
        clock.now += 7
        for index in batch:  # the batch's results: 17 configs measured in 326 s
            tracker.row(_row(index, 1 + index / 100))
        show(bar_lines(events[-1]))
    last = events[-1]
    assert last.batch is None and last.configs_done == 17
    assert last.graph_eta_seconds == pytest.approx(3 * 326 / 17)
    assert f"timing · {format_eta(3 * 326 / 17)} · " in bar_lines(last)[0].text


def test_ctrl_c_is_acknowledged_at_once_with_what_is_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tpugraphs_tools.cli import _collect_live

    err = io.StringIO()
    monkeypatch.setattr(_collect_live, "terminal", Terminal(
        Console(file=io.StringIO(), width=160), Console(file=err, width=200)))
    event = _event(run_done=7, run_total=20,
                   batch=BatchProgress(2, (8, 9, 10), 4, 2, rounds=12))
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), _collect_live.acknowledged_interrupt(
            lambda: _collect_live.stopping_line(event)):
        signal.raise_signal(signal.SIGINT)
        pytest.fail("Ctrl-C did not stop the block")
    assert err.getvalue().strip() == (
        "stopping: 7 of 20 config rows kept (committed or journaled); the batch being timed "
        "is dropped; the same command resumes")
    assert signal.getsignal(signal.SIGINT) is before
    assert _collect_live.stopping_line(None) == "stopping: nothing measured yet"
