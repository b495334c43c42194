"""``tgt export --format tpugraphs``: a tgt dataset → the official TpuGraphs npz tree.

Planning (which file each graph becomes, which config rows it carries) is pure and separate
from writing, so the plan can be checked before anything touches the disk.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tpugraphs_tools import __version__
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import (
    DEFAULT_RATIOS,
    LAYOUT_SOURCES,
    SplitPlan,
    assign_splits,
    collection_of,
)
from tpugraphs_tools.publish.staging import check_separate, staged_dir
from tpugraphs_tools.publish.tree.importer import arrays_fingerprint
from tpugraphs_tools.publish.tree.official import (
    check_name,
    conform,
    num_configs,
    parse_tree_path,
    take_configs,
    tree_path,
)
from tpugraphs_tools.publish.tree.provenance import ProvenanceEntry, record, write_provenance
from tpugraphs_tools.store import Dataset, write_npz


@dataclass(frozen=True)
class FilePlan:
    """One output file: the graph it comes from and the npz config rows it keeps."""

    rel: str
    graph_id: str
    collection: str
    split: str
    search: str | None
    rows: tuple[int, ...] | None  # None: every config row, untouched


@dataclass
class ExportResult:
    out: Path
    files: list[FilePlan]
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Files per top folder (``layout/xla/default/train``...) for the summary."""
        return dict(sorted(Counter("/".join(f.rel.split("/")[1:-1]) for f in self.files).items()))


def output_name(row: dict[str, Any]) -> str:
    """Imported graphs keep their official file stem, so export → import → export is stable."""
    origin = _origin(row)
    if origin is not None:
        return check_name(origin.stem, f"graph {row['graph_id']}: file stem", stem=True)
    if row.get("source") == "tpugraphs" and row.get("program"):
        return check_name(row["program"], f"graph {row['graph_id']}: program", stem=True)
    return check_name(row["graph_id"], "graph id")


def _origin(row: dict[str, Any]) -> Any:
    """The official path an imported graph came from (None for collected graphs)."""
    if row.get("source") != "tpugraphs" or not row.get("source_path"):
        return None
    return parse_tree_path(row["source_path"])


def search_groups(by_search: dict[str, list[int]], fallback: str
                  ) -> dict[str, tuple[int, ...] | None]:
    """Search strategy → npz rows of its ok configs; one strategy keeps the file untouched."""
    if len(by_search) <= 1:
        return {next(iter(by_search), fallback): None}
    return {s: tuple(sorted(rows)) for s, rows in sorted(by_search.items())}


def ok_rows_by_search(configs: pl.DataFrame | pl.LazyFrame) -> dict[str, dict[str, list[int]]]:
    """graph_id → strategy → npz rows of its ok configs (one group-by, not a row loop; a lazy
    scan is aggregated without loading the table)."""
    ok = configs.lazy().filter((pl.col("status") == "ok") & pl.col("npz_row").is_not_null())
    grouped = ok.group_by(["graph_id", "strategy"]).agg(pl.col("npz_row").sort()) \
        .collect(engine="streaming")
    out: dict[str, dict[str, list[int]]] = {}
    for graph_id, strategy, rows in grouped.iter_rows():
        out.setdefault(graph_id, {})[strategy] = [int(r) for r in rows]
    return out


def plan_export(graphs: pl.DataFrame, configs: pl.DataFrame | pl.LazyFrame, splits: SplitPlan,
                source: str | None, config_counts: dict[str, int]) -> tuple[list[FilePlan],
                                                                            list[str]]:
    """Every file to write, with collisions and unusable graphs reported by graph id."""
    by_graph = ok_rows_by_search(configs)
    plans: list[FilePlan] = []
    warnings: list[str] = []
    seen: dict[str, str] = {}
    for row in graphs.sort("graph_id").iter_rows(named=True):
        graph_id = row["graph_id"]
        if config_counts.get(graph_id, 0) == 0:
            warnings.append(f"graph {graph_id}: no measured configs in its npz; not exported")
            continue
        origin = _origin(row)
        collection = row["collection"]
        split = splits.splits[graph_id]
        name = output_name(row)
        spec = collection_of(collection)
        graph_source = source or (origin.source if origin and spec.has_search else "xla")
        fallback = origin.search if origin and origin.search else "default"
        groups = (search_groups(by_graph.get(graph_id, {}), fallback) if spec.has_search
                  else {None: None})
        referenced = sum(len(r) for r in groups.values() if r is not None)
        if len(groups) > 1 and referenced < config_counts[graph_id]:
            warnings.append(f"graph {graph_id}: {config_counts[graph_id] - referenced} npz "
                            "config rows have no ok row in configs.parquet; not exported")
        for search, rows in groups.items():
            if search is not None:
                check_name(search, f"graph {graph_id}: strategy")
            rel = tree_path(collection, graph_source, search, split, name)
            if rel in seen:
                raise DatasetError(f"graphs {seen[rel]} and {graph_id} would both be written "
                                   f"to {rel}; rename one program")
            seen[rel] = graph_id
            plans.append(FilePlan(rel, graph_id, collection, split, search, rows))
    return plans, warnings


def export_tpugraphs(data: str | Path, out: str | Path, *, source: str | None = None,
                     split_by: str = "program", seed: int = 0,
                     ratios: tuple[float, float, float] = DEFAULT_RATIOS,
                     overwrite: bool = False) -> ExportResult:
    """Write the official tree of ``data`` to ``out`` (replaced as a whole at the end)."""
    if source is not None and source not in LAYOUT_SOURCES:
        raise DatasetError(f"source {source!r}: expected one of {', '.join(LAYOUT_SOURCES)}")
    check_separate(data, out)
    dataset = Dataset.open(data)
    graphs = dataset.graphs()
    if graphs.is_empty():
        raise DatasetError(f"{data}: graphs.parquet has no graphs to export")
    splits = assign_splits(graphs, by=split_by, seed=seed, ratios=ratios)
    counts: dict[str, int] = {}
    for graph_id in graphs["graph_id"].to_list():
        counts[graph_id] = _stored_configs(dataset, graph_id)
    needed = ("graph_id", "strategy", "status", "npz_row")
    plans, warnings = plan_export(graphs, dataset.scan("configs").select(needed), splits, source,
                                  counts)
    warnings = splits.conflicts + warnings
    if not plans:
        raise DatasetError(f"{data}: no graph has measured configs; nothing to export")
    rows_by_id = {r["graph_id"]: r for r in graphs.iter_rows(named=True)}
    defaults = default_npz_rows(dataset.configs())
    provenance: dict[str, ProvenanceEntry] = {}
    with staged_dir(out, overwrite) as stage:
        cache: tuple[str, dict[str, np.ndarray]] | None = None
        for plan in plans:
            if cache is None or cache[0] != plan.graph_id:
                where = f"{dataset.npz_path(plan.graph_id)} (graph {plan.graph_id})"
                arrays = conform(dataset.load_arrays(plan.graph_id), plan.collection, where)
                cache = (plan.graph_id, arrays)
            rows = None if plan.rows is None else np.asarray(plan.rows, dtype=np.int64)
            if rows is not None and rows.size and rows.max() >= num_configs(cache[1],
                                                                            plan.collection):
                raise DatasetError(f"configs.parquet: graph {plan.graph_id} has npz_row "
                                   f"{int(rows.max())} beyond its "
                                   f"{num_configs(cache[1], plan.collection)} npz configs")
            written = take_configs(cache[1], plan.collection, rows)
            write_npz(stage / plan.rel, written)
            provenance[plan.rel] = record(rows_by_id[plan.graph_id],
                                          _row_in_file(defaults.get(plan.graph_id), rows),
                                          arrays_fingerprint(written))
        write_provenance(stage, provenance, __version__)
    return ExportResult(Path(out), plans, warnings)


def default_npz_rows(configs: pl.DataFrame) -> dict[str, list[int]]:
    """graph_id → npz rows of its measured default config (one per search strategy)."""
    if not {"is_default", "npz_row"} <= set(configs.columns):
        return {}
    hits = configs.filter(pl.col("is_default") & (pl.col("status") == "ok")
                          & pl.col("npz_row").is_not_null())
    out: dict[str, list[int]] = {}
    for graph_id, npz_row in hits.select("graph_id", "npz_row").iter_rows():
        out.setdefault(graph_id, []).append(int(npz_row))
    return out


def _row_in_file(npz_rows: list[int] | None, rows: np.ndarray | None) -> int | None:
    """Where a default lands in a written file that keeps only ``rows`` (None: all)."""
    if not npz_rows:
        return None
    if rows is None:
        return min(npz_rows)
    hits = np.flatnonzero(np.isin(rows, npz_rows))
    return int(hits[0]) if hits.size else None


def _stored_configs(dataset: Dataset, graph_id: str) -> int:
    """Config rows in a graph's npz (``config_runtime`` is small in both collections)."""
    return int(dataset.load_arrays(graph_id, ("config_runtime",))["config_runtime"].shape[0])
