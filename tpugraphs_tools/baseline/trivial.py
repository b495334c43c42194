"""Trivial rankers every report compares against, so a user sees whether the model learned."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tpugraphs_tools.baseline.metrics import graph_metrics
from tpugraphs_tools.baseline.prepare import PreparedGraph


def random_metrics(g: PreparedGraph, seed: int, draws: int = 10) -> dict[str, float]:
    """Metrics of a uniformly random order, averaged over ``draws`` orders (NaN-aware)."""
    rng = np.random.default_rng([seed, g.num_configs, g.num_nodes])
    runtime = g.runtime.read()
    ci = label_ci(g)
    rows = [graph_metrics(runtime, rng.random(g.num_configs), ci) for _ in range(draws)]
    return {k: float(np.nanmean([r[k] for r in rows])) if not all(np.isnan(r[k]) for r in rows)
            else float("nan") for k in rows[0]}


def label_ci(g: PreparedGraph) -> np.ndarray | None:
    """The graph's label CIs [c, 2] on the runtime's scale (tgt paired labels), None when
    unknown."""
    if g.label_ci is None:
        return None
    return g.label_ci.read() * g.runtime.read()[:, None]


def fewer_copies_scores(g: PreparedGraph) -> np.ndarray | None:
    """Layout heuristic "fewer inserted copies is faster": cost = num_copies; None if unknown."""
    if g.num_copies is None:
        return None
    copies = g.num_copies.read()
    if (copies < 0).any():
        return None
    return copies.astype(np.float64)


def trivial_metrics(g: PreparedGraph, seed: int) -> Mapping[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {"random": random_metrics(g, seed)}
    if g.info.spec.per_node_configs:
        copies = fewer_copies_scores(g)
        if copies is not None:
            out["fewer-copies"] = graph_metrics(g.runtime.read(), copies, label_ci(g))
    return out
