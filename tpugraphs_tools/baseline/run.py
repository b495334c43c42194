"""``run_baseline``: source → splits → prepared graphs → train → held-out metrics → report.

Each collection (layout / tile, or each TpuGraphs sub-collection) gets its own models: one
trained on the train programs and scored on unseen programs (when the split has them), one
trained on a seeded share of every graph's configs and scored on the rest (``holdout.py``), so
a single collected program is scored too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tpugraphs_tools import __version__
from tpugraphs_tools.baseline.ceiling import per_graph_shares, pooled_shares
from tpugraphs_tools.baseline.data import GraphInfo, GraphSource, TgtSource, open_source
from tpugraphs_tools.baseline.defaults import default_rows
from tpugraphs_tools.baseline.headroom import collection_headroom
from tpugraphs_tools.baseline.holdout import MIN_CONFIGS, holdout_views
from tpugraphs_tools.baseline.loading import Loader
from tpugraphs_tools.baseline.metrics import graph_metrics, mean_metrics
from tpugraphs_tools.baseline.model import ModelConfig
from tpugraphs_tools.baseline.options import BaselineOptions
from tpugraphs_tools.baseline.prepare import FeatureStats, PreparedGraph, RawGraph
from tpugraphs_tools.baseline.rankers import ORDER, Rankers, described
from tpugraphs_tools.baseline.report import (
    BaselineReport,
    CollectionReport,
    Evaluation,
    GraphScore,
    Metrics,
    SplitPolicy,
    TrainStats,
)
from tpugraphs_tools.baseline.saved import SavedModel
from tpugraphs_tools.baseline.splits import split_graph_infos
from tpugraphs_tools.baseline.train import Trainer
from tpugraphs_tools.baseline.trivial import label_ci
from tpugraphs_tools.baseline.versions import versions
from tpugraphs_tools.errors import DatasetError, NothingToScore
from tpugraphs_tools.format import DEFAULT_RATIOS, collection_of

Progress = Callable[[str], None]
EVAL_SPLITS = ("valid", "test")


def evaluate(trainer: Trainer, graphs: list[PreparedGraph], rankers: Rankers
             ) -> tuple[dict[str, dict[str, Metrics]], list[GraphScore]]:
    """Per split: method → mean metrics (with τ as a share of the noise ceiling); plus
    per-graph scores."""
    per_graph: list[GraphScore] = []
    for g in graphs:
        if g.info.split not in EVAL_SPLITS:
            continue
        methods = {"model": graph_metrics(g.runtime.read(), trainer.predict(g), label_ci(g)),
                   **rankers.score(g)}
        per_graph_shares(methods)
        per_graph.append(GraphScore(g.info.graph_id, g.info.split, g.info.program,
                                    g.num_configs, g.num_nodes, methods))
    summary: dict[str, dict[str, Metrics]] = {}
    for split in EVAL_SPLITS:
        rows = [r.methods for r in per_graph if r.split == split]
        if not rows:
            continue
        summary[split] = {m: mean_metrics(r[m] for r in rows if m in r) for m in ORDER
                          if any(m in r for r in rows)}
        pooled_shares(rows, summary[split])
    return summary, per_graph


def copies_note(kind: str, per_graph: list[GraphScore]) -> list[str]:
    """What the fewer-copies heuristic could use, stated as it is."""
    if not collection_of(kind).per_node_configs or not per_graph:
        return []
    scored = sum("fewer-copies" in r.methods for r in per_graph)
    if scored == len(per_graph):
        return []
    if scored == 0:
        return ["no fewer-copies ranker: num_copies is unknown for the scored configs (only "
                "tgt collections record it in configs.parquet)"]
    return [f"fewer-copies ranker scored on {scored} of {len(per_graph)} graphs (num_copies "
            "unknown for some configs of the others)"]


def train_and_score(train: list[PreparedGraph], scored: list[PreparedGraph],
                    opts: BaselineOptions, progress: Progress | None, label: str,
                    defaults: dict[str, np.ndarray], feature_stats: FeatureStats
                    ) -> tuple[TrainStats, dict[str, dict[str, Metrics]], list[GraphScore],
                               list[str], SavedModel]:
    """Fit one model on ``train`` and score ``scored`` (valid/test graphs or views); the
    model comes back ready to save (``feature_stats``: the normalisation it was fitted on)."""
    kind = train[0].info.kind
    model_cfg = ModelConfig(kind=kind, layer=opts.layer, hidden=opts.hidden, layers=opts.layers,
                            cross_config_attention=opts.cross_config_attention)
    start = time.perf_counter()
    trainer = Trainer(model_cfg, opts.train, train[0])
    history = trainer.fit(train, progress=(lambda e, loss: progress(
        f"{label}: epoch {e + 1}/{opts.train.epochs} loss {loss:.4f}")) if progress else None)
    train_seconds = time.perf_counter() - start
    if progress:
        progress(f"{label}: fitting the baseline rankers, scoring held-out configs")
    rankers = Rankers.fit(train, defaults, opts.train.seed)
    summary, per_graph = evaluate(trainer, scored, rankers)
    stats = TrainStats(seconds=train_seconds, loss=history.loss,
                       epoch_seconds=history.epoch_seconds,
                       finetune_loss=history.finetune_loss, compiles=history.compiles,
                       segments=int(sum(g.num_segments for g in train)),
                       embedding_table_bytes=trainer.table.nbytes)
    saved = SavedModel.build(trainer.params, model_cfg, feature_stats, opts.to_json(),
                             train[0].info.collection, label)
    return stats, summary, per_graph, rankers.coverage_notes(scored), saved


def by_program(raws: list[RawGraph], loader: Loader, opts: BaselineOptions,
               progress: Progress | None, split_method: str, defaults: dict[str, np.ndarray]
               ) -> tuple[Evaluation | None, str | None]:
    """Train on the train programs, score the valid/test programs; or why it cannot run."""
    train = [r for r in raws if r.info.split == "train"
             and opts.train_strategy in (None, r.info.strategy)]
    held = [r for r in raws if r.info.split in EVAL_SPLITS]
    programs = {s: sorted({r.info.program for r in raws if r.info.split == s})
                for s in ("train", "valid", "test")}
    if not train or not held:
        count = len({r.info.program for r in raws})
        missing = "train" if not train else "valid or test"
        return None, (f"by-program split skipped: no {missing} program among {count} "
                      f"program(s) with configs (3 or more programs give each split one)")
    feature_stats = loader.fit_stats(train)
    graphs = loader.apply(train + held, feature_stats)
    stats, results, per_graph, notes, saved = train_and_score(
        graphs[:len(train)], graphs[len(train):], opts, progress, "by-program", defaults,
        feature_stats)
    counts = {s: sum(r.info.split == s for r in raws) for s in ("train", "valid", "test")}
    kind = train[0].info.kind
    return Evaluation("programs", split_method, counts, programs, stats, kind, results,
                      per_graph, copies_note(kind, per_graph) + notes,
                      methods=methods_of(per_graph), model=saved), None


def within_graph(raws: list[RawGraph], loader: Loader, opts: BaselineOptions,
                 progress: Progress | None, defaults: dict[str, np.ndarray]
                 ) -> tuple[Evaluation | None, list[str]]:
    """Train on a seeded share of every graph's configs, rank the rest of each graph."""
    train, test, notes = holdout_views(raws, opts.train.seed, opts.holdout_share)
    if not train:
        return None, notes
    feature_stats = loader.fit_stats(train)
    graphs = loader.apply(train + test, feature_stats)
    stats, results, per_graph, ranker_notes, saved = train_and_score(
        graphs[:len(train)], graphs[len(train):], opts, progress, "within-graph", defaults,
        feature_stats)
    programs = sorted({r.info.program for r in train})
    configs = {"train": int(sum(r.runtime.size for r in train)),
               "held_out": int(sum(r.runtime.size for r in test))}
    kind = train[0].info.kind
    split_method = f"within-graph(seed={opts.train.seed}, share={opts.holdout_share:g})"
    return Evaluation(
        "configs", split_method, {"train": len(train), "valid": 0, "test": len(test)},
        {"train": programs, "valid": [], "test": programs}, stats, kind, results, per_graph,
        copies_note(kind, per_graph) + ranker_notes, configs=configs, share=opts.holdout_share,
        min_configs=MIN_CONFIGS, methods=methods_of(per_graph), model=saved), notes


def methods_of(per_graph: list[GraphScore]) -> dict[str, str]:
    """What each method that scored a graph reads (the report's legend)."""
    return described(sorted({m for r in per_graph for m in r.methods}))


def _scored(evaluation: Evaluation) -> bool:
    """True when the model got a defined τ or OPA on some held-out graph."""
    return any(methods["model"].get("kendall_tau_n", 0) or methods["model"].get("opa_n", 0)
               for methods in evaluation.results.values() if "model" in methods)


def run_collection(source: GraphSource, infos: list[GraphInfo], opts: BaselineOptions,
                   progress: Progress | None = None) -> CollectionReport:
    """Every evaluation this collection allows: by program (≥ 2 splits with programs) and
    within each graph (held-out configs); NothingToScore when neither ranks anything."""
    infos, split_method, conflicts = split_graph_infos(infos, opts.train.seed)
    loader = Loader(source, opts)
    raws, notes = loader.load(infos, progress)
    notes = conflicts + notes
    name = infos[0].collection if infos else "?"
    if not raws:
        raise NothingToScore(f"{source.name}: collection {name!r} has no graph with measured "
                             f"configs; {_what_to_collect(source)}")
    evaluations: dict[str, Evaluation] = {}
    defaults = default_rows(source, [r.info for r in raws], loader.configs)
    if opts.holdout in ("auto", "programs"):
        program_eval, skipped = by_program(raws, loader, opts, progress, split_method,
                                           defaults)
        if program_eval is not None:
            evaluations["by-program"] = program_eval
        else:
            notes.append(str(skipped))
    if opts.holdout in ("auto", "configs"):
        graph_eval, graph_notes = within_graph(raws, loader, opts, progress, defaults)
        notes.extend(graph_notes)
        if graph_eval is not None:
            evaluations["within-graph"] = graph_eval
    if not any(_scored(e) for e in evaluations.values()):
        most = max(int(r.runtime.size) for r in raws)
        raise NothingToScore(
            f"{source.name}: nothing to score in collection {name!r}: "
            f"{len({r.info.program for r in raws})} program(s), at most {most} measured "
            f"config(s) per graph; a within-graph hold-out needs ≥ {MIN_CONFIGS} ok configs "
            f"in a graph, a by-program split ≥ 3 programs"
            + (f" (only --holdout {opts.holdout} was asked for)" if opts.holdout != "auto"
               else "") + f"; {_what_to_collect(source)}")
    room, room_notes = collection_headroom(source, raws)
    return CollectionReport(kind=raws[0].info.kind, graphs=len(raws),
                            programs=len({r.info.program for r in raws}),
                            split_method=split_method, evaluations=evaluations,
                            notes=notes + room_notes, headroom=room)


def _what_to_collect(source: GraphSource) -> str:
    if isinstance(source, TgtSource):
        return (f"collect more, e.g. `tgt collect --program resnet50 --configs 20 --out "
                f"{source.name}` (and further --program values for a by-program split)")
    return "add graphs with measured configs to the tree"


def run_baseline(path: str | Path, opts: BaselineOptions,
                 progress: Progress | None = None) -> BaselineReport:
    """Train and evaluate one model per collection (``report.to_json()`` is report.json)."""
    source = open_source(path)
    infos = source.index()
    collections = sorted({i.collection for i in infos})
    if opts.collection is not None:
        if opts.collection not in collections:
            raise DatasetError(f"{path}: no collection {opts.collection!r} "
                               f"(have {collections})")
        collections = [opts.collection]
    report = BaselineReport(
        tgt_version=__version__, versions=versions(), source=str(path),
        options=opts.to_json(),
        split=SplitPolicy(policy="by-program", ratios=list(DEFAULT_RATIOS),
                          seed=opts.train.seed, within_graph_share=opts.holdout_share,
                          within_graph_min_configs=MIN_CONFIGS))
    for name in collections:
        subset = [i for i in infos if i.collection == name]
        try:
            report.collections[name] = run_collection(source, subset, opts, progress)
        except NothingToScore as exc:
            if len(collections) == 1:
                raise
            report.skipped[name] = str(exc)
    if not report.collections:
        raise NothingToScore("; ".join(report.skipped.values()))
    return report
