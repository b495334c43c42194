"""Peak RSS of ``tgt baseline`` as configs per graph grow: lazy config reads vs in memory.

For each C in ``--configs`` a synthetic tgt dataset (``baseline/synthetic.py``) of
``--graphs`` layout graphs × C configs is written, then ``tgt baseline --epochs 1
--holdout programs --max-configs 1000000`` (every config kept, so the in-memory path really
holds them all) runs three times as its own process under ``/usr/bin/time``:

- ``in-memory``: ``--in-memory-configs`` (every graph's config arrays held, as before);
- ``lazy, cold``: ``--lazy-configs`` with no cache yet (the run repacks every graph);
- ``lazy, warm``: ``--lazy-configs`` again, reading the cache it built.

    nice -n 19 python bench/bench_baseline_memory.py --configs 1000 8000
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

HEADING = "## tgt baseline: memory vs configs per graph (#14)"
MODES = (("in-memory", "--in-memory-configs", True), ("lazy, cold", "--lazy-configs", True),
         ("lazy, warm", "--lazy-configs", False))


def run(configs: int, args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    data = work / f"c{configs}"
    start = time.perf_counter()
    write_synthetic_dataset(data, programs=args.graphs // 2, graphs_per_program=2,
                            nodes=(args.nodes, args.nodes), configs=configs, seed=0)
    print(f"C={configs}: dataset written in {time.perf_counter() - start:.0f} s", flush=True)
    rows = []
    for label, flag, clear in MODES:
        if clear:
            shutil.rmtree(data / CACHE_DIR, ignore_errors=True)
        result = measure(["baseline", str(data), "--epochs", "1", "--holdout", "programs",
                          "--max-configs", "1000000", "--hidden", "32", "--layers", "2",
                          "--report", str(work / "report.json"), flag])
        rows.append({"configs": configs, "mode": label, **result})
        print(rows[-1], flush=True)
    shutil.rmtree(data)
    return rows


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = ["| configs/graph | path | seconds | peak RSS MiB |", "|---:|---|---:|---:|"]
    lines += [f"| {r['configs']:,} | {r['mode']} | {r['seconds']} | {r['peak_mib']} |"
              for r in rows]
    first, last = min(args.configs), max(args.configs)
    lines.append("")
    for label, _, _ in MODES:
        a = next(r for r in rows if r["configs"] == first and r["mode"] == label)
        b = next(r for r in rows if r["configs"] == last and r["mode"] == label)
        growth = 100 * (b["peak_mib"] - a["peak_mib"]) / a["peak_mib"]
        lines.append(f"* {label}: peak RSS {a['peak_mib']} → {b['peak_mib']} MiB "
                     f"({growth:+.0f}%) from {first:,} to {last:,} configs per graph")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, nargs="+", default=[1000, 8000])
    parser.add_argument("--graphs", type=int, default=12)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tgt-bench-baseline-") as tmp:
        rows = [r for c in args.configs for r in run(c, args, Path(tmp))]
    text = table(rows, args)
    print(text)
    if args.write:
        path = ROOT / "docs" / "benchmarks.md"
        doc = path.read_text()
        command = ("nice -n 19 python bench/bench_baseline_memory.py --configs "
                   + " ".join(map(str, args.configs)) + f" --graphs {args.graphs} "
                   f"--nodes {args.nodes}")
        section = f"{HEADING}\n\nMeasured {time.strftime('%Y-%m-%d')} with `{command}`.\n\n" \
                  f"{text}\n"
        if HEADING in doc:
            head, rest = doc.split(HEADING, 1)
            tail = rest.split("\n## ", 1)
            doc = head + section + ("\n## " + tail[1] if len(tail) > 1 else "")
        else:
            doc = doc.rstrip("\n") + "\n\n" + section
        path.write_text(doc)


if __name__ == "__main__":
    main()
