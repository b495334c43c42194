"""Timing noise on this host: which sample length, and which round order, give honest labels?

Identical copies of one zoo program's default executable are timed against each other, so
every true ratio is exactly 1.0:

1. *Sample length.* For each ``--sample-ms``, rounds of the paired engine (measure/stats/rounds.py)
   over ``--items`` copies; reported: robust SD of one round's log-ratio, the standard error
   of a label after the run, and that error × √(seconds per label) — the noise per unit of
   timing cost (lower is better), which is what the default ``--min-sample-ms`` trades.
2. *Round order.* The shipped order (shuffled rounds, the default sampled like any config)
   against the first version's order (the default between every two configs, each config
   against one adjacent default sample, the default's copies picked at random), both run
   twice, alternating: the mean A/A ratio shows whether the order itself biases labels.

    python bench/bench_timing_noise.py --program resnet18 --write
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time

import numpy as np
from scipy import stats

PROGRAMS = {"resnet18": {"preset": "tiny", "batch": 1},
            "transformer": {"preset": "small", "batch": 1}}


class Copy:
    """One loaded copy: called, it runs blocked until ready (as tgt times it); ``dispatch``
    only starts a run (bench_round_estimators.py times runs dispatched back to back)."""

    def __init__(self, exe: object, inputs: list) -> None:
        self.exe, self.inputs = exe, inputs

    def __call__(self) -> object:
        from tpugraphs_tools.compiler import compile as C

        return C.run(self.exe, self.inputs)

    def dispatch(self) -> list:
        return self.exe.execute_sharded(self.inputs).disassemble_into_single_device_arrays()


def load_copies(program: str, defaults: int, items: int, copies: int):
    """Loaded copies of the program's default executable as no-arg callables: ``defaults``
    for the default, ``copies`` for each of ``items`` A/A items. Loaded interleaved (copy j
    of every program together), as the measurement worker does, so load order does not
    masquerade as a difference between programs."""
    import jax

    from tpugraphs_tools import _xla_compat as X
    from tpugraphs_tools.collect.graphs import lower_program
    from tpugraphs_tools.compiler import compile as C
    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.programs import ProgramArgs

    _, src = lower_program(program, ProgramArgs(**PROGRAMS[program]))
    signature = C.entry_signature(parse_hlo_text(src.text, source=program))
    inputs = C.make_inputs(signature, 0, None)
    device = jax.devices()[0]
    blob = X.serialize_executable(C.compile_text(src.text, signature, None, None), device)

    def load() -> Copy:
        copy = Copy(X.deserialize_executable(blob, device), inputs)
        copy()
        copy()
        return copy

    default: list = []
    loaded: list[list] = [[] for _ in range(items)]
    for j in range(max(defaults, copies)):
        if j < defaults:
            default.append(load())
        for group in loaded:
            if j < copies:
                group.append(load())
    return default, loaded


def shipped_rounds(sample, items: int, rounds: int, copies: int):
    from tpugraphs_tools.measure.stats.rounds import time_paired
    from tpugraphs_tools.measure.stats.stopping import StopRule

    rule = StopRule(max_rounds=rounds, min_rounds=min(8, rounds), loaded_copies=copies)
    batch = time_paired(sample, items, rule, adaptive=False)
    return batch.log_ratios


def old_order_rounds(sample, items: int, rounds: int, copies: int):
    """The first version's order, re-implemented as the reference: D c1 c2 D c3 c4 D ..."""
    pick = random.Random(items)
    logs: list[list[float]] = [[] for _ in range(items)]
    for r in range(rounds):
        order = list(range(items))
        order = order[r % items:] + order[:r % items]
        if r % 2:
            order.reverse()
        before = sample(-1, pick.randrange(2 * copies))[0]
        for start in range(0, items, 2):
            block = order[start:start + 2]
            timed = [(i, sample(i, r % copies)[0]) for i in block]
            after = sample(-1, pick.randrange(2 * copies))[0]
            for pos, (i, ns) in enumerate(timed):
                first = pos == 0 and (len(timed) > 1 or r % 2 == 0)
                logs[i].append(math.log(ns) - math.log(before if first else after))
            before = after
    return logs


def autocorrelation(run, seconds: float) -> list[str]:
    """Single runs back to back for ``seconds``: how far apart in time the noise is shared."""
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter_ns()
        run()
        times.append(time.perf_counter_ns() - start)
    logs = np.log(np.asarray(times, np.float64))
    per_run = float(np.median(times)) / 1e6
    lags = [lag for lag in (1, 10, 50, 200) if lag < logs.size // 2]
    cells = " | ".join(f"{np.corrcoef(logs[:-lag], logs[lag:])[0, 1]:.2f}" for lag in lags)
    return ["**Autocorrelation** of single-run log times (" + f"{logs.size} runs of "
            f"{per_run:.2f} ms, {seconds:g} s):", "",
            "| lag (runs) | " + " | ".join(str(lag) for lag in lags) + " |",
            "|---|" + "---:|" * len(lags), "| correlation | " + cells + " |", ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", default="resnet18", choices=sorted(PROGRAMS))
    parser.add_argument("--sample-ms", default="0.3,1,2,5,20")
    parser.add_argument("--items", type=int, default=5, help="A/A copies timed as configs")
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=6.0, help="per sample length")
    parser.add_argument("--order-rounds", type=int, default=300)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    from tpugraphs_tools.measure.engines.sampling import calibrate, timed_sample
    from tpugraphs_tools.measure.stats.robust import trimmed_stats

    # The default gets 2× copies: the first version's order picks from twice as many.
    default, items = load_copies(args.program, 2 * args.copies, args.items, args.copies)

    def sampler(k: int):
        def sample(i: int, copy: int) -> tuple[float, float]:
            run = default[copy % len(default)] if i < 0 else items[i][copy % args.copies]
            return timed_sample(run, k)
        return sample

    lines = autocorrelation(default[0], 5.0)
    lines += [f"`{args.program}` ({PROGRAMS[args.program]}), {args.items} A/A copies of the "
             f"default timed as configs, {args.copies} loaded copies each; every true ratio is "
             "1.0. One process, the machine otherwise idle.", "",
             "**Sample length** (shipped round order; ≈ "
             f"{args.seconds:g} s of rounds per length):", "",
             "| sample ms | runs/sample | rounds | round SD (robust) | label se | "
             "se × √(s per label) |", "|---:|---:|---:|---:|---:|---:|"]
    for ms in [float(x) for x in args.sample_ms.split(",")]:
        k = calibrate(default[0], ms * 1e6)
        start = time.perf_counter()
        probe = shipped_rounds(sampler(k), args.items, 10, args.copies)
        per_round = (time.perf_counter() - start) / 10
        rounds = max(10, int(args.seconds / per_round))
        start = time.perf_counter()
        logs = shipped_rounds(sampler(k), args.items, rounds, args.copies)
        seconds = time.perf_counter() - start
        del probe
        flat = np.concatenate([np.asarray(x) for x in logs])
        se = statistics.fmean(trimmed_stats(x)[1] for x in logs)
        sd = float(stats.median_abs_deviation(flat) * 1.4826)
        lines.append(f"| {ms:g} | {k} | {rounds} | {100 * sd:.1f}% | {100 * se:.2f}% | "
                     f"{100 * se * math.sqrt(seconds / args.items):.3f} |")
    k = calibrate(default[0], 1e6)
    lines += ["", f"**Round order** (1 ms samples, k = {k}, {args.order_rounds} rounds per "
              "run, runs alternating):", "",
              "| order | run | mean A/A ratio − 1 | items whose 95% CI excludes 1.0 |",
              "|---|---:|---:|---:|"]
    for run in range(2):
        for name, order in (("shipped: shuffled rounds", shipped_rounds),
                            ("first version: default between every two", old_order_rounds)):
            logs = order(sampler(k), args.items, args.order_rounds, args.copies)
            means = [trimmed_stats(x) for x in logs]
            t = stats.t.ppf(0.975, [max(1, df) for _, _, df in means])
            outside = sum(1 for (m, se, _), tq in zip(means, t, strict=True)
                          if abs(m) > tq * se)
            center = statistics.fmean(m for m, _, _ in means)
            lines.append(f"| {name} | {run + 1} | {100 * (math.exp(center) - 1):+.2f}% | "
                         f"{outside}/{args.items} |")
    lines += ["", "Round CIs here are the rounds' own (no placement term), so a few items "
              "outside 1.0 are the copies' placement; a shared sign over all items is the "
              "order's bias."]
    body = "\n".join(lines)
    print(body)
    if args.write:
        from _doc import record

        record("Timing noise: sample length and round order", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
