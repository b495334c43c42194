"""``tgt baseline``: train the reference cost model and compare it with trivial rankers."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import click
from rich import box
from rich.table import Table
from rich.text import Text

from tpugraphs_tools.cli._common import data_argument, handle_errors, plural, terminal

if TYPE_CHECKING:  # the library is imported when a command runs (fast --help)
    from tpugraphs_tools.baseline import BaselineReport, Evaluation

_LAYERS = ("sage", "gcn")
# Per collection kind, the columns its literature reports (anchors.md: layout → τ, OPA,
# slowdown; tile → Kaggle score, top-K error).
_COLUMNS = {
    "layout": (("τ", "kendall_tau"), ("τ sure", "kendall_tau_sure"),
               ("τ÷ceil", "kendall_tau_of_ceiling"), ("OPA", "opa"), ("slow@1", "slowdown@1"),
               ("slow@5", "slowdown@5")),
    "tile": (("kaggle", "kaggle_tile_score"), ("err@1", "top1_error"), ("err@5", "top5_error"),
             ("τ", "kendall_tau"), ("τ÷ceil", "kendall_tau_of_ceiling")),
}


@click.command("baseline")
@data_argument
@click.option("--epochs", type=click.IntRange(min=0), default=20, show_default=True,
              help="Training epochs.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed for initialisation, sampling and the split.")
@click.option("--layer", type=click.Choice(_LAYERS), default=None,
              help="Training: the graph layer, sage (GraphSAGE) or gcn  [default: sage].")
@click.option("--model", default=None, metavar="PATH",
              help="With --predict only: the saved model to rank with "
                   "(DATA/baseline/model-*.msgpack or its .json).")
@click.option("--predict", "predict_data", default=None, type=click.Path(file_okay=False),
              help="Rank this dataset's configs with the saved --model PATH (no training).")
@click.option("--out", "predictions_path", type=click.Path(dir_okay=False), default=None,
              help="With --predict only: the predictions CSV (+ .json metrics beside it) "
                   "[default: PREDICT/baseline/predictions-<model>.csv]; a training run's "
                   "report goes to --report.")
@click.option("--hidden", type=click.IntRange(min=4), default=64, show_default=True,
              help="Hidden width of every layer.")
@click.option("--layers", type=click.IntRange(min=1), default=3, show_default=True,
              help="Graph layers.")
@click.option("--loss", type=click.Choice(["listmle", "hinge", "sure-pairs"]),
              default="listmle", show_default=True,
              help="ListMLE, pairwise hinge (margin 0.1), or logistic over the pairs whose "
                   "label CIs are disjoint (sure-pairs).")
@click.option("--lr", type=click.FloatRange(min=0.0, min_open=True), default=1e-3,
              show_default=True, help="Learning rate.")
@click.option("--configs-per-graph", type=click.IntRange(min=2), default=16, show_default=True,
              help="Configs of a graph ranked together in one training step.")
@click.option("--batch-graphs", type=click.IntRange(min=1), default=4, show_default=True,
              help="Graphs per training batch.")
@click.option("--max-configs", type=click.IntRange(min=2), default=1000, show_default=True,
              help="Seeded subsample of configs per graph beyond this.")
@click.option("--lazy-configs/--in-memory-configs", default=True, show_default=True,
              help="Read graph structure and config features per batch from a cache "
                   "(DATA/.tgt-cache/; a few graphs open at a time) or hold them all in "
                   "memory.")
@click.option("--gst/--full-graph", default=False, show_default=True,
              help="Graph Segment Training or whole graphs per step.")
@click.option("--segment-method", type=click.Choice(["metis", "contiguous"]), default="metis",
              show_default=True, help="GST segments when no --partition is given.")
@click.option("--segment-nodes", type=click.IntRange(min=1), default=1000, show_default=True,
              help="GST segment size when no --partition is given.")
@click.option("--partition", default=None,
              help="Use a stored partition (e.g. metis-64 from `tgt partition`) for GST.")
@click.option("--backprop-segments", type=click.IntRange(min=1), default=1, show_default=True,
              help="GST: segments of a graph sampled for backpropagation per step.")
@click.option("--keep-prob", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True,
              help="GST stale-embedding dropout: probability to keep a historical embedding.")
@click.option("--finetune-epochs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Head-only epochs on fresh embeddings after training (GST).")
@click.option("--prune", is_flag=True, help="Keep configurable nodes + direct neighbours.")
@click.option("--pad-minus-one", is_flag=True,
              help="Node layout columns as −1-padded categories sharing the config embedding.")
@click.option("--mismatch-features", is_flag=True,
              help="Layout: count, per configurable node and config, the operands whose "
              "layout differs from the one it asks for (where copies appear).")
@click.option("--default-slots", is_flag=True,
              help="Layout: per configurable node and config, how many of its slots differ "
              "from the default config's (what the non-default-slots ranker counts).")
@click.option("--train-strategy", type=click.Choice(["default", "random"]), default=None,
              help="By-program score: train only on graphs of this config strategy "
              "(held-out graphs keep every strategy).")
@click.option("--hlo-features", is_flag=True,
              help="Extra node features recomputed from the stored HLO (separate array).")
@click.option("--cross-config-attention", is_flag=True,
              help="Let the configs of a graph attend to each other before scoring.")
@click.option("--collection", default=None, help="Only this collection (default: each).")
@click.option("--holdout", type=click.Choice(["auto", "programs", "configs"]), default="auto",
              show_default=True, help="What is held out: unseen programs, unseen configs of "
              "every graph, or (auto) each that the data allows.")
@click.option("--holdout-share", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
              default=0.3, show_default=True,
              help="Within-graph score: share of each graph's configs held out.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="JSON report path (+ .md beside it) [default: DATA/baseline/report.json].")
@handle_errors
def baseline(data: str, epochs: int, seed: int, layer: str | None, model: str | None,
             predict_data: str | None,
             predictions_path: str | None, hidden: int, layers: int, loss: str,
             lr: float, configs_per_graph: int, batch_graphs: int, max_configs: int,
             lazy_configs: bool, gst: bool,
             segment_method: str, segment_nodes: int, partition: str | None,
             backprop_segments: int, keep_prob: float, finetune_epochs: int, prune: bool,
             pad_minus_one: bool, mismatch_features: bool, default_slots: bool,
             train_strategy: str | None,
             hlo_features: bool, cross_config_attention: bool,
             collection: str | None, holdout: str, holdout_share: float,
             report_path: str | None) -> None:
    """Train the reference model, rank held-out configs, compare with trivial rankers.

    DATA is a tgt dataset or an official TpuGraphs npz tree (e.g. npz/layout/xla/default).
    Two scores: held-out programs (the dataset's splits, else a seeded 80/10/10 split by
    program, as `tgt export`), and held-out configs within each graph (a seeded share of
    every graph's configs), so one collected program is scored too. Exits 1 with what to
    collect when nothing can be scored. The report goes to DATA/baseline/.

    \b
    Compared with: random, fewer-copies (reads the optimized HLO), non-default-slots /
    near-default (config only), gbdt (LightGBM, no graph: pip install
    'tpugraphs-tools[trees]'), and the noise ceiling (τ two reruns would reach, from
    the label CIs). The report also gives each graph's headroom over the default.

    \b
    Examples:
      tgt baseline data/ --epochs 30 --layer gcn
      tgt baseline data/ --gst --partition metis-64 --finetune-epochs 2
      tgt baseline tpugraphs/npz/layout/xla/default --prune --hidden 128
      tgt baseline --predict other/ --model data/baseline/model-layout-by-program.msgpack
    """
    if predict_data is not None:
        if model is None or model in _LAYERS:
            raise click.UsageError("--predict needs --model PATH: a saved model, e.g. "
                                   "DATA/baseline/model-layout-by-program.msgpack")
        if layer is not None:
            raise click.UsageError("--layer chooses the layer of a model being trained; "
                                   "--predict reads it from the saved --model")
        _predict(predict_data, model, collection, lazy_configs, predictions_path)
        return
    if predictions_path is not None:
        raise click.UsageError("--out names the predictions CSV of --predict; a training "
                               "run writes its report to --report")
    if model in _LAYERS and layer is None:  # the old spelling of --layer
        terminal.warnings([f"--model {model} is deprecated and will be removed in the next "
                           f"release; use --layer {model}"])
        layer = model
    elif model is not None:
        raise click.UsageError(f"--model {model}: a saved model is read only with --predict "
                               "DATA (to choose the graph layer of training, use --layer)")
    model = layer or "sage"
    from tpugraphs_tools.baseline import (
        BaselineOptions,
        PrepareOptions,
        TrainConfig,
        run_baseline,
        save_report,
        write_report,
    )

    opts = BaselineOptions(
        model=model, hidden=hidden, layers=layers,
        cross_config_attention=cross_config_attention, collection=collection,
        segment_method=segment_method, segment_nodes=segment_nodes, partition=partition,
        holdout=holdout, holdout_share=holdout_share, train_strategy=train_strategy,
        train=TrainConfig(epochs=epochs, lr=lr, loss=loss, configs_per_graph=configs_per_graph,
                          batch_graphs=batch_graphs, seed=seed, gst=gst,
                          backprop_segments=backprop_segments, keep_prob=keep_prob,
                          finetune_epochs=finetune_epochs),
        prepare=PrepareOptions(prune=prune, pad_minus_one=pad_minus_one,
                               mismatch_features=mismatch_features,
                               default_slots=default_slots,
                               hlo_features=hlo_features, max_configs=max_configs, seed=seed,
                               lazy_configs=lazy_configs))
    from tpugraphs_tools.store import lock_if_dataset

    # a report going into DATA: its write lock from the start, so no run waits to be refused
    with lock_if_dataset(data if report_path is None else None):
        with terminal.status("baseline") as show:
            report = run_baseline(data, opts, progress=show)
        paths = (write_report(report, report_path) if report_path is not None
                 else save_report(report, data))
    print_report(report)
    if paths[2:]:
        terminal.note("models", ", ".join(str(p) for p in paths[2:] if p.suffix == ".msgpack")
                      + " (rank other data with `tgt baseline --predict DATA --model PATH`)")
    terminal.success(f"report written to {' and '.join(str(p) for p in paths[:2])}")


def print_report(report: BaselineReport) -> None:
    """Per collection: each evaluation's results table (fitted to the terminal), the
    headroom line and the notes; then the collections not scored."""
    for name, section in report.collections.items():
        for evaluation in section.evaluations.values():
            terminal.fitted(results_table(name, evaluation),
                            results_table(name, evaluation, compact=True))
            for line in undefined_notes(evaluation):
                terminal.note("–", line)
        if section.headroom:
            terminal.note("headroom", f"{name}: {section.beats_default().describe()} "
                          "(per graph in the report)")
        for note in section.all_notes()[:10]:
            terminal.note("note", note)
    for name, reason in report.skipped.items():
        terminal.note("not scored", f"{name}: {reason}")


def _predict(data: str, model: str, collection: str | None, lazy_configs: bool,
             out: str | None) -> None:
    """Rank ``data``'s configs with a saved model; print the metrics where it has labels."""
    from tpugraphs_tools.baseline import predict_dataset, save_predictions
    from tpugraphs_tools.store import lock_if_dataset

    with lock_if_dataset(data if out is None else None):
        with terminal.status("predict") as show:
            prediction = predict_dataset(data, model, collection=collection,
                                         lazy_configs=lazy_configs, progress=show)
        paths = save_predictions(prediction, data, out)
    summary = prediction.summary
    if summary.get("graphs"):
        columns = _COLUMNS[prediction.kind]
        table = Table(title=f"{prediction.collection}: saved model on {data}",
                      box=box.SIMPLE_HEAD)
        table.add_column("graphs", justify="right")
        for label, _ in columns:
            table.add_column(label, justify="right", no_wrap=True)
        table.add_row(str(int(summary["graphs"])), *(_fmt(summary.get(k)) for _, k in columns))
        terminal.print(table)
    for note in prediction.notes[:10]:
        terminal.note("note", note)
    terminal.success(f"{plural(sum(g.score.size for g in prediction.graphs), 'config')} of "
                     f"{plural(len(prediction.graphs), 'graph')} ranked: "
                     f"{' and '.join(str(p) for p in paths)}")


def _fmt(value: float | None) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.3f}"


def undefined_notes(evaluation: Evaluation) -> list[str]:
    """Why a cell of the results table shows "–" (undefined), once per reason."""
    from tpugraphs_tools.baseline import CEILING_MIN_PAIRS

    notes = []
    tied = sorted({method for methods in evaluation.results.values()
                   for method, v in methods.items()
                   if math.isnan(v.get("kendall_tau", math.nan))
                   and not math.isnan(v.get("opa", math.nan))})
    if tied:
        notes.append(f"τ of {', '.join(tied)}: it scored each graph's held-out configs alike "
                     "(a constant prediction, e.g. trees with too few rows to split), so τ is "
                     "undefined and OPA counts every tie as wrong")
    if any(math.isnan(v.get("kendall_tau_of_ceiling", math.nan))
           and not math.isnan(v.get("kendall_tau", math.nan))
           for methods in evaluation.results.values() for v in methods.values()):
        notes.append(f"τ÷ceil: needs label CIs and at least {CEILING_MIN_PAIRS} config pairs "
                     "under "
                     "the noise ceiling in the split (held-out configs per graph × graphs); "
                     "fewer make the ratio noise")
    return notes


def results_table(name: str, evaluation: Evaluation, *, compact: bool = False) -> Table:
    """One row per split × method (model and trivial baselines) of one evaluation; a rule
    between splits. Split, method and figures never wrap or crop, so valid and test rows
    stay apart at any width; ``compact`` drops the padding so it fits 80 columns."""
    from tpugraphs_tools.baseline import evaluation_title

    columns = _COLUMNS[evaluation.kind]
    table = Table(title=evaluation_title(name, evaluation), box=box.SIMPLE_HEAD,
                  show_edge=not compact, pad_edge=not compact, collapse_padding=compact)
    table.add_column("split", no_wrap=True, min_width=len("valid"))
    table.add_column("method", no_wrap=True)
    table.add_column("graphs", justify="right", no_wrap=True)
    for label, _ in columns:
        table.add_column(label, justify="right", no_wrap=True)
    for split, methods in evaluation.results.items():
        if table.row_count:
            table.add_section()
        for method, values in methods.items():
            style = "bold" if method == "model" else ""
            table.add_row(split, Text(method, style=style),
                          str(int(values.get("graphs", 0))),
                          *(_fmt(values.get(key)) for _, key in columns))
    return table
