"""Do a tile collection's claimed orders hold in a rerun? (issue 36, acceptance)

Runs ``tgt collect --collection tile --program resnet18 --preset tiny --configs 8 --seed 1``
(plain: every other option at its default) ``2 × --pairs`` times, each into a fresh dataset,
and for each pair of runs counts, over the configs ok in both: the pairs of one kernel whose
95% CIs are disjoint in the first run (claimed), how many of those keep their order in the
second (kept), and the A/A controls whose CI holds 1.0. Targets: kept/claimed ≥ 97%,
claimed/pairs ≥ 40%, A/A ≥ 95%. ``--write`` puts the table into docs/benchmarks.md.

    python bench/bench_tile_rerun.py --pairs 2 --write
    python bench/bench_tile_rerun.py --pairs 1 --configs 3 --max-kernels 2   # smoke run

Run it on a quiet machine: it is a timing benchmark.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _doc import record
from _label_claims import claimed_pairs, controls

from tpugraphs_tools.store import MANIFEST, Dataset

TITLE = "Tile labels: claimed orders kept in a rerun"


def collect(out: Path, configs: int, max_kernels: int | None, seed: int) -> tuple[list, float]:
    """One plain tile collection: its config rows and its wall seconds."""
    command = [sys.executable, "-m", "tpugraphs_tools.cli", "collect", "--collection", "tile",
               "--program", "resnet18", "--preset", "tiny", "--configs", str(configs),
               "--seed", str(seed), "--out", str(out)]
    if max_kernels is not None:
        command += ["--max-kernels", str(max_kernels)]
    start = time.monotonic()
    subprocess.run(command, check=True, capture_output=True)
    seconds = time.monotonic() - start
    if not (out / MANIFEST).exists():  # no kernel had two distinct configs: nothing stored
        return [], seconds
    return Dataset.open(out).configs().to_dicts(), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2, help="pairs of runs")
    parser.add_argument("--configs", type=int, default=8)
    parser.add_argument("--max-kernels", type=int, default=None, help="smoke runs only")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", type=Path, default=None, help="keep the datasets here")
    parser.add_argument("--write", action="store_true", help="into docs/benchmarks.md")
    args = parser.parse_args()
    if args.save is not None:
        run(args, args.save)
        return
    with tempfile.TemporaryDirectory(prefix="tile-rerun-") as scratch:
        run(args, Path(scratch))


def run(args: argparse.Namespace, scratch: Path) -> None:
    lines = ["| pair | pairs | claimed | kept | kept % | claimed % | A/A holds 1 | wall s |",
             "|---|---|---|---|---|---|---|---|"]
    total = {"pairs": 0, "claimed": 0, "kept": 0, "held": 0, "controls": 0}
    for pair in range(args.pairs):
        runs = [collect(scratch / f"pair{pair}-{side}", args.configs, args.max_kernels,
                        args.seed) for side in "ab"]
        (first, wall_a), (second, wall_b) = runs
        pairs, claimed, kept = claimed_pairs(first, second, "ci")
        held = [controls(rows) for rows, _ in runs]
        row = {"pairs": pairs, "claimed": claimed, "kept": kept,
               "held": sum(h for h, _ in held), "controls": sum(n for _, n in held)}
        for key, value in row.items():
            total[key] += value
        lines.append(_line(str(pair + 1), row, f"{wall_a:.0f} / {wall_b:.0f}"))
        print(json.dumps({"pair": pair + 1, **row}), flush=True)
    lines.append(_line("all", total, ""))
    table = "\n".join(lines)
    print(table)
    if args.write:
        record(TITLE, "Plain tile collections of resnet18 tiny (every option at its default), "
                      "run twice per pair; pairs of configs of one kernel ok in both runs. "
                      "Claimed: 95% CIs disjoint in the first run; kept: the second run "
                      "orders them the same way. Targets: kept ≥ 97%, claimed ≥ 40%, A/A "
                      f"≥ 95%.\n\n{table}")


def _line(name: str, row: dict[str, int], wall: str) -> str:
    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:.1f}%" if b else "-"

    return (f"| {name} | {row['pairs']} | {row['claimed']} | {row['kept']} | "
            f"{pct(row['kept'], row['claimed'])} | {pct(row['claimed'], row['pairs'])} | "
            f"{row['held']}/{row['controls']} ({pct(row['held'], row['controls'])}) | {wall} |")


if __name__ == "__main__":
    main()
