"""Every ranker a cost model is compared with, and the noise ceiling, scored per graph.

The report lists what each reads (``DESCRIPTIONS``), so a reader knows which baselines a cost
model could have been (config-only, non-graph learned) and which use information it does not
get (fewer-copies reads the optimized HLO).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tpugraphs_tools.baseline import ceiling, trees
from tpugraphs_tools.baseline.metrics import graph_metrics
from tpugraphs_tools.baseline.prepare import PreparedGraph
from tpugraphs_tools.baseline.trivial import label_ci, trivial_metrics

Metrics = dict[str, float]

DESCRIPTIONS = {
    "model": "the reference GNN cost model (graph + config features)",
    ceiling.NAME: "not a ranker: the Kendall τ expected between two independent measurements "
                  "of the same configs, from the labels' 95% CIs (what the labels allow)",
    "random": "a uniformly random order (mean of 10 draws)",
    "fewer-copies": "fewer inserted copies is faster; reads num_copies counted in the "
                    "optimized HLO after compiling each config, information a cost model "
                    "does not get",
    "non-default-slots": "fewer layout slots that differ from the default config's is faster "
                         "(config only)",
    "near-default": "a tile config nearer the default tile (L1 on log2 sizes) is faster "
                    "(config only)",
    trees.NAME: "LightGBM trees on per-config layout-value shares / tile features plus graph "
                "size and opcode mix, trained on the training graphs (no graph structure)",
}
ORDER = tuple(DESCRIPTIONS)


@dataclass
class Rankers:
    """The non-model methods of one evaluation (the tree ranker fitted on its train graphs)."""

    seed: int
    defaults: dict[str, np.ndarray] = field(default_factory=dict)
    tree: trees.TreeRanker | None = None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def fit(cls, train: list[PreparedGraph], defaults: dict[str, np.ndarray], seed: int
            ) -> Rankers:
        tree = trees.TreeRanker.fit(train, defaults, seed)
        notes = [trees.MISSING] if trees.lightgbm() is None else []
        return cls(seed, defaults, tree, notes)

    def score(self, g: PreparedGraph) -> dict[str, Metrics]:
        """method → metrics of one held-out graph; the ceiling under ``ceiling.NAME``."""
        out: dict[str, Metrics] = dict(trivial_metrics(g, self.seed,
                                                       self.defaults.get(g.info.graph_id)))
        if self.tree is not None:
            out[trees.NAME] = graph_metrics(g.runtime.read(), self.tree.predict(g), label_ci(g))
        top = ceiling.graph_ceiling(g)
        if top is not None:
            out[ceiling.NAME] = top
        return out

    def coverage_notes(self, scored: list[PreparedGraph]) -> list[str]:
        """Which heuristics and ceilings some scored graphs lack, and why."""
        notes = list(self.notes)
        if not scored:
            return notes
        kind = scored[0].info.spec
        missing = sum(g.info.graph_id not in self.defaults for g in scored)
        heuristic = "non-default-slots" if kind.per_node_configs else "near-default"
        if missing:
            notes.append(f"{heuristic} ranker not scored on {missing} of {len(scored)} "
                         "graphs: no default config row recorded (official trees mark none)")
        no_ci = sum(g.label_ci is None for g in scored)
        if no_ci:
            notes.append(f"noise ceiling: {ceiling.NO_CI} on {no_ci} of {len(scored)} graphs "
                         "(labels without 95% CIs: fixed-engine or imported TpuGraphs labels)")
        return notes


def described(methods: list[str]) -> dict[str, str]:
    """The descriptions of ``methods`` (report order)."""
    return {m: DESCRIPTIONS[m] for m in ORDER if m in methods}
