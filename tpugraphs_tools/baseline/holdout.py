"""Within-graph hold-out: train on a seeded share of each graph's configs, rank the rest.

With one program there is no unseen program to score, but every graph still has configs the
model never saw; ranking those is TpuGraphs' "seen graph, unseen configs" question. Both
halves keep at least two configs (ListMLE and Kendall τ need a pair), so a graph needs
:data:`MIN_CONFIGS` configs to take part.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np

from tpugraphs_tools.baseline.options import DEFAULT_SHARE
from tpugraphs_tools.baseline.prepare import RawGraph

MIN_CONFIGS = 4


def split_configs(graph_id: str, count: int, seed: int, share: float = DEFAULT_SHARE
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """(train, held-out) config rows of one graph, sorted; None below MIN_CONFIGS.

    Seeded by (seed, graph id), so a graph's split does not depend on the other graphs.
    """
    if count < MIN_CONFIGS:
        return None
    held = min(count - 2, max(2, round(share * count)))
    rng = np.random.default_rng([seed, zlib.crc32(graph_id.encode())])
    order = rng.permutation(count)
    return np.sort(order[held:]), np.sort(order[:held])


def view(g: RawGraph, rows: np.ndarray, split: str) -> RawGraph:
    """``g`` restricted to config ``rows`` and marked as ``split`` (graph arrays shared)."""
    copies = g.num_copies.take(rows) if g.num_copies is not None else None
    ci = g.label_ci.take(rows) if g.label_ci is not None else None
    return dataclasses.replace(g, info=dataclasses.replace(g.info, split=split),
                               runtime=g.runtime.take(rows), cfg_feat=g.cfg_feat.take(rows),
                               num_copies=copies, label_ci=ci)


def holdout_views(graphs: list[RawGraph], seed: int, share: float = DEFAULT_SHARE
                  ) -> tuple[list[RawGraph], list[RawGraph], list[str]]:
    """Train views, held-out ("test") views, and a note per graph left out."""
    train: list[RawGraph] = []
    test: list[RawGraph] = []
    notes: list[str] = []
    for g in graphs:
        count = len(g.runtime)
        parts = split_configs(g.info.graph_id, count, seed, share)
        if parts is None:
            notes.append(f"{g.info.graph_id}: {count} configs; the within-graph "
                         f"hold-out needs ≥ {MIN_CONFIGS}")
            continue
        train.append(view(g, parts[0], "train"))
        test.append(view(g, parts[1], "test"))
    return train, test, notes
