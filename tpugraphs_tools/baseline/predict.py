"""``tgt baseline --predict``: rank another dataset's configs with a saved model.

The data is read and normalised exactly as the model's training run did (its saved options
and statistics), except that every config is ranked (no ``--max-configs`` subsample). Graphs
whose runtimes are all positive are labelled and get the report's metrics; graphs with zero
runtimes (an unlabelled test split) get predictions only.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tpugraphs_tools.baseline.data import GraphInfo, GraphSource, open_source
from tpugraphs_tools.baseline.loading import Loader
from tpugraphs_tools.baseline.metrics import graph_metrics, mean_metrics
from tpugraphs_tools.baseline.options import BaselineOptions
from tpugraphs_tools.baseline.prepare import PreparedGraph, RawGraph
from tpugraphs_tools.baseline.report import Metrics, json_safe
from tpugraphs_tools.baseline.report_files import REPORT_DIR
from tpugraphs_tools.baseline.saved import LoadedModel, load_model
from tpugraphs_tools.baseline.train import Trainer
from tpugraphs_tools.baseline.trivial import label_ci
from tpugraphs_tools.errors import BaselineError, DatasetError

Progress = Callable[[str], None]
CSV_COLUMNS = ("graph_id", "config_index", "predicted_score", "predicted_rank", "runtime")


@dataclass
class GraphPrediction:
    """One graph's predicted cost per config (lower = predicted faster) and its rank."""

    graph_id: str
    config_index: np.ndarray     # int64 [c] row of the graph's npz config arrays
    score: np.ndarray            # float32 [c]
    rank: np.ndarray             # int64 [c], 1 = predicted fastest
    runtime: np.ndarray | None   # float64 [c] labels, None when unlabelled
    metrics: Metrics | None      # graph_metrics when labelled


@dataclass
class Prediction:
    """Every graph of the predicted collection, with mean metrics over the labelled ones."""

    model: str
    data: str
    kind: str
    collection: str
    graphs: list[GraphPrediction]
    summary: Metrics             # mean_metrics over labelled graphs ({"graphs": 0} if none)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return json_safe({
            "model": self.model, "data": self.data, "kind": self.kind,
            "collection": self.collection, "graphs": len(self.graphs),
            "labelled": sum(g.metrics is not None for g in self.graphs),
            "summary": self.summary, "notes": self.notes,
            "per_graph": {g.graph_id: g.metrics for g in self.graphs if g.metrics is not None}})

    def csv_bytes(self) -> bytes:
        """One row per (graph, config): graph_id, config_index, score, rank, runtime."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for g in self.graphs:
            runtime = g.runtime if g.runtime is not None else [math.nan] * g.score.size
            for idx, score, rank, y in zip(g.config_index, g.score, g.rank, runtime,
                                           strict=True):
                label = "" if math.isnan(y) else f"{y:.17g}"
                writer.writerow([g.graph_id, int(idx), f"{float(score):.9g}", int(rank), label])
        return out.getvalue().encode()


def _options(loaded: LoadedModel, lazy_configs: bool) -> BaselineOptions:
    """The training run's options, ranking every config of every graph."""
    opts, m = loaded.options, loaded.model
    prepare = dataclasses.replace(loaded.prepare, max_configs=sys.maxsize,
                                  lazy_configs=lazy_configs)
    try:
        return BaselineOptions(layer=m.layer, hidden=m.hidden, layers=m.layers,
                               cross_config_attention=m.cross_config_attention,
                               train=loaded.train, prepare=prepare,
                               segment_method=str(opts["segment_method"]),
                               segment_nodes=int(opts["segment_nodes"]),
                               partition=opts["partition"])
    except (KeyError, TypeError, ValueError) as exc:   # ValueError: a record's own check
        raise loaded.error(f"unreadable ({type(exc).__name__}: {exc})", "options") from None


def _infos(source: GraphSource, loaded: LoadedModel, collection: str | None) -> list[GraphInfo]:
    infos = source.index()
    if collection is not None:
        chosen = [i for i in infos if i.collection == collection]
        if not chosen:
            have = sorted({i.collection for i in infos})
            raise DatasetError(f"{source.name}: no collection {collection!r} (have {have})")
        infos = chosen
    kinds = sorted({i.kind for i in infos})
    infos = [i for i in infos if i.kind == loaded.kind]
    if not infos:
        raise loaded.error(f"the model ranks {loaded.kind!r} configs; {source.name} has "
                           f"{', '.join(kinds) or 'no'} graphs", "kind")
    names = sorted({i.collection for i in infos})
    if len(names) > 1:
        own = loaded.sidecar.get("collection")
        if own not in names:
            raise DatasetError(f"{source.name}: several {loaded.kind} collections ({names}); "
                               "choose one with --collection")
        infos = [i for i in infos if i.collection == own]
    return infos


def _check_widths(source: GraphSource, raws: list[RawGraph], loaded: LoadedModel) -> None:
    """The data's arrays have the widths the model was built for (a DatasetError names the
    graph's file and key otherwise)."""
    want = {"node_feat": loaded.stats.node.lo.size, "extra": loaded.stats.extra.lo.size}
    for raw in raws:
        have = {"node_feat": raw.feat.shape[1], "extra": raw.extra.shape[1]}
        for key, width in want.items():
            if have[key] != width:
                raise DatasetError(f"{source.npz_file(raw.info.graph_id)}: {key}: "
                                   f"{have[key]} columns, the model {loaded.path} reads {width}")
        spec = raw.info.spec
        if raw.cfg_feat.shape[-1] != spec.config_width:
            raise DatasetError(f"{source.npz_file(raw.info.graph_id)}: {spec.config_feat_key}: "
                               f"{raw.cfg_feat.shape[-1]} features per config, the model "
                               f"{loaded.path} reads {spec.config_width}")


def _rank(score: np.ndarray) -> np.ndarray:
    rank = np.empty(score.size, np.int64)
    rank[np.argsort(score, kind="stable")] = np.arange(1, score.size + 1)
    return rank


def _graph_prediction(trainer: Trainer, g: PreparedGraph) -> GraphPrediction:
    score = trainer.predict(g)
    rows = g.runtime.rows
    index = np.asarray(rows, np.int64) if rows is not None else np.arange(g.num_configs)
    runtime = g.runtime.read()
    labelled = bool(runtime.size) and bool(np.all(np.isfinite(runtime) & (runtime > 0)))
    metrics = graph_metrics(runtime, score, label_ci(g)) if labelled else None
    return GraphPrediction(g.info.graph_id, index, score, _rank(score),
                           runtime if labelled else None, metrics)


def predict_dataset(data: str | Path, model: str | Path, collection: str | None = None,
                    lazy_configs: bool = True, progress: Progress | None = None) -> Prediction:
    """Rank every config of ``data``'s graphs (of the model's kind) with the saved ``model``."""
    loaded = load_model(model)
    source = open_source(data)
    infos = _infos(source, loaded, collection)
    loader = Loader(source, _options(loaded, lazy_configs))
    raws, notes = loader.load(infos, progress)
    if not raws:
        raise DatasetError(f"{source.name}: no {loaded.kind} graph with configs to rank")
    _check_widths(source, raws, loaded)
    graphs = loader.apply(raws, loaded.stats)
    trainer = Trainer(loaded.model, loaded.train, graphs[0])
    trainer.params = loaded.restore(trainer.params)
    predicted = []
    for i, g in enumerate(graphs):
        if progress:
            progress(f"ranking {g.info.graph_id} ({i + 1}/{len(graphs)})")
        predicted.append(_graph_prediction(trainer, g))
    summary = mean_metrics(p.metrics for p in predicted if p.metrics is not None)
    unlabelled = [p.graph_id for p in predicted if p.metrics is None]
    if unlabelled:
        notes.append(f"{len(unlabelled)} graph(s) without labels (zero runtimes): "
                     "predictions only")
    return Prediction(str(loaded.path), str(data), loaded.kind, infos[0].collection, predicted,
                      summary, notes)


def _write_atomic(path: Path, body: bytes) -> None:
    """Write via a temporary name and rename, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_bytes(body)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def default_output(model: str | Path) -> str:
    """Where predictions go inside DATA: ``baseline/predictions-<model stem>.csv``."""
    stem = Path(model).with_suffix("").name
    return f"{REPORT_DIR}/predictions-{stem}.csv"


def save_predictions(prediction: Prediction, data: str | Path,
                     out: str | Path | None = None) -> list[Path]:
    """CSV at ``out`` and the metrics JSON beside it (``.json``); without ``out``, inside
    ``data`` (committed through the dataset's transaction in a tgt dataset)."""
    from tpugraphs_tools.store import MANIFEST, Dataset

    body = prediction.csv_bytes()
    metrics = (json.dumps(prediction.to_json(), indent=2, sort_keys=True) + "\n").encode()
    root = Path(data)
    if out is None and (root / MANIFEST).exists():
        rel = default_output(prediction.model)
        with Dataset.open(root).transaction() as tx:
            tx.put_file(rel, body)
            tx.put_file(Path(rel).with_suffix(".json").as_posix(), metrics)
        return [root / rel, (root / rel).with_suffix(".json")]
    path = Path(out) if out is not None else root / default_output(prediction.model)
    if path.suffix == ".json":
        raise BaselineError(f"{path}: the predictions are CSV; give a .csv path (the metrics "
                            "JSON goes beside it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, body)
    _write_atomic(path.with_suffix(".json"), metrics)
    return [path, path.with_suffix(".json")]
