"""Do the operand mismatch counts (`tgt baseline --mismatch-features`) mean what they claim?

Per layout graph of a collected dataset: the Spearman correlation, over its ok configs, of the
summed mismatch counts (baseline/mismatch.py, read from the npz only) with the copies XLA
really inserted (``num_copies``, read back from the optimized HLO) and with the label
(``relative_to_default``), next to the copies' own correlation with the label, which the
`fewer-copies` ranker uses. Medians per strategy at the end.

    python bench/bench_mismatch.py bench/out/reference
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

from tpugraphs_tools.baseline.configstore import layout_values
from tpugraphs_tools.baseline.mismatch import MISMATCH_SLOTS, MismatchCounter
from tpugraphs_tools.store import Dataset


def graph_rows(data: Path) -> list[tuple[str, str, float, float, float]]:
    """(graph_id, strategy, ρ(mismatch, copies), ρ(mismatch, label), ρ(copies, label))."""
    dataset = Dataset.open(data)
    out = []
    for graph_id in dataset.graphs().filter(pl.col("collection") == "layout")["graph_id"]:
        rows = dataset.configs_of(graph_id).filter(
            (pl.col("status") == "ok") & pl.col("npz_row").is_not_null()).sort("npz_row")
        a = dataset.load_arrays(graph_id)
        if rows.height < 4 or "node_config_feat" not in a:
            continue
        counts = MismatchCounter(a["node_feat"], a["edge_index"].astype(np.int64),
                                 a["node_config_ids"].astype(np.int64))(
            layout_values(a["node_config_feat"]))
        total = counts[..., -MISMATCH_SLOTS:].astype(np.int64).sum(axis=(1, 2))
        copies = rows["num_copies"].to_numpy().astype(np.float64)
        label = rows["relative_to_default"].to_numpy()
        strategy = rows.filter(~pl.col("is_default"))["strategy"][0]
        out.append((graph_id, strategy, _rho(total, copies), _rho(total, label),
                    _rho(copies, label)))
    return out


def _rho(x: np.ndarray, y: np.ndarray) -> float:
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(stats.spearmanr(x, y).statistic)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    args = parser.parse_args()
    rows = graph_rows(args.data)
    print("| graph | strategy | ρ(mismatch, copies) | ρ(mismatch, label) | ρ(copies, label) |")
    print("|---|---|---:|---:|---:|")
    for graph_id, strategy, *rhos in rows:
        print(f"| {graph_id} | {strategy} | " + " | ".join(f"{r:.2f}" for r in rhos) + " |")
    print()
    for strategy in sorted({r[1] for r in rows}):
        part = [r for r in rows if r[1] == strategy]
        medians = [statistics.median([v for v in col if not np.isnan(v)])
                   for col in list(zip(*part, strict=True))[2:]]
        print(f"{strategy} ({len(part)} graphs), medians: ρ(mismatch, copies) "
              f"{medians[0]:.2f}, ρ(mismatch, label) {medians[1]:.2f}, ρ(copies, label) "
              f"{medians[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
