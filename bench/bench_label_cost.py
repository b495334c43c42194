"""What certain labels cost as a user gets them: plain ``tgt collect`` runs, the paired engine
at its defaults next to the fixed engine (and optional variants) on the same configs.

Each engine runs twice per pair of runs (run 1 claims the config orders whose 95% CIs are
disjoint, as ``collect.labels.separated_pairs`` counts them; run 2 says whether each claimed
order held). The runs of one pair are interleaved A B C C B A (engines, then the same engines
backwards), so a host whose load drifts during the pair charges every engine alike; wall time
is read against the fixed engine's in the same pair. Every run is a plain subprocess
``tgt collect`` into a fresh dataset: no scheduler priority, no CPU pinning; the host's load
average is recorded before and after it. Each run is saved as JSON under ``--save`` the moment
it ends; ``--report-only`` rebuilds the table from saved runs.

    python bench/bench_label_cost.py --pairs 4 --variant race='--race' --write
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from _label_claims import claimed_pairs, concordance, controls, has_ci, ok_labels

# name -> the `tgt collect` flags of its collection
PROGRAMS = {
    "resnet18": "--program resnet18 --preset tiny --batch-size 1 --configs 12",
    "resnet50": "--program resnet50 --image-size 112 --batch-size 1 --configs 12",
    "tile": "--collection tile --program resnet18 --preset tiny --batch-size 1 --configs 8",
}
ENGINES = {"paired": "", "fixed": "--engine fixed"}  # defaults; --variant adds more
FIXED = "fixed"
TITLE = "Label cost and reproducibility: plain `tgt collect`"
KEEP = ("graph_id", "config_index", "status", "is_default", "relative_to_default",
        "relative_ci_low", "relative_ci_high", "rounds", "stop_reason", "runtime_cv")


def schedule(programs: Sequence[str], engines: Sequence[str], pairs: int
             ) -> list[tuple[int, str, str, int]]:
    """(pair, program, engine, run 1 or 2) in the order to run them: per pair and program,
    every engine's run 1, then every engine's run 2 in reverse order."""
    return [(p, name, engine, run)
            for p in range(1, pairs + 1) for name in programs
            for engine, run in [*((e, 1) for e in engines), *((e, 2) for e in reversed(engines))]]


def tgt_command() -> list[str]:
    """``tgt`` as the user's shell finds it, else the one next to this interpreter."""
    found = shutil.which("tgt") or str(Path(sys.executable).with_name("tgt"))
    return [found]


def collect_once(flags: list[str]) -> dict[str, Any]:
    """One plain ``tgt collect`` into a fresh dataset: wall time, load, and its config rows."""
    from tpugraphs_tools.store import Dataset

    with TemporaryDirectory(prefix="tgt-label-cost-") as out:
        command = [*tgt_command(), "collect", *flags, "--out", out]
        load_before = os.getloadavg()
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        load_after = os.getloadavg()
        if done.returncode not in (0, 3):  # 3: partial (a default that failed), still rows
            raise RuntimeError(f"{shlex.join(command)} exited {done.returncode}:\n"
                               f"{done.stderr[-2000:]}")
        rows = Dataset.open(out).table("configs").to_dicts()
    return {"wall_s": wall, "load_before": list(load_before), "load_after": list(load_after),
            "returncode": done.returncode,
            "rows": [{k: r.get(k) for k in KEEP} for r in rows]}


def _range(values: Sequence[float], fmt: str, unit: str = "") -> str:
    """Median (min–max), or the one value."""
    if not values:
        return "-"
    median = format(statistics.median(values), fmt) + unit
    if len(values) == 1:
        return median
    return f"{median} ({format(min(values), fmt)}–{format(max(values), fmt)}{unit})"


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "-"


def _pairs_of(runs: list[dict]) -> list[tuple[dict, dict]]:
    """(run 1, run 2) of every pair of runs that has both."""
    by_pair: dict[int, dict[int, dict]] = {}
    for r in runs:
        by_pair.setdefault(r["pair"], {})[r["run"]] = r
    return [(got[1], got[2]) for _, got in sorted(by_pair.items()) if 1 in got and 2 in got]


def engine_row(runs: list[dict], fixed_walls: dict[int, float]) -> dict[str, str]:
    """One engine's figures over its runs of one program (``fixed_walls``: the fixed engine's
    summed wall time per pair, for the ratio)."""
    pairs = _pairs_of(runs)
    walls = [r["wall_s"] for r in runs]
    per_pair: dict[int, float] = {}
    for r in runs:
        per_pair[r["pair"]] = per_pair.get(r["pair"], 0.0) + r["wall_s"]
    ratios = [w / fixed_walls[p] for p, w in per_pair.items() if fixed_walls.get(p)]
    with_ci = any(has_ci(r) for run in runs for r in ok_labels(run["rows"]).values()
                  if not r["is_default"])
    claim = kept = cv_kept = "-"
    if not with_ci:
        claim = kept = "no CI"
    elif pairs:
        counts = [claimed_pairs(a["rows"], b["rows"], "ci") for a, b in pairs]
        claim = _share(sum(c[1] for c in counts), sum(c[0] for c in counts))
        kept = _share(sum(c[2] for c in counts), sum(c[1] for c in counts))
    if pairs and (runs[0]["engine"] == FIXED or not with_ci):  # the old engine's own rule
        counts = [claimed_pairs(a["rows"], b["rows"], "cv") for a, b in pairs]
        cv_kept = (f"{sum(c[2] for c in counts)}/{sum(c[1] for c in counts)} kept of "
                   f"{sum(c[0] for c in counts)}")
    taus = [t for a, b in pairs if (t := concordance(a["rows"], b["rows"])) is not None]
    held = [controls(r["rows"]) for r in runs]
    labels = sum(len(ok_labels(r["rows"])) for r in runs)
    stops = Counter(str(row["stop_reason"]) for r in runs for row in ok_labels(r["rows"]).values()
                    if not row["is_default"] and row["stop_reason"] is not None)
    loads = [f"{r['load_before'][0]:.1f}→{r['load_after'][0]:.1f}" for r in runs]
    return {
        "runs": str(len(runs)),
        "wall": _range(walls, ".0f"),
        "ratio": _range(ratios, ".2f", "×"),
        "claimed": claim, "kept": kept,
        "controls": _share(sum(h for h, _ in held), sum(n for _, n in held)),
        "per_minute": f"{60 * labels / sum(walls):.1f}" if sum(walls) > 0 else "-",
        "tau": _range(taus, ".2f"),
        "cv_kept": cv_kept,
        "stops": ", ".join(f"{k} {v}" for k, v in sorted(stops.items())) or "-",
        "load": ", ".join(loads),
    }


COLUMNS = (("runs", "runs"), ("wall", "wall s, median (range) over runs"),
           ("ratio", "wall ÷ fixed, same pair"), ("claimed", "pairs claimed (run 1)"),
           ("kept", "claimed order kept (run 2)"), ("controls", "A/A control holds 1.0"),
           ("per_minute", "labels / min"), ("tau", "rerun τ, median (range)"),
           ("cv_kept", r"\|Δ\| > 2×CV claims kept"), ("stops", "stop reasons"),
           ("load", "1-min load before→after"))


def report(runs: list[dict]) -> str:
    """The table: one row per program and engine, in the order the runs were made (flags
    as the saved runs give them)."""
    engines = {r["engine"]: r["engine_flags"] for r in runs}
    collections = {r["program"]: r["collection"] for r in runs}
    lines = [
        "Plain `tgt collect` runs (subprocess, no scheduler priority or CPU pinning), each into "
        "a fresh dataset, every engine twice per pair of runs, interleaved A B C C B A within a "
        "pair. Pairs claimed: config pairs of one graph whose 95% CIs are disjoint in run 1 "
        "(the default's CI is [1, 1]; as `tgt collect` counts them), summed over pairs of runs; "
        "kept: claimed orders run 2 repeats. Wall ÷ fixed: the engine's two runs over the fixed "
        "engine's two in the same pair. Rerun τ: Kendall τ of runs 1 and 2 over pairs of "
        "configs of one graph. |Δ| > 2×CV: the old engine's claim rule (claims kept of pairs), "
        "for the fixed engine and any collection without CIs. "
        "Labels / min: ok labels over wall time, start-up included. No CI: the engine stores "
        "no confidence intervals for this collection.", "",
        "Engines: " + "; ".join(f"{name} `{flags or '(defaults)'}`"
                                for name, flags in engines.items()) + ".",
        "Collections (`tgt collect` flags): "
        + "; ".join(f"{name} `{flags}`" for name, flags in collections.items()) + ".", "",
        "| program | engine | " + " | ".join(title for _, title in COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    for name in dict.fromkeys(r["program"] for r in runs):
        mine = [r for r in runs if r["program"] == name]
        fixed_walls: dict[int, float] = {}
        for r in mine:
            if r["engine"] == FIXED:
                fixed_walls[r["pair"]] = fixed_walls.get(r["pair"], 0.0) + r["wall_s"]
        for engine in dict.fromkeys(r["engine"] for r in mine):
            row = engine_row([r for r in mine if r["engine"] == engine], fixed_walls)
            lines.append(f"| {name} | {engine} | "
                         + " | ".join(row[key] for key, _ in COLUMNS) + " |")
    return "\n".join(lines)


def named_flags(values: Sequence[str], what: str) -> dict[str, str]:
    """``NAME='--flags ...'`` options as {name: flags}."""
    out = {}
    for value in values:
        name, sep, flags = value.partition("=")
        if not sep or not name or name.startswith("-"):
            raise SystemExit(f"{what} {value!r}: give NAME='--flags ...'")
        out[name] = flags
    return out


def extra_flags(values: Sequence[str], programs: Sequence[str]) -> dict[str, str]:
    """``--extra '--flags'`` (every collection) or ``--extra NAME='--flags'`` (one)."""
    out = dict.fromkeys(programs, "")
    for value in values:
        if value.lstrip().startswith("-"):
            targets, flags = list(programs), value
        else:
            ((name, flags),) = named_flags([value], "--extra").items()
            targets = [name]
        for name in targets:
            out[name] = f"{out.get(name, '')} {flags}".strip()
    return out


def load_saved(save: Path) -> list[dict]:
    runs = [json.loads(p.read_text()) for p in save.glob("*.json")]
    return sorted(runs, key=lambda r: r["order"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS),
                        help=f"comma-separated subset of {', '.join(PROGRAMS)}")
    parser.add_argument("--pairs", type=int, default=4, help="pairs of runs per engine")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME='--flags'",
                        help="another engine setting, run twice per pair like the others "
                        "(e.g. race='--race', pin='--isolation pin')")
    parser.add_argument("--extra", action="append", default=[], metavar="[NAME=]'--flags'",
                        help="flags added to every collection, or to one (e.g. "
                        "--extra='--configs 3' --extra tile='--max-kernels 2'): smoke tests")
    parser.add_argument("--save", default="bench/out/label_cost")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--write", action="store_true",
                        help=f"replace the '## {TITLE}' section of docs/benchmarks.md")
    args = parser.parse_args()
    names = args.programs.split(",")
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        parser.error(f"unknown --programs {', '.join(unknown)} (known: {', '.join(PROGRAMS)})")
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    engines = {**ENGINES, **named_flags(args.variant, "--variant")}
    extra = extra_flags(args.extra, names)
    save = Path(args.save)
    save.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        if any(save.glob("*.json")):
            parser.error(f"{save} holds saved runs: give a fresh --save, or --report-only")
        for order, (pair, name, engine, run) in enumerate(schedule(names, list(engines),
                                                                   args.pairs)):
            collection = f"{PROGRAMS[name]} --seed {args.seed} {extra[name]}".strip()
            got = collect_once(shlex.split(f"{collection} {engines[engine]}"))
            got.update(order=order, pair=pair, program=name, engine=engine, run=run,
                       collection=collection, engine_flags=engines[engine])
            (save / f"{order:03d}.{name}.{engine}.p{pair}r{run}.json").write_text(json.dumps(got))
            print(f"pair {pair} {name} {engine} run {run}: {got['wall_s']:.1f} s, load "
                  f"{got['load_before'][0]:.1f}→{got['load_after'][0]:.1f}", flush=True)
    runs = [r for r in load_saved(save) if r["program"] in names]
    if not runs:
        parser.error(f"no saved runs of {', '.join(names)} in {save}")
    text = report(runs)
    print(text)
    if args.write:
        from _doc import record

        record(TITLE, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
