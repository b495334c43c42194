"""Repeated held-out evaluation of `tgt baseline` on a collected dataset.

With a few programs one train/valid/test split leaves one or two held-out graphs; this runs the
baseline with several seeds (each seed a different by-program split and initialisation) and
pools every held-out graph (valid + test) of every run, so the model-vs-trivial comparison rests
on many held-out graphs.

    python bench/bench_baseline_cv.py bench/out/baseline-data --seeds 0,1,2,3,4 --write
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

from tpugraphs_tools.baseline import BaselineOptions, PrepareOptions, TrainConfig, run_baseline

FIRST = ("noise-ceiling", "model", "random", "fewer-copies")
METRICS = ("kendall_tau", "kendall_tau_sure", "opa", "slowdown@5", "kendall_tau_of_ceiling")


def methods_in(pooled: list[dict]) -> list[str]:
    """Every method the reports scored (the ceiling and model first), so a ranker added to
    `tgt baseline` reaches the table without editing this list."""
    seen = {key for g in pooled for key, value in g.items()
            if isinstance(value, dict) and "kendall_tau" in value}
    return [m for m in FIRST if m in seen] + sorted(seen - set(FIRST))


def seed_ci(pooled: list[dict], method: str, metric: str) -> str:
    """Mean over held-out graphs, with a 95% t interval over the seeds' own means (each seed
    is one by-program split), so two methods' intervals can be compared."""
    from scipy import stats

    per_seed: dict[int, list[float]] = {}
    for g in pooled:
        value = g.get(method, {}).get(metric)
        if value is not None and not math.isnan(value):
            per_seed.setdefault(g["seed"], []).append(value)
    means = [statistics.fmean(v) for v in per_seed.values()]
    if not means:
        return "-"
    center = statistics.fmean(means)
    if len(means) < 2:
        return f"{center:.3f}"
    half = stats.t.ppf(0.975, len(means) - 1) * statistics.stdev(means) / math.sqrt(len(means))
    return f"{center:.3f} ± {half:.3f}"


def label_summary(data: Path) -> str:
    """How sure the dataset's labels are: the share of a graph's config pairs (the default
    counting as ratio 1 with no uncertainty) whose 95% CIs are disjoint, the median CI
    half-width, and how many A/A control rows hold 1.0 (one per timing batch)."""
    import numpy as np

    from tpugraphs_tools.collect.labels import separated_pairs
    from tpugraphs_tools.store import Dataset

    rows = Dataset.open(data).table("configs").to_dicts()
    half: list[float] = []
    by_graph: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        if r["status"] != "ok" or r["relative_ci_low"] is None:
            continue
        ci = (1.0, 1.0) if r["is_default"] else (r["relative_ci_low"], r["relative_ci_high"])
        by_graph.setdefault(r["graph_id"], []).append(ci)
        if not r["is_default"]:
            half.append((ci[1] - ci[0]) / 2 / r["relative_to_default"])
    pairs = sum(len(cis) * (len(cis) - 1) // 2 for cis in by_graph.values())
    sure = sum(separated_pairs(*zip(*cis, strict=True)) for cis in by_graph.values())
    controls = [r for r in rows if r["status"] == "control"]
    held = sum(1 for r in controls if r["relative_ci_low"] <= 1.0 <= r["relative_ci_high"])
    return (f"Labels: {len(by_graph)} graphs; {sure:,} of {pairs:,} config pairs "
            f"({100 * sure / max(pairs, 1):.0f}%) have disjoint 95% CIs; median CI "
            f"±{100 * float(np.median(half)):.1f}%; A/A controls hold 1.0 in {held}/"
            f"{len(controls)} batches.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    pooled: list[dict] = []
    for seed in seeds:
        opts = BaselineOptions(train=TrainConfig(epochs=args.epochs, lr=2e-3, seed=seed),
                               prepare=PrepareOptions(seed=seed), holdout="programs")
        report = run_baseline(Path(args.data), opts)
        for collection in report.to_json()["collections"].values():
            for graph in collection["evaluations"]["by-program"]["per_graph"]:
                if graph["split"] in ("valid", "test") and graph["model"].get("kendall_tau") \
                        is not None:
                    pooled.append({**graph, "seed": seed})
        print(f"seed {seed}: {len(pooled)} held-out graphs so far", file=sys.stderr)
    lines = [f"{len(seeds)} seeds ({args.seeds}), each a different by-program split; "
             f"{len(pooled)} held-out graphs pooled over {len({g['graph_id'] for g in pooled})} "
             f"distinct graphs; model `sage`, hidden 64, 3 layers, ListMLE, {args.epochs} "
             "epochs, full-graph. Mean over held-out graphs; `kendall_tau_sure` is τ over the "
             "config pairs whose label 95% CIs are disjoint (docs/baseline.md), over the "
             "graphs that have such pairs; ± is a 95% interval over the seeds' means; "
             "`noise-ceiling` is the τ two reruns of the same configs would reach "
             "(docs/baseline.md):", "",
             "| method | " + " | ".join(METRICS) + " | graphs where τ > random's |",
             "|---|" + "---:|" * (len(METRICS) + 1)]
    for method in methods_in(pooled):
        cells = [seed_ci(pooled, method, metric) for metric in METRICS]
        wins = sum(1 for g in pooled if method in g
                   and (g[method].get("kendall_tau") or -2) > g["random"]["kendall_tau"])
        cells.append("-" if method in ("random", "noise-ceiling") else f"{wins}/{len(pooled)}")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    body = label_summary(Path(args.data)) + "\n\n" + "\n".join(lines)
    print(body)
    if args.write:
        from _doc import record  # bench/ is on sys.path when run as a script

        record("tgt baseline on collected data", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
