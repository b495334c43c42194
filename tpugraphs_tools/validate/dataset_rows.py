"""Cross-table and table↔npz consistency of a tgt dataset.

configs.parquet has one row per graph×config tried; only ``ok`` rows carry ``npz_row`` (their
index into the graph's config arrays) and a positive ``runtime_min_ns``. graphs.parquet counts
(num_nodes/edges/configurable/configs) must match the npz. Splits must not share a program or
a fingerprint, else the same model leaks from train into test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from tpugraphs_tools.configs import SLOTS
from tpugraphs_tools.validate.npz_file import NpzSummary
from tpugraphs_tools.validate.report import Report

GRAPHS = "graphs.parquet"
# The configs columns the row rules below read: validate holds only these of a part together.
CONFIG_COLUMNS = ("graph_id", "status", "npz_row", "runtime_min_ns", "honoured", "config",
                  "relative_to_default", "relative_ci_low", "relative_ci_high", "timing_cpus",
                  "timer", "realized")
TIMED_BY = ("host", "cupti", "profiler")  # configs ``timer`` besides "mixed" (schema enum)
_COUNT_COLUMNS = (("num_nodes", "num_nodes"), ("num_edges", "num_edges"),
                  ("num_configurable", "num_configurable"))


def _more(count: int) -> str:
    return f" ({count} rows in all)" if count > 1 else ""


@dataclass
class ConfigRefs:
    """Per graph: the (npz_row, configs row) pairs of its configs, for the range check."""

    rel: str
    by_graph: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


def _honoured_problem(honoured: str, config: str | None) -> str | None:
    """Why a configs row's ``honoured`` JSON is invalid, or None when it is fine."""
    try:
        value = json.loads(honoured)
        wanted = json.loads(config) if config else {}
    except (TypeError, ValueError) as exc:
        return f"honoured or config is not valid JSON ({exc})"
    if not isinstance(value, dict) or not all(
            isinstance(slots, dict) and set(slots) <= set(SLOTS)
            and all(v is None or isinstance(v, bool) for v in slots.values())
            for slots in value.values()):
        return "honoured must map node -> slot (output/input/kernel) -> true/false/null"
    keys = {(n, s) for n, slots in value.items() for s in slots}
    asked = ({(n, s) for n, slots in wanted.items() if isinstance(slots, dict) for s in slots}
             if isinstance(wanted, dict) else set())
    if keys != asked:
        return (f"honoured covers {len(keys)} slots but config constrains {len(asked)}: "
                "every constrained slot has exactly one honoured flag")
    return None


def _check_honoured(rows: pl.DataFrame, rel: str, report: Report) -> None:
    """honoured is JSON node → slot → bool|null with exactly the config's constrained slots."""
    bad = []
    for index, honoured, config in rows.filter(pl.col("honoured").is_not_null()).select(
            "__row", "honoured", "config").iter_rows():
        problem = _honoured_problem(honoured, config)
        if problem is not None:
            bad.append((index, problem))
    if bad:
        index, problem = bad[0]
        report.emit("dataset.honoured_invalid", problem + _more(len(bad)), rel,
                    key="honoured", index=index)


def check_configs(df: pl.DataFrame, rel: str, report: Report) -> ConfigRefs:
    """status ↔ npz_row ↔ runtime rules within configs.parquet."""
    refs = ConfigRefs(rel)
    need = {"graph_id", "status", "npz_row"}
    if not need <= set(df.columns):
        return refs
    rows = df.with_row_index("__row")
    ok = pl.col("status") == "ok"
    rules = (
        ("dataset.npz_row_missing", ok & pl.col("npz_row").is_null(),
         "ok config has no npz_row", "npz_row"),
        ("dataset.npz_row_unexpected", ~ok & pl.col("npz_row").is_not_null(),
         "config with status {status!r} has npz_row {npz_row} (only ok configs have one)",
         "npz_row"),
    )
    for check, cond, template, key in rules:
        bad = rows.filter(cond.fill_null(False))
        if bad.height:
            row = bad.row(0, named=True)
            report.emit(check, template.format(**row) + _more(bad.height), rel, key=key,
                        index=row["__row"])
    if "runtime_min_ns" in df.columns:
        bad = rows.filter(ok.fill_null(False) & ~(pl.col("runtime_min_ns") > 0).fill_null(False))
        if bad.height:
            row = bad.row(0, named=True)
            report.emit("dataset.ok_runtime_invalid", f"ok config has runtime_min_ns "
                        f"{row['runtime_min_ns']}{_more(bad.height)}", rel,
                        key="runtime_min_ns", index=row["__row"])
    if {"honoured", "config"} <= set(df.columns):
        _check_honoured(rows, rel, report)
    _check_labels(rows, rel, report)
    if "timing_cpus" in df.columns:
        _check_timing_cpus(rows, rel, report)
    if "timer" in df.columns:
        _check_timer(rows, rel, report)
    if "realized" in df.columns:
        _check_tile_requests(rows, rel, report)
    with_row = rows.filter(pl.col("npz_row").is_not_null() & pl.col("graph_id").is_not_null())
    dup = with_row.filter(pl.struct("graph_id", "npz_row").is_duplicated())
    if dup.height:
        first = dup.group_by("graph_id", "npz_row", maintain_order=True).agg(pl.col("__row"))
        row = first.row(0, named=True)
        report.emit("dataset.npz_row_duplicate", f"graph {row['graph_id']!r} npz_row "
                    f"{row['npz_row']} used by config rows {row['__row'][:5]}", rel,
                    key="npz_row", index=row["__row"][1])
    for (gid,), part in with_row.group_by("graph_id"):
        refs.by_graph[str(gid)] = (part.get_column("npz_row").to_numpy(),
                                   part.get_column("__row").to_numpy())
    for gid in df.get_column("graph_id").drop_nulls().unique().to_list():
        refs.by_graph.setdefault(str(gid), (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    return refs


def _check_labels(rows: pl.DataFrame, rel: str, report: Report) -> None:
    """Ratio CIs must be positive, ordered and contain their ratio; an A/A control whose CI
    excludes 1.0 means the graph's batches claimed a difference between identical programs
    (noise floor breached)."""
    need = {"relative_to_default", "relative_ci_low", "relative_ci_high"}
    if not need <= set(rows.columns):
        return
    rel_, low, high = (pl.col(c) for c in ("relative_to_default", "relative_ci_low",
                                            "relative_ci_high"))
    # A label is a positive ratio; its CI bounds are ordered (layout and tile rows alike).
    for cond, what, key in (
            (low.is_not_null() & high.is_not_null() & (low > high),
             "relative_ci_low {relative_ci_low} above relative_ci_high {relative_ci_high}",
             "relative_ci_low"),
            ((low <= 0) | (rel_ <= 0),
             "ratio label not positive: relative_to_default {relative_to_default}, CI "
             "[{relative_ci_low}, {relative_ci_high}]", "relative_ci_low"),
            (low.is_not_null() & high.is_not_null() & rel_.is_not_null()
             & ~((low <= rel_) & (rel_ <= high)),
             "relative_to_default {relative_to_default} outside its CI [{relative_ci_low}, "
             "{relative_ci_high}]", "relative_to_default")):
        bad = rows.filter(cond.fill_null(False))
        if bad.height:
            row = bad.row(0, named=True)
            report.emit("dataset.relative_ci_invalid", what.format(**row) + _more(bad.height),
                        rel, key=key, index=row["__row"])
            break
    outside = rows.filter(((pl.col("status") == "control") & ((low > 1.0) | (high < 1.0)))
                          .fill_null(False))
    for (gid,), part in outside.group_by("graph_id", maintain_order=True):
        row = part.row(0, named=True)
        report.emit("dataset.control_outside_ci", f"graph {gid!r}: A/A control "
                    f"{row['relative_to_default']:.4f} with CI [{row['relative_ci_low']:.4f}, "
                    f"{row['relative_ci_high']:.4f}] excludes 1.0"
                    + (f" ({part.height} control rows)" if part.height > 1 else "")
                    + ": labels of this graph claim differences noise can produce", rel,
                    key="relative_ci_low", index=row["__row"])


def _check_timing_cpus(rows: pl.DataFrame, rel: str, report: Report) -> None:
    """A graph's labels must come from runs on as many CPUs: one-core runs (``--isolation
    pin``, ``--timing-lanes``) separate configs differently from all-core runs, so a resumed
    collection that changed them mixes two measurements in one ranking."""
    timed = rows.filter(pl.col("timing_cpus").is_not_null() & pl.col("graph_id").is_not_null())
    mixed = timed.group_by("graph_id").agg(pl.col("timing_cpus").n_unique().alias("n")) \
        .filter(pl.col("n") > 1).get_column("graph_id")
    if mixed.is_empty():  # the usual case: one vectorised pass, no loop over graphs
        return
    mixed_rows = timed.filter(pl.col("graph_id").is_in(mixed.implode()))
    for (gid,), part in mixed_rows.group_by("graph_id", maintain_order=True):
        counts = part.get_column("timing_cpus").value_counts(sort=True)
        usual = counts.row(0)[0]
        odd = part.filter(pl.col("timing_cpus") != usual).row(0, named=True)
        report.emit("dataset.timing_cpus_mixed",
                    f"graph {gid!r}: rows timed on {sorted(counts.get_column('timing_cpus'))} "
                    f"CPUs (this row {odd['timing_cpus']}, most rows {usual}): its ranking "
                    "mixes runs on different numbers of CPUs", rel, key="timing_cpus",
                    index=odd["__row"])


def _check_timer(rows: pl.DataFrame, rel: str, report: Report) -> None:
    """Host and device time are different quantities (launch included or not), so one
    graph's labels must share one ``timer`` (its values are checked by the schema's enum)."""
    timer = pl.col("timer")
    timed = rows.filter(timer.is_in(TIMED_BY) & pl.col("graph_id").is_not_null())
    mixed = rows.filter((timer == "mixed").fill_null(False))
    several = timed.group_by("graph_id").agg(timer.n_unique().alias("n")) \
        .filter(pl.col("n") > 1).get_column("graph_id")
    for gid in [*several.to_list(), *mixed.get_column("graph_id").unique().to_list()][:1]:
        part = rows.filter(pl.col("graph_id") == gid)
        names = sorted(part.get_column("timer").drop_nulls().unique().to_list())
        odd = part.filter(timer.is_not_null()).row(-1, named=True)
        report.emit("dataset.timer_mixed", f"graph {gid!r}: labels timed by {names}: its "
                    "ranking mixes host and device time", rel, key="timer", index=odd["__row"])


def _check_tile_requests(rows: pl.DataFrame, rel: str, report: Report) -> None:
    """Counts ok configs whose tile read back differs from the request (tile rows only)."""
    ok = rows.filter((pl.col("status") == "ok").fill_null(False)
                     & pl.col("realized").str.contains('"matches_request"').fill_null(False))
    if not ok.height:
        return
    other = ok.filter(pl.col("realized").str.contains('"matches_request": false'))
    if other.height:
        row = other.row(0, named=True)
        report.emit("dataset.tile_not_as_requested", f"{other.height} of {ok.height} ok tile "
                    f"configs compiled to another tile than requested (first: graph "
                    f"{row['graph_id']!r}); their features encode the tile that ran", rel,
                    key="realized", index=row["__row"])


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
