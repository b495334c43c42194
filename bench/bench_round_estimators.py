"""Can the same timing buy a narrower label? Two checks on A/A copies of one program.

Identical copies of a zoo program's default executable are timed as the paired engine times
a batch (``measure/stats/rounds.py``: shuffled rounds, the default sampled like any item, loaded
copies rotated per round), so every true ratio is 1.0 and the spread of an estimate between
blocks of rounds is its noise:

1. *Estimator.* The shipped one (per round, an item's log time minus the default's in the
   same round; a 20%-trimmed mean over rounds) against least squares on the log-time
   differences of samples next to each other in time, whatever their items (clipped at 3
   robust SDs). Timing noise on this host is autocorrelated (docs/benchmarks/history/
   2026-12-01-timing-noise.md), so time-adjacent differences might hold less of it.
2. *Dispatch.* A sample's k runs each blocked until ready (shipped) against k runs dispatched
   back to back and blocked once at the end.

Reported per check: the SD between blocks of an item's estimate, averaged over items, and
the variance ratio (above 1: the alternative is more precise for the same timing).

    python bench/bench_round_estimators.py --program resnet18 --items 13 --seconds 40
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np
from bench_timing_noise import PROGRAMS, load_copies


def shipped_estimates(log_ratios: list[np.ndarray]) -> list[float]:
    from tpugraphs_tools.measure.stats.robust import trimmed_stats

    return [trimmed_stats(x)[0] for x in log_ratios]


def adjacent_estimates(items: np.ndarray, logs: np.ndarray, count: int) -> list[float]:
    """Least squares on time-adjacent log differences, the default (item -1) as the zero."""
    diffs = np.diff(logs)
    q1, q3 = np.quantile(diffs, [0.25, 0.75])
    scale = (q3 - q1) / 1.349
    design = np.zeros((diffs.size, count + 1))
    rows = np.arange(diffs.size)
    design[rows, items[1:] + 1] += 1.0
    design[rows, items[:-1] + 1] -= 1.0
    fit = np.linalg.lstsq(design[:, 1:], np.clip(diffs, -3 * scale, 3 * scale), rcond=None)
    return [float(v) for v in fit[0]]


def timed_rounds(sample: Callable[[int, int], tuple[float, float]], count: int, rounds: int,
                 copies: int, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The engine's rounds (no early stop) with every sample's item and log time in call
    order: (per-item log-ratios, items, log times)."""
    from tpugraphs_tools.measure.stats.rounds import time_paired
    from tpugraphs_tools.measure.stats.stopping import StopRule

    calls: list[tuple[int, float]] = []

    def logged(i: int, copy: int) -> tuple[float, float]:
        ns, seconds = sample(i, copy)
        calls.append((i, math.log(ns)))
        return ns, seconds

    rule = StopRule(max_rounds=rounds, min_rounds=min(8, rounds), loaded_copies=copies)
    batch = time_paired(logged, count, rule, adaptive=False, seed=seed)
    items = np.array([i for i, _ in calls])
    logs = np.array([y for _, y in calls])
    return [np.asarray(x) for x in batch.log_ratios], items, logs


def block_sd(estimates: list[list[float]]) -> float:
    """SD between blocks of each item's estimate, averaged over items."""
    return float(np.asarray(estimates).std(axis=0, ddof=1).mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", default="resnet18", choices=sorted(PROGRAMS))
    parser.add_argument("--items", type=int, default=13, help="A/A copies timed as configs")
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=40.0, help="per check and variant")
    parser.add_argument("--blocks", type=int, default=10)
    args = parser.parse_args()
    from tpugraphs_tools.measure.engines.sampling import calibrate, timed_sample

    default, loaded = load_copies(args.program, args.copies, args.items, args.copies)
    k = calibrate(default[0], 1e6)

    def sampler(dispatch: str) -> Callable[[int, int], tuple[float, float]]:
        def sample(i: int, copy: int) -> tuple[float, float]:
            run = default[copy % len(default)] if i < 0 else loaded[i][copy % args.copies]
            if dispatch == "blocked":
                return timed_sample(run, k)
            start = time.perf_counter_ns()
            outputs = [run.dispatch() for _ in range(k)][-1]
            for out in outputs:
                out[0].block_until_ready()
            total = time.perf_counter_ns() - start
            return total / k, total / 1e9
        return sample

    probe_start = time.perf_counter()
    timed_rounds(sampler("blocked"), args.items, 10, args.copies)
    per_round = (time.perf_counter() - probe_start) / 10
    per_block = max(2 * args.copies, int(args.seconds / args.blocks / per_round))
    print(f"`{args.program}` {PROGRAMS[args.program]}: {args.items} A/A items + the default, "
          f"{args.copies} loaded copies each, k = {k} runs per sample, {args.blocks} blocks "
          f"of {per_block} rounds per variant.\n")
    print("| check | variant | SD between blocks (mean over items) | variance ratio |")
    print("|---|---|---:|---:|")
    results: dict[str, float] = {}
    for dispatch in ("blocked", "back-to-back"):
        shipped, adjacent = [], []
        for block in range(args.blocks):
            ratios, items, logs = timed_rounds(sampler(dispatch), args.items, per_block,
                                               args.copies, seed=block)
            shipped.append(shipped_estimates(ratios))
            adjacent.append(adjacent_estimates(items, logs, args.items))
        results[f"{dispatch} shipped"] = block_sd(shipped)
        results[f"{dispatch} adjacent"] = block_sd(adjacent)
    base = results["blocked shipped"]
    rows = [("estimator", "shipped: round-paired trimmed mean", "blocked shipped"),
            ("estimator", "least squares on time-adjacent differences", "blocked adjacent"),
            ("dispatch", "k runs dispatched back to back, one block", "back-to-back shipped")]
    for check, name, key in rows:
        print(f"| {check} | {name} | {100 * results[key]:.3f}% | "
              f"{(base / results[key]) ** 2:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
