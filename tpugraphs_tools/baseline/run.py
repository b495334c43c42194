"""``run_baseline``: source → splits → prepared graphs → train → held-out metrics → report.

Each collection (layout / tile, or each TpuGraphs sub-collection) gets its own model.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tpugraphs_tools import __version__
from tpugraphs_tools.baseline.data import GraphInfo, GraphSource, TgtSource, open_source
from tpugraphs_tools.baseline.metrics import graph_metrics, mean_metrics
from tpugraphs_tools.baseline.model import ModelConfig
from tpugraphs_tools.baseline.prepare import (
    FeatureStats,
    PreparedGraph,
    PrepareOptions,
    RawGraph,
    finalize,
    load_raw,
)
from tpugraphs_tools.baseline.splits import assign_splits
from tpugraphs_tools.baseline.train import TrainConfig, Trainer
from tpugraphs_tools.baseline.trivial import trivial_metrics
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.partition import dense_relabel, load_partition, partition_graph

Progress = Callable[[str], None]
EVAL_SPLITS = ("valid", "test")


@dataclass(frozen=True)
class BaselineOptions:
    model: str = "sage"
    hidden: int = 64
    layers: int = 3
    cross_config_attention: bool = False
    train: TrainConfig = field(default_factory=TrainConfig)
    prepare: PrepareOptions = field(default_factory=PrepareOptions)
    collection: str | None = None
    segment_method: str = "metis"
    segment_nodes: int = 1000
    partition: str | None = None    # stored partition name (tgt datasets), e.g. metis-64

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _segmentation(raw: RawGraph, source: GraphSource, opts: BaselineOptions) -> np.ndarray:
    if opts.partition is not None:
        if not isinstance(source, TgtSource):
            raise DatasetError("--partition needs a tgt dataset (run `tgt partition` on it)")
        seg = load_partition(source.dataset, raw.info.graph_id, opts.partition)[raw.kept_nodes]
        return dense_relabel(seg.astype(np.int64), int(seg.max()) + 1 if seg.size else 1)
    return partition_graph(raw.edges, raw.num_nodes, method=opts.segment_method,
                           max_segment_nodes=opts.segment_nodes).node_segment


def _clean(value: Any) -> Any:
    """JSON-safe: NaN → null, numpy scalars → Python."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def prepare_collection(source: GraphSource, infos: list[GraphInfo], opts: BaselineOptions,
                       progress: Progress | None = None
                       ) -> tuple[list[PreparedGraph], list[str]]:
    notes: list[str] = []
    raws: list[RawGraph] = []
    for i, info in enumerate(infos):
        if progress:
            progress(f"loading {info.graph_id} ({i + 1}/{len(infos)})")
        raw = load_raw(source.load(info), opts.prepare)
        if raw is None:
            notes.append(f"{info.graph_id}: no measured configs, skipped")
            continue
        notes.extend(f"{info.graph_id}: {w}" for w in raw.warnings)
        raws.append(raw)
    train = [r for r in raws if r.info.split == "train"]
    if not train:
        raise DatasetError(f"{source.name}: no train graphs with configs")
    stats = FeatureStats.fit(train, opts.prepare.pad_minus_one)
    prepared = []
    for raw in raws:
        seg = _segmentation(raw, source, opts) if opts.train.gst else None
        prepared.append(finalize(raw, stats, seg))
    return prepared, notes


def evaluate(trainer: Trainer, graphs: list[PreparedGraph], seed: int
             ) -> tuple[dict[str, dict[str, dict[str, float]]], list[dict[str, Any]]]:
    """Per split: method → mean metrics; plus per-graph rows."""
    per_graph: list[dict[str, Any]] = []
    for g in graphs:
        if g.info.split not in EVAL_SPLITS:
            continue
        row = {"graph_id": g.info.graph_id, "split": g.info.split, "program": g.info.program,
               "configs": g.num_configs, "nodes": g.num_nodes,
               "model": graph_metrics(g.runtime, trainer.predict(g))}
        row.update(trivial_metrics(g, seed))
        per_graph.append(row)
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for split in EVAL_SPLITS:
        rows = [r for r in per_graph if r["split"] == split]
        if not rows:
            continue
        methods = ["model", "random", "fewer-copies"]
        summary[split] = {m: mean_metrics(r[m] for r in rows if m in r) for m in methods
                          if any(m in r for r in rows)}
    return summary, per_graph


def run_collection(source: GraphSource, infos: list[GraphInfo], opts: BaselineOptions,
                   progress: Progress | None = None) -> dict[str, Any]:
    infos, split_method = assign_splits(infos, opts.train.seed)
    graphs, notes = prepare_collection(source, infos, opts, progress)
    train = [g for g in graphs if g.info.split == "train"]
    kind = train[0].info.kind
    model_cfg = ModelConfig(kind=kind, model=opts.model, hidden=opts.hidden, layers=opts.layers,
                            cross_config_attention=opts.cross_config_attention)
    start = time.perf_counter()
    trainer = Trainer(model_cfg, opts.train, train[0])
    history = trainer.fit(train, progress=(lambda e, loss: progress(
        f"epoch {e + 1}/{opts.train.epochs} loss {loss:.4f}")) if progress else None)
    train_seconds = time.perf_counter() - start
    if progress:
        progress("scoring held-out graphs")
    summary, per_graph = evaluate(trainer, graphs, opts.train.seed)
    counts = {s: sum(g.info.split == s for g in graphs) for s in ("train", "valid", "test")}
    programs = {s: sorted({g.info.program for g in graphs if g.info.split == s})
                for s in ("train", "valid", "test")}
    if kind == "layout" and not any("fewer-copies" in r for r in per_graph):
        notes.append("num_copies not available: no fewer-copies baseline")
    return {
        "kind": kind, "split_method": split_method, "graphs": counts, "programs": programs,
        "train": {"seconds": train_seconds, "loss": history.loss,
                  "epoch_seconds": history.epoch_seconds,
                  "finetune_loss": history.finetune_loss, "compiles": history.compiles,
                  "segments": int(sum(len(g.segments) for g in train)),
                  "embedding_table_bytes": trainer.table.nbytes},
        "results": summary, "per_graph": per_graph, "notes": notes,
    }


def run_baseline(path: str | Path, opts: BaselineOptions,
                 progress: Progress | None = None) -> dict[str, Any]:
    """Train and evaluate one model per collection; returns the JSON-ready report."""
    source = open_source(path)
    infos = source.index()
    collections = sorted({i.collection for i in infos})
    if opts.collection is not None:
        if opts.collection not in collections:
            raise DatasetError(f"{path}: no collection {opts.collection!r} "
                               f"(have {collections})")
        collections = [opts.collection]
    report: dict[str, Any] = {"tgt_version": __version__, "source": str(path),
                              "options": opts.to_json(), "collections": {}}
    for name in collections:
        subset = [i for i in infos if i.collection == name]
        report["collections"][name] = run_collection(source, subset, opts, progress)
    return _clean(report)


def write_report(report: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
