"""Trivial rankers every report compares against, so a user sees whether the model learned.

``fewer-copies`` reads ``num_copies``, counted in the *optimized* HLO after compiling each
config: information a cost model does not get. ``non-default-slots`` (layout) and
``near-default`` (tile) read only the config and the default config's row, as a model could.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from tpugraphs_tools.baseline.metrics import graph_metrics
from tpugraphs_tools.baseline.prepare import PreparedGraph
from tpugraphs_tools.format import LAYOUT_CONFIG_WIDTH


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


SLOT_WIDTH = 6   # layout features per slot (output, operand 0, operand 1): one minor_to_major


def non_default_slots(feat: np.ndarray, default: np.ndarray) -> np.ndarray:
    """int64 [c]: per config, the (node, slot) layouts that differ from the default's.

    ``feat`` int8 [c, nc, 18], ``default`` [nc, 18]; a slot differs when any of its six
    values does."""
    c, nc, width = feat.shape
    slots = feat.reshape(c, nc, width // SLOT_WIDTH, SLOT_WIDTH)
    base = np.asarray(default).reshape(1, nc, width // SLOT_WIDTH, SLOT_WIDTH)
    return (slots != base).any(axis=-1).sum(axis=(1, 2)).astype(np.int64)


def signed_log(x: np.ndarray) -> np.ndarray:
    """sign · log2(1 + |x|): tile sizes and counts on a ratio scale, zero kept at zero."""
    x = np.asarray(x, np.float64)
    return np.sign(x) * np.log2(1.0 + np.abs(x))


def raw_config_feat(g: PreparedGraph) -> np.ndarray:
    """The view's config features without the normalisation the model sees (tile)."""
    return dataclasses.replace(g.cfg_feat, transform=None, tail=None).read()


def near_default_distance(feat: np.ndarray, default: np.ndarray) -> np.ndarray:
    """float [c]: L1 distance of each tile config from the default tile, on signed log2."""
    return np.abs(signed_log(feat) - signed_log(default)[None, :]).sum(axis=1)


def config_heuristics(g: PreparedGraph, default: np.ndarray | None
                      ) -> dict[str, np.ndarray]:
    """Cost orders that read the config and the default's row only (empty without it)."""
    if default is None:
        return {}
    if g.info.spec.per_node_configs:
        feat = g.cfg_feat.read()[..., :LAYOUT_CONFIG_WIDTH]   # format slots, not derived
        if feat.shape[1:] != np.shape(default):
            return {}
        return {"non-default-slots": non_default_slots(feat, default).astype(np.float64)}
    feat = raw_config_feat(g)
    if feat.shape[1:] != np.shape(default):
        return {}
    return {"near-default": near_default_distance(feat, default)}


def trivial_metrics(g: PreparedGraph, seed: int, default: np.ndarray | None = None
                    ) -> Mapping[str, dict[str, float]]:
    """Every trivial ranker this graph allows: random, fewer-copies (layout with copy counts)
    and the default-knob heuristics (default row known)."""
    out: dict[str, dict[str, float]] = {"random": random_metrics(g, seed)}
    runtime, ci = g.runtime.read(), label_ci(g)
    if g.info.spec.per_node_configs:
        copies = fewer_copies_scores(g)
        if copies is not None:
            out["fewer-copies"] = graph_metrics(runtime, copies, ci)
    for name, cost in config_heuristics(g, default).items():
        out[name] = graph_metrics(runtime, cost, ci)
    return out
