"""Repeated held-out-program evaluation of `tgt baseline`, with ablations (issue #27).

Each seed is a different by-program split (and initialisation); every held-out graph (valid +
test) of every seed is pooled. The plain model trains on every graph of the train programs
(both config strategies) and is scored with the trivial and non-graph rankers and the noise
ceiling; each ablation changes one thing and scores the model only, on the same splits:

    default-only   train on `default`-strategy graphs only (held-out graphs keep both)
    mismatch       --mismatch-features: operands whose layout differs from the one asked for
    default-slots  --default-slots: per node, its slots unlike the default config's
    mismatch+default-slots   both
    prune          --prune: configurable nodes and their neighbours only (Kaggle 1st place)
    pad-minus-one  --pad-minus-one: node layouts as −1-padded categories (Kaggle 1st place)
    attention      --cross-config-attention (Kaggle 1st place)
    sure-pairs     --loss sure-pairs: trained only on the pairs whose label CIs are disjoint
    sure-pairs+default-slots   both

Intervals are 95% t intervals over the seeds' own means (a seed is one split), so two methods
can be compared by whether their intervals overlap. Each run is its own process, and its
results are saved the moment it ends (``--save``; ``--resume`` skips the runs already there).

    python bench/bench_baseline_cv.py bench/out/reference --seeds 0,1,2,3,4 --write
    python bench/bench_baseline_cv.py bench/out/catalog --variants model --write \
        --title "Cost model on the catalog plan (held-out architectures)"
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tpugraphs_tools.baseline import (
    BaselineOptions,
    NothingToScore,
    PrepareOptions,
    TrainConfig,
    run_baseline,
)
from tpugraphs_tools.baseline.data import TgtSource

CEILING = "noise-ceiling"
RANKERS = ("random", "fewer-copies", "non-default-slots", "near-default", "gbdt")
VARIANTS: dict[str, dict[str, Any]] = {
    "model": {},
    "default-only": {"train_strategy": "default"},
    "mismatch": {"prepare": {"mismatch_features": True}},
    "default-slots": {"prepare": {"default_slots": True}},
    "mismatch+default-slots": {"prepare": {"mismatch_features": True, "default_slots": True}},
    "prune": {"prepare": {"prune": True}},
    "pad-minus-one": {"prepare": {"pad_minus_one": True}},
    "attention": {"cross_config_attention": True},
    "sure-pairs": {"train": {"loss": "sure-pairs"}},
    "sure-pairs+default-slots": {"train": {"loss": "sure-pairs"},
                                 "prepare": {"default_slots": True}},
}
LAYOUT_METRICS = ("kendall_tau", "kendall_tau_sure", "opa", "slowdown@5")
TILE_METRICS = ("kaggle_tile_score", "opa", "kendall_tau", "slowdown@5")


def options(variant: str, seed: int, epochs: int) -> BaselineOptions:
    change = VARIANTS[variant]
    prepare = PrepareOptions(seed=seed, **change.get("prepare", {}))
    rest = {k: v for k, v in change.items() if k not in ("prepare", "train")}
    train = TrainConfig(epochs=epochs, lr=2e-3, seed=seed, **change.get("train", {}))
    return BaselineOptions(train=train,
                           prepare=prepare, holdout="programs",
                           collection=None if variant == "model" else "layout", **rest)


def held_out(report: dict, seed: int, variant: str, strategies: dict[str, str | None]
             ) -> list[dict]:
    """One record per held-out graph: its methods' metrics (an ablation keeps its model's,
    under the variant's name)."""
    out = []
    for name, collection in report["collections"].items():
        evaluation = collection["evaluations"].get("by-program")
        if evaluation is None:
            continue
        for graph in evaluation["per_graph"]:
            if graph["split"] not in ("valid", "test") or "model" not in graph:
                continue
            methods = {k: v for k, v in graph.items() if isinstance(v, dict)}
            if variant != "model":
                methods = {variant: methods["model"]}
            out.append({"seed": seed, "variant": variant, "collection": name,
                        "graph_id": graph["graph_id"],
                        "strategy": strategies.get(graph["graph_id"]), **methods})
    return out


def per_seed(rows: list[dict], method: str, metric: str) -> list[float]:
    """Each seed's mean of ``metric`` over its held-out graphs."""
    by: dict[int, list[float]] = {}
    for g in rows:
        value = g.get(method, {}).get(metric)
        if value is not None and not math.isnan(value):
            by.setdefault(g["seed"], []).append(value)
    return [statistics.fmean(v) for _, v in sorted(by.items())]


def share_per_seed(rows: list[dict], method: str) -> list[float]:
    """Each seed's mean τ over mean ceiling, over the graphs that have both."""
    by: dict[int, list[tuple[float, float]]] = {}
    for g in rows:
        tau = g.get(method, {}).get("kendall_tau")
        top = g.get(CEILING, {}).get("kendall_tau")
        if tau is not None and top is not None and not (math.isnan(tau) or math.isnan(top)):
            by.setdefault(g["seed"], []).append((tau, top))
    return [statistics.fmean(t for t, _ in v) / statistics.fmean(c for _, c in v)
            for _, v in sorted(by.items()) if statistics.fmean(c for _, c in v) > 0]


def interval(values: list[float]) -> tuple[float, float]:
    """(mean, 95% half-width over seeds); half-width NaN with one seed."""
    from scipy import stats

    if not values:
        return math.nan, math.nan
    center = statistics.fmean(values)
    if len(values) < 2:
        return center, math.nan
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return center, half


def cell(values: list[float]) -> str:
    center, half = interval(values)
    if math.isnan(center):
        return "-"
    return f"{center:.3f}" if math.isnan(half) else f"{center:.3f} ± {half:.3f}"


def methods_of(rows: list[dict]) -> list[str]:
    seen = {k for g in rows for k, v in g.items() if isinstance(v, dict)}
    first = [CEILING, *VARIANTS, *RANKERS]
    return [m for m in first if m in seen] + sorted(seen - set(first))


def table(rows: list[dict], metrics: tuple[str, ...], share: bool) -> list[str]:
    head = list(metrics) + (["τ ÷ ceiling"] if share else [])
    lines = ["| method | seeds | graphs | " + " | ".join(head) + " |",
             "|---|---:|---:|" + "---:|" * len(head)]
    for method in methods_of(rows):
        graphs = sum(1 for g in rows if method in g)
        seeds = len({g["seed"] for g in rows if method in g})
        cells = [cell(per_seed(rows, method, m)) for m in metrics]
        if share:
            cells.append("-" if method == CEILING else cell(share_per_seed(rows, method)))
        lines.append(f"| {method} | {seeds} | {graphs} | " + " | ".join(cells) + " |")
    return lines


def apart(rows: list[dict], method: str, others: list[str], metric: str) -> list[str]:
    """Whether ``method``'s interval lies above each other method's, without overlap."""
    lo = interval(per_seed(rows, method, metric))
    out = []
    for other in others:
        hi = interval(per_seed(rows, other, metric))
        if math.isnan(hi[0]):
            continue
        holds = lo[0] - lo[1] > hi[0] + hi[1]
        out.append(f"{other} {hi[0]:.3f} ± {hi[1]:.3f}: {'apart' if holds else 'OVERLAP'}")
    return out


def verdicts(layout: list[dict], tile: list[dict]) -> list[str]:
    lines = []
    if layout:
        rankers = [m for m in RANKERS if any(m in g for g in layout)]
        center, half = interval(per_seed(layout, "model", "kendall_tau_sure"))
        lines.append(f"- Layout τ over sure pairs, model {center:.3f} ± {half:.3f} against "
                     + "; ".join(apart(layout, "model", rankers, "kendall_tau_sure")) + ".")
        s_center, s_half = interval(share_per_seed(layout, "model"))
        lines.append(f"- Layout τ over all pairs as a share of the noise ceiling: "
                     f"{s_center:.2f} ± {s_half:.2f} (target ≥ 0.70).")
    if tile:
        rankers = [m for m in RANKERS if any(m in g for g in tile)]
        center, half = interval(per_seed(tile, "model", "kaggle_tile_score"))
        lines.append(f"- Tile Kaggle score, model {center:.3f} ± {half:.3f} against "
                     + "; ".join(apart(tile, "model", rankers, "kaggle_tile_score")) + ".")
    return lines


def label_summary(data: Path) -> str:
    """How sure the dataset's labels are and where its headroom lies, per collection and
    strategy: pairs with disjoint CIs, median CI, A/A controls, the noise ceiling, and how
    many graphs have a config faster than the default (surely: its CI below 1)."""
    import numpy as np
    import polars as pl

    from tpugraphs_tools.collect.labels import separated_pairs
    from tpugraphs_tools.store import Dataset, beats_default, graph_label_stats

    dataset = Dataset.open(data)
    kinds = dict(dataset.graphs().select("graph_id", "collection").iter_rows())
    configs = dataset.table("configs")
    strategy = dict(configs.filter(~pl.col("is_default")).group_by("graph_id")
                    .agg(pl.col("strategy").first()).iter_rows())
    groups: dict[str, dict[str, list]] = {}
    for (graph_id,), rows in configs.group_by("graph_id"):
        key = f"{kinds.get(graph_id)}, {strategy.get(graph_id)}"
        group = groups.setdefault(key, {"cis": [], "half": [], "controls": [], "stats": []})
        group["stats"].append(graph_label_stats(rows))
        cis = []
        for r in rows.to_dicts():
            if r["status"] == "control":
                group["controls"].append(r["relative_ci_low"] <= 1.0 <= r["relative_ci_high"])
            if r["status"] != "ok" or r["relative_ci_low"] is None:
                continue
            ci = (1.0, 1.0) if r["is_default"] else (r["relative_ci_low"], r["relative_ci_high"])
            cis.append(ci)
            if not r["is_default"]:
                group["half"].append((ci[1] - ci[0]) / 2 / r["relative_to_default"])
        group["cis"].append(cis)
    lines = ["| collection, strategy | graphs | pairs with disjoint CIs | median CI ± | "
             "A/A controls holding 1.0 | noise ceiling τ | graphs with a config faster than "
             "the default (surely) | median fastest ÷ default |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key, g in sorted(groups.items()):
        pairs = sum(len(c) * (len(c) - 1) // 2 for c in g["cis"])
        sure = sum(separated_pairs(*zip(*c, strict=True)) for c in g["cis"] if c)
        median = 100 * float(np.median(g["half"])) if g["half"] else math.nan
        ceilings = [c.kendall_tau for c, _ in g["stats"] if c is not None]
        rooms = [r for _, r in g["stats"] if r is not None]
        faster = sum(r.fastest < 1 for r in rooms)
        surely = beats_default(rooms).beaten  # the definition tgt baseline and report use
        fastest = statistics.median(r.fastest for r in rooms) if rooms else math.nan
        lines.append(f"| {key} | {len(g['cis'])} | {sure:,}/{pairs:,} "
                     f"({100 * sure / max(pairs, 1):.0f}%) | ±{median:.1f}% | "
                     f"{sum(g['controls'])}/{len(g['controls'])} | "
                     f"{statistics.fmean(ceilings) if ceilings else math.nan:.3f} | "
                     f"{faster}/{len(rooms)} ({surely}) | {fastest:.3f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated, of: {', '.join(VARIANTS)}")
    parser.add_argument("--save", type=Path, default=None,
                        help="JSON of every held-out record [default: DATA/../<name>-cv.json]")
    parser.add_argument("--resume", action="store_true", help="skip runs already in --save")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: tables from the runs in --save (each method shows "
                        "its own number of seeds)")
    parser.add_argument("--write", action="store_true",
                        help="update docs/benchmarks.md (verdicts) and "
                        "docs/benchmarks/cost-model.md (every table)")
    parser.add_argument("--title", default="Reference cost model on the reference plan",
                        help="the section --write replaces on both pages")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    save = args.save or args.data.parent / f"{args.data.name}-cv.json"
    done: dict[str, Any] = json.loads(save.read_text()) \
        if (args.resume or args.report_only) and save.exists() \
        else {"runs": {}, "records": []}
    strategies = {i.graph_id: i.strategy for i in TgtSource(args.data).index()}
    for seed in seeds:
        for variant in variants:
            key = f"{variant}/{seed}"
            if key in done["runs"] or args.report_only:
                continue
            if len(seeds) * len(variants) > 1:
                # one process per run: in one long process XLA:CPU's compiled code piles up
                # until LLVM fails with "Cannot allocate memory" (seen after 7 runs)
                subprocess.run([sys.executable, __file__, str(args.data), "--seeds", str(seed),
                                "--variants", variant, "--epochs", str(args.epochs),
                                "--save", str(save), "--resume"],
                               check=True, stdout=subprocess.DEVNULL)
                done = json.loads(save.read_text())
                continue
            start = time.perf_counter()
            try:
                report = run_baseline(args.data, options(variant, seed, args.epochs)).to_json()
            except NothingToScore as exc:      # e.g. default-only on a split with none
                print(f"{key}: skipped: {exc}", file=sys.stderr)
                continue
            done["records"] += held_out(report, seed, variant, strategies)
            done["runs"][key] = {"seconds": round(time.perf_counter() - start, 1),
                                 "options": dataclasses.asdict(options(variant, seed,
                                                                       args.epochs))}
            save.write_text(json.dumps(done))
            print(f"{key}: {done['runs'][key]['seconds']} s", file=sys.stderr)
    records = [r for r in done["records"] if r["seed"] in seeds and r["variant"] in variants]
    body = render(args.data, records, seeds, args.epochs, done["runs"])
    print(body)
    if args.write:  # the verdicts on the page of current figures, every table beside it
        from _doc import DETAILS, heading_id, record  # bench/ is on sys.path as a script

        tables = DETAILS / "cost-model.md"
        record(args.title, summary(args.data, records)
               + f"\n\nEvery table: [{tables.name}]({DETAILS.name}/{tables.name}"
               f"#{heading_id(args.title)}).")
        record(args.title, body, doc=tables)
    return 0


def merged(records: list[dict], collection: str) -> list[dict]:
    """One row per (seed, held-out graph) with every variant's methods side by side."""
    by: dict[tuple[int, str], dict] = {}
    for r in records:
        if r["collection"] != collection:
            continue
        row = by.setdefault((r["seed"], r["graph_id"]), {"seed": r["seed"],
                                                         "graph_id": r["graph_id"],
                                                         "strategy": r["strategy"]})
        row.update({k: v for k, v in r.items() if isinstance(v, dict)})
    return list(by.values())


def summary(data: Path, records: list[dict]) -> str:
    """The labels' summary and the verdicts: what docs/benchmarks.md shows of a run."""
    layout, tile = merged(records, "layout"), merged(records, "tile")
    return "\n".join([label_summary(data), "", *verdicts(layout, tile)])


def render(data: Path, records: list[dict], seeds: list[int], epochs: int,
           runs: dict[str, dict]) -> str:
    layout, tile = merged(records, "layout"), merged(records, "tile")
    minutes = sum(r["seconds"] for r in runs.values()) / 60
    out = [label_summary(data), "",
           f"Up to {len(seeds)} seeds, each a different by-program split (an ablation run on "
           "fewer seeds is compared on those splits only in the text); model `sage`, hidden 64, "
           f"3 layers, ListMLE, {epochs} epochs, full graphs; {minutes:.0f} min of training "
           "and scoring in all. Mean over held-out graphs, ± a 95% interval over the seeds' "
           "means; `kendall_tau_sure` counts the pairs whose label CIs are disjoint; "
           "`noise-ceiling` is the τ two reruns of the same configs would reach "
           "(docs/baseline.md); `fewer-copies` reads the optimized HLO, which a cost model "
           "does not get.", ""]
    if layout:
        graphs = len({g["graph_id"] for g in layout})
        out += [f"**Layout**, {len(layout)} held-out graphs over {graphs} distinct graphs:", "",
                *table(layout, LAYOUT_METRICS, share=True), ""]
        for strategy in ("default", "random"):
            part = [g for g in layout if g["strategy"] == strategy]
            if part:
                out += [f"Held-out `{strategy}`-strategy graphs only ({len(part)}):", "",
                        *table(part, ("kendall_tau", "kendall_tau_sure"), share=False), ""]
    if tile:
        out += [f"**Tile**, {len(tile)} held-out kernels over "
                f"{len({g['graph_id'] for g in tile})} distinct kernels:", "",
                *table(tile, TILE_METRICS, share=False), ""]
    out += verdicts(layout, tile)
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
