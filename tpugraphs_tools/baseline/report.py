"""The typed baseline report: what ``run_baseline`` returns, ``to_json`` is report.json.

Where the report is written (beside the data, with its models) is ``report_files.py``; its
Markdown is ``markdown.py``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tpugraphs_tools.store import BeatsDefault, Headroom, beats_default

if TYPE_CHECKING:   # an Evaluation holds its model; saving it is report_files.py's
    from tpugraphs_tools.baseline.saved import SavedModel


# Metrics per ranking method ("model", "random", ...; rankers.py) of one graph or one split;
# "noise-ceiling" holds the ceiling's τ, and each method ``<tau>_of_ceiling`` its share of it.
Metrics = dict[str, float]


@dataclass
class GraphScore:
    """One held-out graph (or graph view) and how well each method ranked its configs."""

    graph_id: str
    split: str
    program: str
    configs: int
    nodes: int
    methods: dict[str, Metrics]       # method → graph_metrics (model first)

    def to_json(self) -> dict[str, Any]:
        return {"graph_id": self.graph_id, "split": self.split, "program": self.program,
                "configs": self.configs, "nodes": self.nodes, **self.methods}


@dataclass
class TrainStats:
    """How the evaluation's model was fitted."""

    seconds: float
    loss: list[float]
    epoch_seconds: list[float]
    finetune_loss: list[float]
    compiles: dict[str, int]          # per jitted function (Trainer.compiles)
    segments: int
    embedding_table_bytes: int


@dataclass
class Evaluation:
    """One model fitted and scored on one hold-out of a collection."""

    holdout: str                      # "programs" | "configs"
    split_method: str
    graphs: dict[str, int]            # graphs per split (train / valid / test)
    programs: dict[str, list[str]]    # programs per split
    train: TrainStats
    kind: str
    results: dict[str, dict[str, Metrics]]   # split → method → mean_metrics
    per_graph: list[GraphScore]
    notes: list[str]
    # within-graph hold-outs only: config counts, held-out share, smallest graph scored
    configs: dict[str, int] | None = None
    share: float | None = None
    min_configs: int | None = None
    methods: dict[str, str] = field(default_factory=dict)   # method → what it reads
    # the fitted model, saved beside the report (saved.py); not part of report.json itself
    model: SavedModel | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "holdout": self.holdout, "split_method": self.split_method, "graphs": self.graphs,
            "programs": self.programs, "train": asdict(self.train), "kind": self.kind,
            "results": self.results, "per_graph": [g.to_json() for g in self.per_graph],
            "notes": self.notes, "methods": self.methods}
        if self.model is not None:     # beside report.json; `tgt baseline --predict` reads it
            out["model_file"] = self.model.params_file
        extra = {"configs": self.configs, "share": self.share, "min_configs": self.min_configs}
        return {**out, **{k: v for k, v in extra.items() if v is not None}}


@dataclass
class CollectionReport:
    """Every evaluation of one collection (layout / tile, or a TpuGraphs sub-collection)."""

    kind: str
    graphs: int
    programs: int
    split_method: str
    evaluations: dict[str, Evaluation]   # "by-program" and/or "within-graph"
    notes: list[str]
    # graph_id → headroom over the default (baseline/headroom.py), graphs with labels only
    headroom: dict[str, dict[str, Any]] = field(default_factory=dict)

    def beats_default(self) -> BeatsDefault:
        """Graphs where a config surely beats the default, counted as ``tgt report`` counts
        them (``store.beats_default``: the fastest config's whole 95% CI below 1)."""
        return beats_default(Headroom.from_json(room) for room in self.headroom.values())

    def all_notes(self) -> list[str]:
        """The collection's notes, then each evaluation's."""
        return self.notes + [n for ev in self.evaluations.values() for n in ev.notes]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "graphs": self.graphs, "programs": self.programs,
                "split_method": self.split_method, "notes": self.notes,
                "evaluations": {k: e.to_json() for k, e in self.evaluations.items()},
                "headroom": self.headroom}


@dataclass
class SplitPolicy:
    """How graphs and configs were held out (the same split ``tgt export`` writes)."""

    policy: str
    ratios: list[float]
    seed: int
    within_graph_share: float
    within_graph_min_configs: int


@dataclass
class BaselineReport:
    """What ``run_baseline`` returns; ``to_json`` is the ``report.json`` document."""

    tgt_version: str
    versions: dict[str, str | None]
    source: str
    options: dict[str, Any]           # BaselineOptions.to_json()
    split: SplitPolicy
    collections: dict[str, CollectionReport] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)   # collection → why not scored

    def to_json(self) -> dict[str, Any]:
        return json_safe({
            "tgt_version": self.tgt_version, "versions": self.versions, "source": self.source,
            "options": self.options, "split": asdict(self.split),
            "collections": {k: c.to_json() for k, c in self.collections.items()},
            "skipped": self.skipped})

    def evaluations(self) -> list[tuple[str, Evaluation]]:
        """(collection name, evaluation) pairs in report order."""
        return [(name, ev) for name, section in self.collections.items()
                for ev in section.evaluations.values()]


def json_safe(value: Any) -> Any:
    """NaN → null, numpy scalars → Python, tuples → lists: what JSON can hold."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
