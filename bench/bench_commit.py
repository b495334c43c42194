"""Per-graph commit time of a growing collection: flat, or growing with the dataset?

Measures the store commit path a collection takes after each graph (``collect.graphs.
write_graphs``: npz + raw HLO + graph row + its config rows + device, one transaction) with
synthetic graphs instead of compiling programs, so the dataset grows by one graph per commit
exactly as ``tgt collect`` does. Reports the median commit time of the first and the last ten
graphs, and how many table parts the dataset ends with (small parts are merged as they pile up).

    nice -n 19 python bench/bench_commit.py --graphs 50 --configs 200
    ... --write   # update docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))


def run(out: Path, graphs: int, configs: int, nodes: int) -> list[float]:
    from tpugraphs_tools.baseline.synthetic import layout_graph
    from tpugraphs_tools.store import Dataset

    shutil.rmtree(out, ignore_errors=True)
    ds = Dataset.open(out, create=True)
    times = []
    for i in range(graphs):
        arrays, copies = layout_graph(i, nodes, configs, configurable_frac=0.1)
        fp = hashlib.sha256(f"graph-{i}".encode()).hexdigest()
        gid = f"prog{i:03d}.{fp[:12]}"
        row = {"graph_id": gid, "collection": "layout", "program": f"prog{i:03d}",
               "program_args": "{}", "source": "jax", "hlo_stage": "unoptimized",
               "fingerprint": fp, "backend": "cpu", "device_kind": "cpu",
               "num_nodes": nodes, "num_edges": int(arrays["edge_index"].shape[0]),
               "num_configurable": int(arrays["node_config_ids"].shape[0]),
               "num_configs": configs}
        rows = [{"config_index": j, "strategy": "random", "seed": 0, "is_default": j == 0,
                 "status": "ok", "config": json.dumps({"j": j}), "npz_row": j,
                 "num_copies": int(copies[j]),
                 "runtime_min_ns": int(arrays["config_runtime"][j])} for j in range(configs)]
        start = time.perf_counter()
        with ds.transaction() as tx:
            tx.put_graph(row, arrays, hlo=b"HloModule m" * 200, hlo_suffix=".hlo.txt")
            tx.add_device("cpu", "cpu")
            tx.put_configs(gid, rows)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", type=int, default=50)
    ap.add_argument("--configs", type=int, default=200)
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "commit")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    times = run(args.out, args.graphs, args.configs, args.nodes)
    from tpugraphs_tools.store import Dataset

    info = Dataset.open(args.out).table_info("configs")
    first, last = statistics.median(times[:10]), statistics.median(times[-10:])
    body = (f"{args.graphs} graphs × {args.configs} config rows ({args.nodes} nodes), one "
            f"commit per graph, under `nice -n 19` on a 2-core machine shared with other jobs.\n\n"
            f"| graphs | median commit, first 10 | median commit, last 10 | last ÷ first | "
            f"slowest commit | configs parts at the end |\n|---:|---:|---:|---:|---:|---:|\n"
            f"| {args.graphs} | {first * 1000:.0f} ms | {last * 1000:.0f} ms | "
            f"{last / first:.2f} | {max(times) * 1000:.0f} ms | {len(info.parts)} |")
    print(body)
    print("all commits (ms):", [round(t * 1000) for t in times])
    if args.write:
        from _doc import record

        record("Collection commits: time per graph as the dataset grows", body)


if __name__ == "__main__":
    main()
