"""Peak memory and time of import, validate, report, publish and partition as a dataset grows.

For each N in ``--graphs`` a synthetic official tree of N layout graphs × ``--configs`` configs
(``bench/gen_tree.py``, plus tile kernels) is imported, the dataset validated, reported on,
published and partitioned.
Each command runs as its own ``tgt`` process under ``/usr/bin/time``: "peak RSS" is the largest
single process of the command (``%M``, ru_maxrss); "tree RSS" is the peak of the summed RSS of
the command and its worker processes, sampled every 50 ms (psutil).

    python bench/bench_scale.py --graphs 240 960 --configurable 20 --tiles-per-graph 4
    nice -n 19 python bench/bench_scale.py --graphs 60 240 --jobs 1
    nice -n 19 python bench/bench_scale.py --graphs 1000 --nodes 300 --configurable 10 --jobs 1
    nice -n 19 python bench/bench_scale.py --graphs 60 240 --steps import --keep
    nice -n 19 python bench/bench_scale.py --graphs 60 240 --steps validate --keep  # reuses them
    ... --write   # update docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

TGT = [sys.executable, "-c", "from tpugraphs_tools.cli import main; main()"]


def measure(args: list[str]) -> dict[str, Any]:
    """Run ``tgt args`` under /usr/bin/time; wall seconds, peak RSS and peak tree RSS (MiB)."""
    # The command's output goes to a file: a pipe read only at the end fills up (64 KiB) and
    # blocks a chatty command (partition's per-graph lines) forever.
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out, \
            tempfile.TemporaryFile("w+b") as log:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = ["/usr/bin/time", "-f", "%M %e %U %S", "-o", out.name, *TGT, *args]
        start = time.perf_counter()
        proc = psutil.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        tree_peak = 0
        while proc.poll() is None:
            total = 0
            try:
                for p in [proc, *proc.children(recursive=True)]:
                    if p.pid == proc.pid:
                        continue  # /usr/bin/time itself
                    total += p.memory_info().rss
            except psutil.Error:
                pass
            tree_peak = max(tree_peak, total)
            time.sleep(0.05)
        wall = time.perf_counter() - start
        log.seek(0)
        output = log.read().decode(errors="replace")
        if proc.returncode != 0:
            raise SystemExit(f"tgt {' '.join(args)} failed ({proc.returncode}):\n{output}")
        max_kb, _, user, system = out.read().split()[-4:]
    return {"seconds": round(wall, 1), "cpu_seconds": round(float(user) + float(system), 1),
            "peak_mib": round(int(max_kb) / 1024), "tree_mib": round(tree_peak / 2**20)}


def run(n: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from gen_tree import write_tree

    tree, data, pub = work / f"tree-{n}", work / f"data-{n}", work / f"pub-{n}"
    report = work / f"report-{n}"
    tiles = args.tiles if args.tiles_per_graph is None else args.tiles_per_graph * n
    if not tree.exists():
        print(f"generating {tree} ...", flush=True)
        write_tree(tree, n, args.configs, args.nodes, args.configurable, tiles,
                   args.tile_configs)
    if "import" in args.steps:
        shutil.rmtree(data, ignore_errors=True)
    elif not (data / "manifest.json").is_file():
        raise SystemExit(f"{data}: no dataset; run with --steps import --keep first")
    shutil.rmtree(pub, ignore_errors=True)
    shutil.rmtree(report, ignore_errors=True)
    jobs = ["--jobs", str(args.jobs)]
    result: dict[str, Any] = {"graphs": n}
    commands = {"import": ["import", str(tree), "--out", str(data), *jobs],
                "validate": ["validate", str(data), *jobs],
                "report": ["report", str(data), "--out", str(report)],
                "publish": ["publish", str(data), "--out", str(pub), "--name", "bench"],
                "partition": ["partition", str(data), "--segments", str(args.segments)]}
    for step in STEPS:
        if step in args.steps:
            result[step] = measure(commands[step])
    manifest = json.loads((data / "manifest.json").read_text())
    result["config_rows"] = manifest["tables"]["configs"]["rows"]
    result["parts"] = len(manifest["tables"]["configs"]["parts"])
    result["tree_mb"] = round(sum(p.stat().st_size for p in tree.rglob("*") if p.is_file()) / 1e6)
    print(json.dumps(result), flush=True)
    shutil.rmtree(report, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(pub, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)
    return result


STEPS = ("import", "validate", "report", "publish", "partition")


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| graphs | config rows | parts | command | seconds | CPU seconds | peak RSS MiB "
             "| tree RSS MiB |", "|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in results:
        for cmd in (c for c in STEPS if c in r):
            m = r[cmd]
            lines.append(f"| {r['graphs']} | {r['config_rows']:,} | {r['parts']} | {cmd} | "
                         f"{m['seconds']} | {m['cpu_seconds']} | {m['peak_mib']} | {m['tree_mib']} |")
    if len(results) >= 2:
        a, b = results[0], results[-1]
        lines.append("")
        lines.append(f"Growth {a['graphs']} → {b['graphs']} graphs "
                     f"({b['graphs'] / a['graphs']:.0f}× the data):")
        lines.append("")
        for cmd in (c for c in STEPS if c in a and c in b):
            ma, mb = a[cmd], b[cmd]
            lines.append(f"* {cmd}: peak RSS {mb['peak_mib'] / ma['peak_mib'] - 1:+.0%}, "
                         f"tree RSS {mb['tree_mib'] / ma['tree_mib'] - 1:+.0%}, time "
                         f"×{mb['seconds'] / ma['seconds']:.2f}, CPU time "
                         f"×{mb['cpu_seconds'] / ma['cpu_seconds']:.2f} for "
                         f"×{b['config_rows'] / a['config_rows']:.2f} config rows")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", type=int, nargs="+", default=[60, 240])
    ap.add_argument("--configs", type=int, default=3000)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--configurable", type=int, default=40)
    ap.add_argument("--tiles", type=int, default=20)
    ap.add_argument("--tiles-per-graph", type=int, default=None,
                    help="tile kernels per layout graph (overrides --tiles, scales with N)")
    ap.add_argument("--tile-configs", type=int, default=200)
    ap.add_argument("--segments", type=int, default=8, help="k for the partition step")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "out" / "scale")
    ap.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS),
                    help="commands to measure; without import, the datasets a --keep run "
                         "left are reused")
    ap.add_argument("--keep", action="store_true", help="keep datasets and publish output")
    ap.add_argument("--title", default="Scale: import / validate / report / publish / partition "
                                       "memory and time")
    ap.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results = [run(n, args, args.work) for n in args.graphs]
    body = table(results)
    print(body)
    if args.write:
        from _doc import record

        load = os.getloadavg()
        tiles_text = (f"{args.tiles_per_graph} tile kernels per graph"
                      if args.tiles_per_graph is not None else f"{args.tiles} tile kernels")
        record(args.title, f"{len(results)} synthetic trees (`bench/gen_tree.py`): "
               f"{args.configs} configs × {args.nodes} nodes (~{args.configurable} configurable) "
               f"per layout graph, plus {tiles_text} × {args.tile_configs} configs; "
               f"`--jobs {args.jobs}`; plain runs (no nice) on a 2-core machine, load average "
               f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end (times are noisy)."
               f"\n\n{body}")


if __name__ == "__main__":
    main()
