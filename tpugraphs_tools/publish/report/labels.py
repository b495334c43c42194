"""Per graph in ``tgt report``: the headroom over the default and the τ the labels allow.

Figures come from ``store.graph_label_stats`` (the baseline report shows the same ones): a
user sees whether the data is about speed-ups or slow-downs, and what Kendall τ two reruns of
the same configs would reach before reading any cost model's score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from tpugraphs_tools.store import LABEL_COLUMNS, Headroom, NoiseCeiling, graph_label_stats

MAX_POINTS = 60  # labels kept per graph for the plot of labels with their CIs


@dataclass
class GraphLabels:
    graph_id: str
    program: str
    ceiling: NoiseCeiling | None    # None: no CI, ceiling unknown
    headroom: Headroom | None       # None: no labelled non-default config
    # (label, CI low, CI high) of up to MAX_POINTS ok non-default configs, evenly spaced by
    # label (NaN CI: none); what the per-graph plot draws, bounded whatever the graph's size
    points: np.ndarray | None = None


def _points(group: pl.DataFrame) -> np.ndarray | None:
    names = set(group.columns)
    rows = group.filter((pl.col("status") == "ok") & ~pl.col("is_default").fill_null(False)
                        if "is_default" in names else pl.col("status") == "ok")
    if not rows.height:
        return None
    columns = [rows[c].cast(pl.Float64).to_numpy() if c in names
               else np.full(rows.height, np.nan) for c in LABEL_COLUMNS]
    points = np.stack(columns, axis=1)
    points = points[np.argsort(points[:, 0], kind="stable")]
    if len(points) > MAX_POINTS:
        points = points[np.unique(np.linspace(0, len(points) - 1, MAX_POINTS).round()
                                  .astype(int))]
    return points


@dataclass
class PooledCeiling:
    """Mean per-graph ceiling over the graphs that have one."""

    kendall_tau: float
    kendall_tau_sure: float
    graphs: int          # graphs with a defined all-pairs ceiling
    unknown: int         # graphs with labels but no CI


def label_stats(programs_of: Mapping[str, str], configs: pl.LazyFrame) -> list[GraphLabels]:
    """One entry per graph with ok labelled configs (controls are not configs, but the
    ceiling reads the shared part of the label errors from them)."""
    present = set(configs.collect_schema().names())
    if "relative_to_default" not in present:
        return []
    columns = [c for c in ("graph_id", "status", "is_default", *LABEL_COLUMNS) if c in present]
    rows = configs.select(columns).filter(
        pl.col("status").is_in(["ok", "control"]) & pl.col("relative_to_default").is_not_null()
    ).collect(engine="streaming")
    out = []
    for (graph_id,), group in sorted(rows.partition_by("graph_id", as_dict=True).items()):
        if not (group["status"] == "ok").any():
            continue
        ceiling, room = graph_label_stats(group)
        out.append(GraphLabels(str(graph_id), str(programs_of.get(graph_id, "?")), ceiling,
                               room, _points(group)))
    return out


def pooled_ceiling(per_graph: list[GraphLabels]) -> PooledCeiling | None:
    """None when no graph has labels; NaN figures when none has CIs."""
    if not per_graph:
        return None
    known = [g.ceiling for g in per_graph if g.ceiling is not None]
    tau = [c.kendall_tau for c in known if not math.isnan(c.kendall_tau)]
    sure = [c.kendall_tau_sure for c in known if not math.isnan(c.kendall_tau_sure)]
    return PooledCeiling(float(np.mean(tau)) if tau else math.nan,
                         float(np.mean(sure)) if sure else math.nan, len(tau),
                         len(per_graph) - len(known))
