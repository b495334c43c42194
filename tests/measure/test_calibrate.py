"""Runs per sample come from the fastest look, so one disturbed look does not shrink k (two
collections of the same tile kernel calibrated k ≈ 120 and k ≈ 23, and their labels moved)."""

from __future__ import annotations

from tpugraphs_tools.measure.engines import sampling


class _Clock:
    """A fake perf_counter_ns that a run advances by its cost."""

    def __init__(self, costs):
        self.now, self.costs = 0, costs

    def ns(self) -> int:
        return self.now

    def run(self) -> None:
        self.now += self.costs(self)


def _calibrate(monkeypatch, costs) -> int:
    clock = _Clock(costs)
    clock.calls = 0
    monkeypatch.setattr(sampling.time, "perf_counter_ns", clock.ns)

    def run():
        clock.calls += 1
        clock.run()

    return sampling.calibrate(run, min_sample_ns=1_000_000)


def test_back_to_back_runs_set_k_not_launch_bound_single_runs(monkeypatch):
    # single runs pay a 40 µs launch; back to back a run costs 10 µs
    k = _calibrate(monkeypatch, lambda c: 40_000 if c.calls <= 5 else 10_000)
    assert k == 100


def test_a_disturbed_look_does_not_shrink_k(monkeypatch):
    # the first look of k runs is slowed (a compile running beside it), the next ones are not
    k = _calibrate(monkeypatch, lambda c: 40_000 if c.calls <= 5 + 25 else 10_000)
    assert k == 100


def test_long_runs_take_one_per_sample(monkeypatch):
    assert _calibrate(monkeypatch, lambda c: 3_000_000) == 1
