"""Trustworthy labels: do CI-claimed orders survive a rerun, does the A/A control hold 1.0, and
what does it cost next to the old fixed 10-repeat engine?

Per zoo program, collections run one after the other into fresh datasets: the paired engine
twice (run 1 claims pairs whose CIs are disjoint, run 2 checks their order), the paired engine
without adaptive stopping once (every config to ``--max-rounds``: the same CI rule, so the
adaptive saving is read at equal claimed precision), and the old fixed engine twice (10
rounds, shared default minimum; its claim rule was |Δ| > 2×CV). ``fixed@N`` runs the fixed engine
with N rounds instead of 10: at the paired engine's wall time, how close does it come to the
paired engine's rerun agreement (the wall-time comparison at equal precision)? Every run is saved as JSON
under ``--save`` as soon as it ends, so an interrupted benchmark keeps what it measured;
``--report-only`` rewrites the section from saved runs.

    python bench/bench_labels.py --write
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import _label_claims as label_claims
import numpy as np
from _label_processes import process_spread, recompute, recording
from scipy.stats import kendalltau

PROGRAMS = {  # name -> (zoo program, program args, configs)
    "resnet18": ("resnet18", {"preset": "tiny", "batch": 1}, 12),
    "resnet50": ("resnet50", {"preset": "base", "batch": 1, "image_size": 112}, 8),
    "transformer": ("transformer", {"preset": "small", "batch": 1}, 8),
    "mlp_mixer": ("mlp_mixer", {"preset": "tiny", "batch": 1}, 10),
}
MODES = ("paired", "paired", "fixed", "fixed", "paired_all", "paired", "paired")
OLD_TIMING_BATCH = 4  # the fixed engine as it shipped before the paired engine


def fixed_repeats(mode: str) -> int | None:
    """Rounds of a fixed-engine mode (``fixed`` = 10, ``fixed@N`` = N); None for paired."""
    if mode == "fixed":
        return 10
    if mode.startswith("fixed@"):
        return int(mode.split("@", 1)[1])
    return None


def collect_once(program: str, args: dict, configs: int, mode: str, seed: int,
                 overrides: dict | None = None) -> dict:
    """One collection into a fresh dataset: its config rows and its wall time.
    ``overrides`` (``--set``) change MeasureOptions fields of the paired modes."""
    from tpugraphs_tools.collect.run import CollectItem, CollectRequest, collect
    from tpugraphs_tools.measure.options import MeasureOptions
    from tpugraphs_tools.programs import ProgramArgs
    from tpugraphs_tools.store import Dataset

    repeats = fixed_repeats(mode)
    old = {"engine": "fixed", "timing_batch": OLD_TIMING_BATCH, "fixed_rounds": repeats} \
        if repeats else {}
    extra = {} if repeats else dict(overrides or {})
    layout = MeasureOptions(configs=configs, seed=seed, adaptive=mode != "paired_all", **old,
                            **extra)
    with TemporaryDirectory(prefix="tgt-labels-") as out, recording() as processes:
        item = CollectItem(program=program, program_args=ProgramArgs(**args), options=layout)
        start = time.perf_counter()
        collect(CollectRequest(items=[item], out=out))
        wall = time.perf_counter() - start
        rows = Dataset.open(out).table("configs").to_dicts()
    keep = ("config_index", "status", "is_default", "relative_to_default", "relative_ci_low",
            "relative_ci_high", "rounds", "stop_reason", "runtime_cv", "runs_per_sample",
            "default_runtime_ns", "measure_seconds", "window_sd", "process_sd")
    return {"mode": mode, "wall_s": wall, "load": os.getloadavg()[0], "options": extra,
            "rows": [{k: r.get(k) for k in keep} for r in rows], "processes": processes}


def _labels(run: dict) -> dict[int, dict]:
    return {r["config_index"]: r for r in run["rows"] if r["status"] == "ok"}


def claimed_pairs(a: dict, b: dict, rule: str) -> tuple[int, int, int]:
    """(pairs, claimed in run a, claimed pairs whose order run b keeps)."""
    return label_claims.claimed_pairs(a["rows"], b["rows"], rule)


def tau(a: dict, b: dict) -> float:
    la, lb = _labels(a), _labels(b)
    common = sorted(set(la) & set(lb))
    if len(common) < 3:
        return float("nan")
    return float(kendalltau([la[i]["relative_to_default"] for i in common],
                            [lb[i]["relative_to_default"] for i in common]).statistic)


def all_runs(got: list[dict], rule: str) -> tuple[list[float], int, int, float]:
    """Every run as run 1: (its claimed share, checked against every other run), claimed
    orders kept over all ordered run pairs, claims so checked, and the mean τ over run pairs.
    One pair of runs is a coin toss on a noisy host; this is the figure to quote."""
    shares: list[float] = []
    kept = claimed = 0
    for a, run in enumerate(got):
        others = [b for b in range(len(got)) if b != a]
        pairs, mine, _ = claimed_pairs(run, got[others[0]], rule)
        shares.append(mine / pairs if pairs else 0.0)
        for b in others:
            _, c, k = claimed_pairs(run, got[b], rule)
            kept += k
            claimed += c
    taus = [tau(x, y) for x, y in itertools.combinations(got, 2)]
    return shares, int(kept), claimed, float(np.nanmean(taus))


def rerun_spread(got: list[dict]) -> tuple[float, float, float] | None:
    """Do the CIs cover what reruns do? (SD of a config's log-ratio across runs after removing
    each run's common offset, RMS within-run se from the 95% CIs, SD of the run offsets.)
    A run's common offset is the default's own placement in that run: it moves every ratio of
    the graph together, so it matters for pairs with the default only."""
    labels = [_labels(r) for r in got]
    common = sorted(set.intersection(*(set(x) for x in labels)))
    rows = [[x[i] for x in labels] for i in common if not labels[0][i]["is_default"]]
    rows = [r for r in rows if all(x["relative_ci_low"] for x in r)]
    if len(rows) < 3:
        return None
    logs = np.log([[x["relative_to_default"] for x in r] for r in rows])
    se = [(math.log(x["relative_ci_high"]) - math.log(x["relative_ci_low"])) / (2 * 1.96)
          for r in rows for x in r]
    centered = logs - logs.mean(axis=0, keepdims=True)
    between = float(centered.var(axis=1, ddof=1).mean()) * len(rows) / (len(rows) - 1)
    return math.sqrt(between), math.sqrt(float(np.mean(np.square(se)))), \
        float(logs.mean(axis=0).std(ddof=1))


def half_widths(run: dict) -> list[float]:
    return [(r["relative_ci_high"] - r["relative_ci_low"]) / 2 / r["relative_to_default"]
            for r in _labels(run).values()
            if r["relative_ci_low"] is not None and not r["is_default"]]


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _overridden(runs: dict[str, list[dict]]) -> str:
    """The ``--set`` overrides the saved paired runs were collected with, if any."""
    found = sorted({f"{k}={v}" for program_runs in runs.values() for r in program_runs
                    for k, v in (r.get("options") or {}).items()})
    return f" Paired runs collected with `--set` {', '.join(found)}." if found else ""


def report(runs: dict[str, list[dict]], args: argparse.Namespace) -> str:
    from tpugraphs_tools.measure.options import MeasureOptions

    d = MeasureOptions()
    lines = [
        "Per program, collections one after the other: the paired engine (runs 1 and 2: run 1 "
        "claims the pairs whose 95% CIs are disjoint, the default counting as ratio 1 with no "
        "uncertainty, run 2 says whether each claimed order held; runs 3 and 4 add A/A "
        "controls), the paired engine once without adaptive stopping (every config to "
        "`--max-rounds` or `--max-seconds-per-config`, no early stop), and the old fixed "
        f"engine (10 rounds, shared default minimum, timing batch {OLD_TIMING_BATCH}, its claim rule |Δ| > 2×CV) "
        f"twice. Paired defaults: `--min-sample-ms {d.min_sample_ms:g} --target-precision "
        f"{d.target_precision:g} --max-rounds {d.max_rounds} --max-seconds-per-config "
        f"{d.max_seconds_per_config:g} --loaded-copies {d.loaded_copies} --measure-processes "
        f"{d.measure_processes} --timing-batch {d.timing_batch}`, "
        "1 compile worker, isolation `pause`, strategy `default`, seed "
        f"{args.seed}. τ all configs: Kendall τ of runs 1 and 2 over every config. Load = "
        "1-min load average when the run ended." + _overridden(runs), "",
        "| program (configs) | engine | claimed pairs (run 1) | claimed order kept (run 2) | "
        "τ all configs | median CI ± | A/A control holds 1.0 | wall s (runs) | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    total_kept = total_claimed = total_held = total_controls = 0
    every: list[str] = []
    for name, program_runs in runs.items():
        by_mode: dict[str, list[dict]] = {}
        for run in program_runs:
            by_mode.setdefault(run["mode"], []).append(run)
        configs = PROGRAMS[name][2]
        fixed = sorted((m for m in by_mode if fixed_repeats(m)), key=lambda m: fixed_repeats(m) or 0)
        for mode, label in (("paired", "paired, adaptive"), ("paired_all", "paired, all to cap"),
                            *((m, f"old fixed {fixed_repeats(m)}-repeat") for m in fixed)):
            got = by_mode.get(mode, [])
            if not got:
                continue
            walls = ", ".join(f"{r['wall_s']:.0f}" for r in got)
            load = ", ".join(f"{r['load']:.1f}" for r in got)
            half = [h for r in got for h in half_widths(r)]
            held = sum(label_claims.controls(r["rows"])[0] for r in got)
            count = sum(label_claims.controls(r["rows"])[1] for r in got)
            if not fixed_repeats(mode):
                total_held += held
                total_controls += count
            claim = kept_s = tau_s = "-"
            if len(got) >= 2:
                pairs, claimed, kept = claimed_pairs(got[0], got[1],
                                                     "cv" if fixed_repeats(mode) else "ci")
                claim = f"{claimed}/{pairs} ({_pct(claimed / pairs)})" if pairs else "-"
                kept_s = f"{kept}/{claimed} ({_pct(kept / claimed)})" if claimed else "-"
                tau_s = f"{tau(got[0], got[1]):.2f}"
                if mode == "paired":
                    total_kept += kept
                    total_claimed += claimed
            if len(got) >= 3:
                shares, all_kept, all_claimed, mean_tau = all_runs(
                    got, "cv" if fixed_repeats(mode) else "ci")
                spread = None if fixed_repeats(mode) else rerun_spread(got)
                every.append(
                    f"| {name} | {label} | {len(got)} | "
                    + ", ".join(f"{100 * x:.0f}" for x in shares)
                    + f" | {_pct(statistics.mean(shares))} ({_pct(min(shares))}–"
                    f"{_pct(max(shares))}) | "
                    + (f"{all_kept}/{all_claimed} ({100 * all_kept / all_claimed:.1f}%)"
                       if all_claimed else "-") + f" | {mean_tau:.2f} | "
                    + (" / ".join(f"{100 * x:.2f}" for x in spread) if spread else "-") + " |")
            lines.append(
                f"| {name} ({configs}) | {label} | {claim} | {kept_s} | {tau_s} | "
                + (f"±{100 * statistics.median(half):.1f}%" if half else "-") + " | "
                + (f"{held}/{count}" if count else "-") + f" | {walls} | {load} |")
    lines += ["", f"Over all programs: claimed orders kept in the rerun **{total_kept}/"
              f"{total_claimed}**"
              + (f" ({_pct(total_kept / total_claimed)})" if total_claimed else "")
              + f"; A/A control CI holds 1.0 in **{total_held}/{total_controls}** batches"
              + (f" ({_pct(total_held / total_controls)})" if total_controls else "") + "."]
    if every:
        lines += ["", "Engines with three or more runs: every run claims (share of pairs, in "
                  "run order) and every other run checks the claimed orders; τ is the mean "
                  "over all pairs of runs. Rerun spread: a config's SD across runs after removing each "
                  "run's common offset / its RMS within-run se (from the 95% CI) / SD of the "
                  "run offsets, all in % of log-ratio; the first two agree when the CIs are "
                  "honest for config-vs-config pairs.", "",
                  "| program | engine | runs | claimed share per run % | mean (range) | "
                  "claimed orders kept, all run pairs | mean τ | rerun spread % |",
                  "|---|---|---|---|---|---|---|---|",
                  *every]
    between = [(name, row) for name, program_runs in runs.items()
               if (row := process_spread([r for r in program_runs if r["mode"] == "paired"]))]
    if between:
        lines += ["", "Between processes (runs that saved each measurement process's "
                  "log-ratio per item): every item's SD across all processes of all runs "
                  "(its true ratio is the same in each) against its RMS per-process se; an "
                  "item far above its se has a process effect of its own. In % of log-ratio. "
                  "Inside each run: an item's own share of a process's deviation (SD) and "
                  "the default's share, which every item of the process shares (the CI "
                  "takes them equal until the graph has 3 df for the default's; _shares in "
                  "bench/_label_processes.py).",
                  "", "| program | runs × processes | items | SD across processes: "
                  "min–max (median) | RMS per-process se | items with SD > 1.5 × se | "
                  "item's own share | default's share |",
                  "|---|---|---|---|---|---|---|---|",
                  *(f"| {name} | {row['runs']} × {row['processes']} | {row['items']} | "
                    f"{row['sd_min']:.2f}–{row['sd_max']:.2f} ({row['sd_median']:.2f}) | "
                    f"{row['se']:.2f} | {row['wide']} | {row['own']:.2f} | "
                    f"{row['default']:.2f} |" for name, row in between)]
    return "\n".join(lines)


def overrides(pairs: list[str]) -> dict:
    """``--set KEY=VALUE`` → MeasureOptions fields, typed like the field's default."""
    from tpugraphs_tools.measure.options import MeasureOptions

    defaults = MeasureOptions()
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        default = getattr(defaults, key)
        kind = type(default) if default is not None else float if "." in value else int
        out[key] = kind(value)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", default="bench/out/labels")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--first-run", type=int, default=0,
                        help="number of the first saved run (add runs to an earlier --save)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="MeasureOptions field for the paired modes (e.g. max_rounds=2000)")
    parser.add_argument("--recompute", action="store_true",
                        help="recompute labels and CIs from the saved per-process records "
                        "with this checkout's estimator (runs that saved them)")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--title", default="Label reproducibility and A/A control",
                        help="docs/benchmarks.md section that --write replaces")
    args = parser.parse_args()
    save = Path(args.save)
    save.mkdir(parents=True, exist_ok=True)
    names = args.programs.split(",")
    if not args.report_only:
        for name in names:
            program, pargs, configs = PROGRAMS[name]
            for n, mode in enumerate(args.modes.split(","), start=args.first_run):
                run = collect_once(program, pargs, configs, mode, args.seed,
                                   overrides(args.set))
                (save / f"{name}.{n}.{mode}.json").write_text(json.dumps(run))
                print(f"{name} {mode}: {run['wall_s']:.1f} s, load {run['load']:.1f}",
                      flush=True)
    runs = {name: [json.loads(p.read_text()) for p in sorted(save.glob(f"{name}.*.json"),
                                                               key=lambda p: int(
                                                                   p.name.split(".")[1]))]
            for name in names}
    if args.recompute:
        runs = {k: [recompute(r) for r in v] for k, v in runs.items()}
    text = report({k: v for k, v in runs.items() if v}, args)
    print(text)
    if args.write:
        from _doc import record

        record(args.title, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
