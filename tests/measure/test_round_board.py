"""A timing batch reports its rounds while it runs (round_board.py), and a measurer that stops on
an error or Ctrl-C kills its workers at once instead of waiting for them."""

from __future__ import annotations

from typing import Any

import pytest
from test_paired import fake_sampler

from tpugraphs_tools.measure import BatchProgress, MeasureOptions
from tpugraphs_tools.measure.engines.fixed import time_batch
from tpugraphs_tools.measure.measurer import WORKER_MAINS
from tpugraphs_tools.measure.run_state import PipelineOptions
from tpugraphs_tools.measure.stats.rounds import time_paired
from tpugraphs_tools.measure.stats.stopping import StopRule
from tpugraphs_tools.measure.workers.pool import WorkerPool
from tpugraphs_tools.measure.workers.round_board import Reading, RoundBoard, batch_progress


def test_time_paired_reports_every_round_and_the_configs_still_timed() -> None:
    sample, _calls = fake_sampler([1.0, 1.5, 1.0], noise=0.01)
    heard: list[tuple[int, int]] = []
    rule = StopRule(target_precision=0.01, max_rounds=60, max_seconds_per_config=1e9)
    batch = time_paired(sample, 3, rule, control=[2], on_round=lambda r, a: heard.append((r, a)))
    assert heard[0] == (0, 2)  # before the first round: both configs, the control not counted
    assert [r for r, _ in heard] == list(range(batch.rounds + 1))
    actives = [a for _, a in heard]
    assert actives == sorted(actives, reverse=True) and actives[-1] == 0


def test_the_fixed_engine_reports_its_rounds_too() -> None:
    heard: list[tuple[int, int]] = []
    time_batch(lambda: None, [lambda: None, lambda: None], 0, 3,
               on_round=lambda r, a: heard.append((r, a)))
    assert heard == [(0, 2), (1, 2), (2, 2), (3, 0)]


def test_a_board_carries_a_workers_rounds_to_the_parent() -> None:
    board = RoundBoard()
    assert board.read() == Reading(False, 0, 0)
    board.round(0, 16)
    board.round(312, 11)
    assert board.read() == Reading(True, 312, 11)
    board.idle()  # its rounds are over: the counts stay for the parent's last look
    assert board.read() == Reading(False, 312, 11)
    board.begin()  # the next batch warms up
    assert board.read() == Reading(False, 0, 11)


def test_batch_progress_from_the_processes_timing_now() -> None:
    indices = tuple(range(1, 17))
    loading = batch_progress(1, indices, 4, [], [], loaded=3)
    assert (loading.process, loading.rounds, loading.configs, loading.loaded) == (0, 0, 16, 3)
    warming = batch_progress(1, indices, 4, [1], [Reading(False, 0, 0)])
    assert (warming.process, warming.rounds) == (2, 0)
    finished = batch_progress(1, indices, 4, [1], [Reading(False, 9, 0)])
    assert (finished.rounds, finished.settled) == (9, 16)  # not "warming up" again
    # two lanes at once: the slower one's rounds, the fewer configs settled
    both = batch_progress(2, indices, 4, [2, 3], [Reading(True, 40, 10), Reading(True, 35, 12)])
    assert both == BatchProgress(2, indices, 4, 3, lanes=2, rounds=35, settled=4)


class _Proc:
    """A worker that would take 10 s to stop (mid-batch, or stopped by the pause isolation)."""

    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name
        self.proc = self

    def stop(self) -> None:
        self.log.append(f"stop {self.name}")

    def kill(self) -> None:
        self.log.append(f"kill {self.name}")


def test_leaving_on_an_error_or_ctrl_c_kills_the_workers_at_once() -> None:
    from tpugraphs_tools.measure.messages import SessionSpec

    def slots(log: list[str]) -> WorkerPool:
        s = WorkerPool(SessionSpec(base_text="", engine="paired", processes=2),
                       PipelineOptions(isolation="none"), 2, WORKER_MAINS)
        s.compilers = [_Proc(log, "compile")]  # type: ignore[list-item]
        s.measures = [_Proc(log, "measure0"), _Proc(log, "measure1")]  # type: ignore[list-item]
        return s

    calm: list[str] = []
    with slots(calm):
        pass
    assert calm == ["stop compile", "stop measure0", "stop measure1"]
    hurried: list[str] = []
    with pytest.raises(KeyboardInterrupt), slots(hurried):
        raise KeyboardInterrupt
    assert "stop" not in " ".join(hurried) and hurried.count("kill measure1") == 2


def test_a_real_batch_reports_rising_rounds_before_its_results(convnet_source: Any) -> None:
    from tpugraphs_tools.collect import collect_layout_configs

    # Never precise enough: every config runs to its seconds cap, a batch of several seconds.
    opts = MeasureOptions(configs=3, warmup=0, timeout=60, min_sample_ms=1, loaded_copies=1,
                          measure_processes=1, target_precision=1e-6,
                          max_seconds_per_config=2.0, isolation="none")
    heard: list[BatchProgress] = []
    result = collect_layout_configs(convnet_source.text, convnet_source.module, opts,
                                    on_batch=heard.append)
    timed = [p for p in heard if p.rounds > 0]
    assert timed, heard
    assert all(p.number == 1 and p.processes == 1 and p.process == 1 for p in timed)
    rounds = [p.rounds for p in timed]
    assert rounds == sorted(rounds) and len(set(rounds)) >= 2  # it moved while timed
    assert len(result.rows) >= 3
