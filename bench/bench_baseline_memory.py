"""Peak RSS of ``tgt baseline`` as configs per graph or graphs grow: lazy vs in memory.

``--axis configs``: for each C in ``--configs`` a synthetic tgt dataset
(``baseline/synthetic.py``) of ``--graphs`` layout graphs × C configs. ``--axis graphs``: for
each G in ``--graph-counts`` a dataset of G graphs × ``--configs`` (one value) configs, at
fixed ``--nodes``. Then ``tgt baseline --epochs 1 --holdout programs --max-configs 1000000``
(every config kept, so the in-memory path really holds them all) runs three times as its own
process under ``/usr/bin/time``:

- ``in-memory``: ``--in-memory-configs`` (every graph's arrays and config arrays held);
- ``lazy, cold``: ``--lazy-configs`` with no cache yet (the run repacks every graph);
- ``lazy, warm``: ``--lazy-configs`` again, reading the cache it built.

    nice -n 19 python bench/bench_baseline_memory.py --configs 1000 8000
    nice -n 19 python bench/bench_baseline_memory.py --axis graphs --graph-counts 16 64 \
        --configs 64 --nodes 4000
    ... --write   # update docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from bench_scale import measure  # noqa: E402

from tpugraphs_tools.baseline.configstore import CACHE_DIR  # noqa: E402
from tpugraphs_tools.baseline.synthetic import write_synthetic_dataset  # noqa: E402

HEADINGS = {"configs": "## tgt baseline: memory vs configs per graph (#14)",
            "graphs": "## tgt baseline: memory vs number of graphs (#14)"}
LABELS = {"configs": "configs/graph", "graphs": "graphs"}
MODES = (("in-memory", "--in-memory-configs", True), ("lazy, cold", "--lazy-configs", True),
         ("lazy, warm", "--lazy-configs", False))


def run(configs: int, graphs: int, args: argparse.Namespace, work: Path
        ) -> list[dict[str, Any]]:
    data = work / f"c{configs}-g{graphs}"
    start = time.perf_counter()
    write_synthetic_dataset(data, programs=graphs // 2, graphs_per_program=2,
                            nodes=(args.nodes, args.nodes), configs=configs, seed=0)
    print(f"C={configs} G={graphs}: dataset written in {time.perf_counter() - start:.0f} s",
          flush=True)
    rows = []
    for label, flag, clear in MODES:
        if clear:
            shutil.rmtree(data / CACHE_DIR.parent, ignore_errors=True)  # configs + graphs
        result = measure(["baseline", str(data), "--epochs", "1", "--holdout", "programs",
                          "--max-configs", "1000000", "--hidden", "32", "--layers", "2",
                          "--report", str(work / "report.json"), flag])
        rows.append({"configs": configs, "graphs": graphs, "mode": label, **result})
        print(rows[-1], flush=True)
    shutil.rmtree(data)
    return rows


def table(rows: list[dict[str, Any]], axis: str) -> str:
    key = axis
    lines = [f"| {LABELS[axis]} | path | seconds | peak RSS MiB |", "|---:|---|---:|---:|"]
    lines += [f"| {r[key]:,} | {r['mode']} | {r['seconds']} | {r['peak_mib']} |"
              for r in rows]
    first, last = min(r[key] for r in rows), max(r[key] for r in rows)
    unit = "configs per graph" if axis == "configs" else "graphs"
    lines.append("")
    for label, _, _ in MODES:
        a = next(r for r in rows if r[key] == first and r["mode"] == label)
        b = next(r for r in rows if r[key] == last and r["mode"] == label)
        growth = 100 * (b["peak_mib"] - a["peak_mib"]) / a["peak_mib"]
        lines.append(f"* {label}: peak RSS {a['peak_mib']} → {b['peak_mib']} MiB "
                     f"({growth:+.0f}%) from {first:,} to {last:,} {unit}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--axis", choices=sorted(HEADINGS), default="configs")
    parser.add_argument("--configs", type=int, nargs="+", default=[1000, 8000])
    parser.add_argument("--graphs", type=int, default=12)
    parser.add_argument("--graph-counts", type=int, nargs="+", default=[16, 64],
                        help="--axis graphs: graphs per dataset")
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    if args.axis == "graphs" and len(args.configs) != 1:
        parser.error("--axis graphs takes one --configs value")
    grid = [(c, args.graphs) for c in args.configs] if args.axis == "configs" else \
        [(args.configs[0], g) for g in args.graph_counts]
    with tempfile.TemporaryDirectory(prefix="tgt-bench-baseline-") as tmp:
        rows = [r for c, g in grid for r in run(c, g, args, Path(tmp))]
    text = table(rows, args.axis)
    print(text)
    if args.write:
        path = ROOT / "docs" / "benchmarks.md"
        doc = path.read_text()
        command = ("nice -n 19 python bench/bench_baseline_memory.py --configs "
                   + " ".join(map(str, args.configs)) + f" --graphs {args.graphs} "
                   f"--nodes {args.nodes}")
        if args.axis == "graphs":
            command = ("nice -n 19 python bench/bench_baseline_memory.py --axis graphs "
                       "--graph-counts " + " ".join(map(str, args.graph_counts))
                       + f" --configs {args.configs[0]} --nodes {args.nodes}")
        heading = HEADINGS[args.axis]
        section = f"{heading}\n\nMeasured {time.strftime('%Y-%m-%d')} with `{command}`.\n\n" \
                  f"{text}\n"
        if heading in doc:
            head, rest = doc.split(heading, 1)
            tail = rest.split("\n## ", 1)
            doc = head + section + ("\n## " + tail[1] if len(tail) > 1 else "")
        else:
            doc = doc.rstrip("\n") + "\n\n" + section
        path.write_text(doc)


if __name__ == "__main__":
    main()
