"""The noise ceiling against real reruns: does the τ expected from the label CIs match the τ two
collections of the same configs give?

Reads the runs ``bench_label_cost.py`` saved (``--save DIR``, one or more): for every pair of
runs of one engine, the rerun τ (Kendall τ of the two runs' labels over pairs of configs of one
graph) and the noise ceiling (``store.label_stats.noise_ceiling``) computed from each run's
CIs. Prints one line per pair of runs and the mean difference (rerun − ceiling) with its 95% CI
over pairs of runs.

    python bench/bench_ceiling_reruns.py bench/out/labelcost-1203b bench/out/labelcost-1203d
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
from _label_claims import concordance, ok_labels
from scipy import stats

from tpugraphs_tools.store.label_stats import LABEL_COLUMNS, noise_ceiling, shared_log_se


def ceiling_of(rows: list[dict], shared_se: float | None = None) -> float:
    """The noise ceiling over the pairs of configs of each graph, pooled by pairs (as the
    rerun τ pools them): a tile collection holds a graph per kernel. ``shared_se`` None: the
    shared part read from each graph's A/A control, as `tgt baseline` and `tgt report` do;
    0.0: ignored (every label's error taken as independent)."""
    graphs: dict[str, list[dict]] = {}
    for (graph, _index), row in ok_labels(rows).items():
        graphs.setdefault(graph, []).append(row)
    total = pairs = 0.0
    for graph, labels in graphs.items():
        shared = shared_se if shared_se is not None else shared_log_se(pl.DataFrame(
            [{k: r.get(k) for k in ("status", *LABEL_COLUMNS)} for r in rows
             if r.get("graph_id") == graph and r["status"] == "control"],
            schema={"status": pl.String, **{k: pl.Float64 for k in LABEL_COLUMNS}}))
        got = noise_ceiling(np.array([r["relative_to_default"] for r in labels]),
                            np.array([r["relative_ci_low"] for r in labels]),
                            np.array([r["relative_ci_high"] for r in labels]), shared)
        if got is not None and got.pairs and not math.isnan(got.kendall_tau):
            total += got.kendall_tau * got.pairs
            pairs += got.pairs
    return total / pairs if pairs else math.nan


def pairs_of_runs(saves: list[Path], shared_se: float | None = None
                  ) -> list[tuple[str, str, int, float, float, float]]:
    """(save and program, engine, pair, rerun τ, ceiling of run 1, ceiling of run 2) of every
    engine with CIs (the fixed engine has none)."""
    out = []
    for save in saves:
        by: dict[tuple[str, str, int], dict[int, dict]] = {}
        for path in sorted(save.glob("*.json")):
            run = json.loads(path.read_text())
            by.setdefault((run["program"], run["engine"], run["pair"]), {})[run["run"]] = run
        for (program, engine, pair), got in sorted(by.items()):
            if 1 not in got or 2 not in got:
                continue
            first = ceiling_of(got[1]["rows"], shared_se)
            second = ceiling_of(got[2]["rows"], shared_se)
            tau = concordance(got[1]["rows"], got[2]["rows"])
            if tau is None or math.isnan(first) or math.isnan(second):
                continue
            out.append((f"{save.name} {program}", engine, pair, tau, first, second))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("saves", nargs="+", type=Path, help="bench_label_cost.py --save dirs")
    args = parser.parse_args()
    found = pairs_of_runs(args.saves)
    if len(found) < 2:
        parser.error("need at least two pairs of runs with CIs")
    print("| save, program | engine | pair | rerun τ | ceiling, run 1 | ceiling, run 2 |")
    print("|---|---|---|---:|---:|---:|")
    for save, engine, pair, tau, first, second in found:
        print(f"| {save} | {engine} | {pair} | {tau:.3f} | {first:.3f} | {second:.3f} |")
    print()
    for label, runs in (("ceiling (shared part from the A/A control, as tgt computes it)", found),
                        ("ceiling if every label's error were independent",
                         pairs_of_runs(args.saves, 0.0))):
        diff = np.array([tau - (a + b) / 2 for *_, tau, a, b in runs])
        half = stats.t.ppf(0.975, diff.size - 1) * diff.std(ddof=1) / math.sqrt(diff.size)
        taus = np.array([f[3] for f in runs])
        ceilings = np.array([(f[4] + f[5]) / 2 for f in runs])
        print(f"{label}: {diff.size} pairs of runs, rerun τ {taus.mean():.3f}, ceiling "
              f"{ceilings.mean():.3f}; rerun − ceiling {diff.mean():+.3f} (95% CI "
              f"{diff.mean() - half:+.3f} to {diff.mean() + half:+.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
