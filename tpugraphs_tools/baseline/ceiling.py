"""The noise ceiling of each scored graph, and every method's τ as a share of it.

The ceiling (``store.noise_ceiling``) is the Kendall τ two independent measurements of the
scored configs would reach, from the labels' 95% CIs; a graph without CIs (fixed-engine
labels, an official tree) has none, and the report says "no CI: ceiling unknown". A method's
share is its mean τ over the graphs that have a ceiling divided by their mean ceiling (a ratio
of means: one graph with a ceiling near zero does not swamp it). A split with fewer than
:data:`MIN_PAIRS` config pairs under the ceiling gets no share: with 2 held-out configs per
graph each graph is one pair, its τ is ±1 and its ceiling (2p − 1)² can be near 0, and a
share of 1.83 said nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from tpugraphs_tools.baseline.prepare import PreparedGraph
from tpugraphs_tools.store import noise_ceiling

NAME = "noise-ceiling"
NO_CI = "no CI: ceiling unknown"
TAUS = ("kendall_tau", "kendall_tau_sure")
MIN_PAIRS = 30  # config pairs (all graphs of a split together) a pooled share needs


def graph_ceiling(g: PreparedGraph) -> dict[str, float] | None:
    """The ceiling of the view's configs (``kendall_tau``, ``kendall_tau_sure``, pair counts);
    None when no config has a CI."""
    if g.label_ci is None:
        return None
    runtime = g.runtime.read()
    factors = g.label_ci.read()          # CI as factors of the label
    ceiling = noise_ceiling(runtime, runtime * factors[:, 0], runtime * factors[:, 1],
                            g.info.label_shared_se)
    return None if ceiling is None else ceiling.to_json()


def per_graph_shares(methods: Mapping[str, dict[str, float]]) -> None:
    """Add ``<tau>_of_ceiling`` to each method of one graph (in place) when it has one."""
    ceiling = methods.get(NAME)
    if ceiling is None:
        return
    for name, values in methods.items():
        if name == NAME:
            continue
        for tau in TAUS:
            top = ceiling.get(tau, math.nan)
            values[f"{tau}_of_ceiling"] = (values.get(tau, math.nan) / top
                                           if top and not math.isnan(top) else math.nan)


def pooled_shares(rows: Sequence[Mapping[str, dict[str, float]]],
                  summary: dict[str, dict[str, float]]) -> None:
    """Set each method's ``<tau>_of_ceiling`` in ``summary`` (one split) to the ratio of mean
    τ to mean ceiling over the graphs where both are defined."""
    for name, values in summary.items():
        if name == NAME:
            continue
        for tau in TAUS:
            pairs = [(r[name].get(tau, math.nan), r[NAME].get(tau, math.nan))
                     for r in rows if name in r and NAME in r]
            pairs = [(m, c) for m, c in pairs if not (math.isnan(m) or math.isnan(c))]
            top = float(np.mean([c for _, c in pairs])) if pairs else math.nan
            enough = sum(r[NAME].get("pairs", 0.0) for r in rows if NAME in r) >= MIN_PAIRS
            values[f"{tau}_of_ceiling"] = (float(np.mean([m for m, _ in pairs])) / top
                                           if pairs and top and enough else math.nan)
