"""Cross-table and table↔npz consistency of a tgt dataset.

graphs.parquet counts (num_nodes/edges/configurable/configs) must match the npz, and the
``npz_row`` of a graph's ok configs rows (config_rules.py) must cover its config arrays.
Splits must not share a program or a fingerprint, else the same model leaks from train into
test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from tpugraphs_tools.validate.npz_file import NpzSummary
from tpugraphs_tools.validate.report import Report

GRAPHS = "graphs.parquet"
_COUNT_COLUMNS = (("num_nodes", "num_nodes"), ("num_edges", "num_edges"),
                  ("num_configurable", "num_configurable"))


def _more(count: int) -> str:
    return f" ({count} rows in all)" if count > 1 else ""


@dataclass
class ConfigRefs:
    """Per graph: the (npz_row, configs row) pairs of its configs, for the range check."""

    rel: str
    by_graph: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


def check_graph_against_npz(row: dict, index: int, summary: NpzSummary, refs: ConfigRefs,
                            report: Report, graphs_rel: str = GRAPHS) -> None:
    """graphs row counts vs the npz, and the graph's npz_row values vs its config count."""
    for column, attr in _COUNT_COLUMNS:
        want, got = row.get(column), getattr(summary, attr)
        if isinstance(want, int) and got is not None and want != got:
            report.emit("dataset.graph_row_mismatch", f"graph {row['graph_id']!r}: {column} is "
                        f"{want}, npz has {got}", graphs_rel, key=column, index=index)
    c = summary.num_configs
    if c is None:
        return
    if isinstance(row.get("num_configs"), int) and row["num_configs"] != c:
        report.emit("dataset.num_configs_mismatch", f"graph {row['graph_id']!r}: num_configs "
                    f"is {row['num_configs']}, npz config arrays have {c}", graphs_rel,
                    key="num_configs", index=index)
    found = refs.by_graph.get(str(row["graph_id"]))
    if found is None:
        return
    npz_rows, table_rows = found
    out = np.flatnonzero((npz_rows < 0) | (npz_rows >= c))
    if out.size:
        i = int(out[0])
        report.emit("dataset.npz_row_out_of_range", f"graph {row['graph_id']!r}: npz_row "
                    f"{int(npz_rows[i])} outside its {c} npz configs{_more(out.size)}",
                    refs.rel, key="npz_row", index=int(table_rows[i]))
    used = np.unique(npz_rows[(npz_rows >= 0) & (npz_rows < c)])
    if c and used.size < c:  # only graphs with config rows reach here
        free = np.setdiff1d(np.arange(c), used)
        report.emit("dataset.npz_row_unreferenced", f"graph {row['graph_id']!r}: {free.size} "
                    f"of {c} npz configs have no ok config row (first: {int(free[0])})",
                    row.get("npz_file") or graphs_rel, key="config_runtime",
                    index=int(free[0]))


def check_split_overlap(graphs: pl.DataFrame, report: Report,
                        locate: Callable[[int], tuple[str, int]] = lambda i: (GRAPHS, i)
                        ) -> None:
    """A program or fingerprint in two different (non-null) splits is a train/test leak."""
    if "split" not in graphs.columns:
        return
    rows = graphs.with_row_index("__row").filter(pl.col("split").is_not_null())
    for column in ("program", "fingerprint"):
        if column not in rows.columns:
            continue
        leaks = (rows.filter(pl.col(column).is_not_null())
                 .group_by(column, maintain_order=True)
                 .agg(pl.col("split"), pl.col("__row"))
                 .filter(pl.col("split").list.n_unique() > 1))
        if not leaks.height:
            continue
        first = leaks.row(0, named=True)
        splits = list(dict.fromkeys(first["split"]))
        second = next(r for r, s in zip(first["__row"], first["split"], strict=True)
                      if s != splits[0])
        more = f" ({leaks.height} {column}s leak in all)" if leaks.height > 1 else ""
        rel, index = locate(int(second))
        report.emit("dataset.split_overlap", f"{column} {str(first[column])[:40]!r} is in "
                    f"splits {splits}{more}", rel, key=column, index=index)


def check_tree_split_overlap(stems: dict[tuple[str, str], dict[str, str]],
                             report: Report) -> None:
    """Official trees: (collection, file stem) → {split: rel}; a stem in two splits leaks."""
    for (collection, stem), by_split in sorted(stems.items()):
        if len(by_split) > 1:
            splits = sorted(by_split)
            report.emit("dataset.split_overlap", f"{collection} file stem {stem!r} is in splits "
                        f"{splits}: {', '.join(by_split[s] for s in splits)}",
                        by_split[splits[-1]])


def check_partitions(root: Path, partitions: pl.DataFrame, rel: str, report: Report) -> None:
    """Each partition row's file holds node_segment int32 [num_nodes], ids < num_segments."""
    for index, row in enumerate(partitions.iter_rows(named=True)):
        path = root / str(row.get("file"))
        where = f"partition {row.get('partition_id')!r}"
        if not path.is_file():
            report.emit("dataset.partition_invalid", f"{where}: file {row.get('file')} is "
                        "missing", rel, key="file", index=index)
            continue
        segment = _load_segment(path)
        n, k = row.get("num_nodes"), row.get("num_segments")
        problem = None
        if segment is None:
            problem = "no readable node_segment array"
        elif segment.dtype != np.int32 or segment.ndim != 1:
            problem = f"node_segment is {segment.dtype} {segment.shape}, expected int32 (n,)"
        elif segment.shape[0] != n:
            problem = f"node_segment has {segment.shape[0]} entries, num_nodes is {n}"
        elif segment.size and (segment.min() < 0 or k is None or segment.max() >= k):
            problem = f"segment ids span {segment.min()}..{segment.max()}, num_segments is {k}"
        if problem:
            report.emit("dataset.partition_invalid", f"{where}: {problem}", str(row.get("file")),
                        key="node_segment")


def _load_segment(path: Path) -> np.ndarray | None:
    """``node_segment`` of a partition file (one small int32 array), never unpickling."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            return npz["node_segment"] if "node_segment" in npz.files else None
    except Exception:  # damaged zip / header: reported as unreadable by the caller
        return None
