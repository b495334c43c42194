"""Where a baseline report goes: beside the data it scores, as JSON and Markdown.

In a tgt dataset the two files are committed through the dataset's transaction, so they are
listed in the manifest and ``tgt validate`` stays clean; in an official tree they are plain
files in ``baseline/`` (tree readers only look at ``*.npz``).
"""

from __future__ import annotations

import json
import math
import platform
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tpugraphs_tools.store import BeatsDefault, Headroom, beats_default

if TYPE_CHECKING:   # saved.py imports this module (versions)
    from tpugraphs_tools.baseline.saved import SavedModel

PARAMS_SUFFIX = ".msgpack"     # a saved model's parameters (saved.py)
REPORT_DIR = "baseline"
REPORT_JSON = f"{REPORT_DIR}/report.json"
REPORT_MD = f"{REPORT_DIR}/report.md"
_PACKAGES = ("jax", "jaxlib", "flax", "optax", "numpy", "scipy")


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
            out["model_file"] = self.model.stem + PARAMS_SUFFIX
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


def versions() -> dict[str, str | None]:
    """Python and the packages whose versions change the numbers."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def report_bytes(report: BaselineReport) -> tuple[bytes, bytes]:
    """(JSON, Markdown) of one report."""
    from tpugraphs_tools.baseline.markdown import report_markdown

    return ((json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n").encode(),
            report_markdown(report).encode())


def model_files(report: BaselineReport) -> dict[str, bytes]:
    """File name → bytes of every evaluation's saved model (parameters + sidecar)."""
    return {name: data for _, ev in report.evaluations() if ev.model is not None
            for name, data in ev.model.files().items()}


def write_report(report: BaselineReport, path: str | Path) -> list[Path]:
    """JSON at ``path``, Markdown beside it (same name, ``.md``), then the saved models in the
    same folder; the models are written first, so a report never names a missing model."""
    data, markdown = report_bytes(report)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    models = [path.parent / name for name in model_files(report)]
    for target, body in zip(models, model_files(report).values(), strict=True):
        target.write_bytes(body)
    path.write_bytes(data)
    md = path.with_suffix(".md")
    md.write_bytes(markdown)
    return [path, md, *models]


def save_report(report: BaselineReport, data: str | Path) -> list[Path]:
    """Store the report and models inside ``data`` (a tgt dataset or an official tree):
    [report.json, report.md, model files...]."""
    from tpugraphs_tools.store import MANIFEST, Dataset

    root = Path(data)
    if not (root / MANIFEST).exists():
        return write_report(report, root / REPORT_JSON)
    body, markdown = report_bytes(report)
    models = model_files(report)
    with Dataset.open(root).transaction() as tx:
        for name, model in models.items():
            tx.put_file(f"{REPORT_DIR}/{name}", model)
        tx.put_file(REPORT_JSON, body)
        tx.put_file(REPORT_MD, markdown)
    return [root / REPORT_JSON, root / REPORT_MD, *(root / REPORT_DIR / n for n in models)]
