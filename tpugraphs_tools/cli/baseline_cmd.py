"""``tgt baseline``: train the reference cost model and compare it with trivial rankers."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import click
from rich import box
from rich.table import Table
from rich.text import Text

# the face's option records import without jax/flax (fast --help); the rest when a run starts
from tpugraphs_tools.baseline import LAYERS, BaselineOptions, PrepareOptions, TrainConfig
from tpugraphs_tools.cli._common import data_argument, handle_errors, plural, terminal
from tpugraphs_tools.cli._options import record_options

if TYPE_CHECKING:
    from tpugraphs_tools.baseline import BaselineReport, Evaluation

# Per collection kind, the columns its literature reports (anchors.md: layout → τ, OPA,
# slowdown; tile → Kaggle score, top-K error).
_COLUMNS = {
    "layout": (("τ", "kendall_tau"), ("τ sure", "kendall_tau_sure"),
               ("τ÷ceil", "kendall_tau_of_ceiling"), ("OPA", "opa"), ("slow@1", "slowdown@1"),
               ("slow@5", "slowdown@5")),
    "tile": (("kaggle", "kaggle_tile_score"), ("err@1", "top1_error"), ("err@5", "top5_error"),
             ("τ", "kendall_tau"), ("τ÷ceil", "kendall_tau_of_ceiling")),
}


# The record fields' flags, in --help order, around the command's own (--model, --predict,
# --out before HIDDEN; --report last).
TRAINING = ("epochs", "seed", "layer")
MODEL_AND_DATA = (
    "hidden", "layers", "loss", "lr", "configs_per_graph", "batch_graphs", "max_configs",
    "lazy_configs", "gst", "segment_method", "segment_nodes", "partition", "backprop_segments",
    "keep_prob", "finetune_epochs", "prune", "pad_minus_one", "mismatch_features",
    "default_slots", "train_strategy", "hlo_features", "cross_config_attention", "collection",
    "holdout", "holdout_share")
RECORDS = (BaselineOptions, TrainConfig, PrepareOptions)


@click.command("baseline")
@data_argument
# --layer defaults to None: the deprecated `--model sage` must see whether it was given
@record_options(*RECORDS, names=TRAINING, default_in_help=("layer",))
@click.option("--model", default=None, metavar="PATH",
              help="With --predict only: the saved model to rank with "
                   "(DATA/baseline/model-*.msgpack or its .json).")
@click.option("--predict", "predict_data", default=None, type=click.Path(file_okay=False),
              help="Rank this dataset's configs with the saved --model PATH (no training).")
@click.option("--out", "predictions_path", type=click.Path(dir_okay=False), default=None,
              help="With --predict only: the predictions CSV (+ .json metrics beside it) "
                   "[default: PREDICT/baseline/predictions-<model>.csv]; a training run's "
                   "report goes to --report.")
@record_options(*RECORDS, names=MODEL_AND_DATA)
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="JSON report path (+ .md beside it) [default: DATA/baseline/report.json].")
@handle_errors
def baseline(data: str, model: str | None, predict_data: str | None,
             predictions_path: str | None, report_path: str | None, **options: Any) -> None:
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
        if model is None or model in LAYERS:
            raise click.UsageError("--predict needs --model PATH: a saved model, e.g. "
                                   "DATA/baseline/model-layout-by-program.msgpack")
        if options["layer"] is not None:
            raise click.UsageError("--layer chooses the layer of a model being trained; "
                                   "--predict reads it from the saved --model")
        _predict(predict_data, model, options["collection"], options["lazy_configs"],
                 predictions_path)
        return
    if predictions_path is not None:
        raise click.UsageError("--out names the predictions CSV of --predict; a training "
                               "run writes its report to --report")
    layer = _layer_from_deprecated_model(model, options.pop("layer"))
    opts = BaselineOptions.from_keys(options if layer is None else {**options, "layer": layer})
    _train(data, opts, report_path)


def _layer_from_deprecated_model(model: str | None, layer: str | None) -> str | None:
    """``--layer``, or the layer an old ``--model sage|gcn`` names (with a deprecation line);
    ``--model PATH`` is a saved model, read only by ``--predict``."""
    if model in LAYERS and layer is None:
        terminal.warnings([f"--model {model} is deprecated and will be removed in the next "
                           f"release; use --layer {model}"])
        return model
    if model is not None:
        raise click.UsageError(f"--model {model}: a saved model is read only with --predict "
                               "DATA (to choose the graph layer of training, use --layer)")
    return layer


def _train(data: str, opts: BaselineOptions, report_path: str | None) -> None:
    """Train and score, write the report (and models) to ``report_path`` or into ``data``,
    and print it."""
    from tpugraphs_tools.baseline import run_baseline, save_report, write_report
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
