"""``tgt collect``: build a dataset from zoo programs, user programs, HLO files or a plan."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from rich import box
from rich.table import Table

from tpugraphs_tools.cli._common import DEFAULT_DATA, handle_errors, print_pairs_apart, terminal
from tpugraphs_tools.cli._options import (
    SectionedCommand,
    deprecated_alias,
    measure_options,
    option,
    resolve_deprecated,
)
from tpugraphs_tools.format import KINDS

INPUT, PROGRAM, RUN = "Input and output", "Program (--program)", "Execution"


@click.command("collect", cls=SectionedCommand)
@option("--program", "programs", multiple=True, section=INPUT,
        help="Zoo program (see `tgt programs`) or user 'module:make_fn'. Repeatable.")
@option("--hlo", "hlo_files", multiple=True, type=click.Path(dir_okay=False), section=INPUT,
        help="HLO text (.hlo/.txt) or HloModuleProto (.pb) file. Repeatable.")
@option("--plan", type=click.Path(dir_okay=False, exists=True), default=None, section=INPUT,
        help="YAML/JSON plan: programs × arguments × configs (docs/collect.md).")
@option("--status", "status_of", type=click.Path(file_okay=False), default=None,
        section=INPUT,
        help="Show the progress of a (partial) collection in this dataset and exit.")
@option("--out", default=None, type=click.Path(file_okay=False), section=INPUT,
        help=f"Dataset directory, created or extended [default: {DEFAULT_DATA}].")
@option("--collection", type=click.Choice([k.value for k in KINDS]), default="layout",
        show_default=True, section=INPUT,
        help="layout: whole programs × layout configs; tile: every kernel of the optimized "
             "program × the backend's kernel configs.")
@option("--batch-size", "batch", default=1, show_default=True, type=click.IntRange(min=1),
        section=PROGRAM, help="The program's input batch size (not --timing-batch).")
@deprecated_alias("--batch", "batch", click.IntRange(min=1))
@option("--image-size", type=click.IntRange(min=8), default=None, section=PROGRAM,
        help="Image side for vision programs (default: the preset's).")
@option("--seq-len", type=click.IntRange(min=1), default=None, section=PROGRAM,
        help="Sequence length for sequence programs (default: the preset's).")
@option("--dtype", type=click.Choice(["float32", "bfloat16"]), default="float32",
        show_default=True, section=PROGRAM,
        help="Floating-point type of the program's parameters and inputs.")
@option("--preset", default="base", show_default=True, section=PROGRAM,
        help="Program size preset: tiny, small, base, large, ... as the program offers "
             "(`tgt programs` lists each one's; another is an error naming them).")
@option("--mode", type=click.Choice(["infer", "train"]), default="infer", show_default=True,
        section=PROGRAM, help="Forward pass or full training step.")
@measure_options
@option("--backend", default=None, section=RUN, help="jax backend (default: jax's default).")
@option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
        section=RUN, help="Run items in this process or on a Ray cluster.")
@option("--address", default=None, section=RUN,
        help="Ray cluster address (with --executor ray).")
@option("--retry-unmeasured", is_flag=True, section=RUN,
        help="Measure again the graphs stored without measured configs (default_failed), "
             "e.g. after fixing the backend; graphs a --timeout stopped are retried anyway.")
@option("--keep-source-paths", is_flag=True, section=INPUT,
        help="Store the HLO's source file names (stack frames, op metadata), source_path and "
             "XLA_FLAGS paths as they are on this machine; by default they are made relative "
             "(to site-packages, the current directory, ...) or cut to the file name.")
@option("--verbose", is_flag=True, default=False, section=RUN,
        help="Show the worker processes' raw output (XLA's own logging included) here "
             "instead of writing it to <out>/.tgt-logs/collect.log.")
@handle_errors
def collect(programs: tuple[str, ...], hlo_files: tuple[str, ...], plan: str | None,
            status_of: str | None, out: str | None, backend: str | None, executor: str,
            address: str | None, retry_unmeasured: bool, keep_source_paths: bool,
            verbose: bool, **options: Any) -> None:
    """Lower programs / read HLO, featurize like TpuGraphs, measure layout configs, store.

    Killed at any point, the same command resumes where it stopped. Exit status: 0 all
    measured, 1 error (nothing half-written), 3 partial: a graph whose default config cannot
    be compiled or run (or ran past --timeout) is stored with `default_failed` config rows
    saying why. A rerun measures it again if --timeout stopped it, or with --retry-unmeasured.

    \b
    Examples:
      tgt collect --program resnet50
      tgt collect --program resnet50 --batch-size 1 --image-size 112 --configs 100 --seed 0 --out d/
      tgt collect --program resnet50 --configs 0          # graphs only
      tgt collect --hlo dump/module_0001.jit_f.before_optimizations.txt
      tgt collect --collection tile --program resnet18 --configs 8
      tgt collect --plan examples/plan.yaml
      tgt collect --status data/
    """
    from dataclasses import replace

    from tpugraphs_tools.collect import CollectRequest, load_plan_file, make_item, request_from_plan

    terminal.warnings(resolve_deprecated(click.get_current_context(), options))
    if status_of is not None:
        _print_status(status_of)
        return
    if plan is not None:
        if programs or hlo_files:
            raise click.UsageError("give either --plan or --program/--hlo, not both")
        request = request_from_plan(load_plan_file(plan), source=plan, out=out)
    else:
        if not programs and not hlo_files:
            raise click.UsageError("give at least one --program or --hlo (or --plan)")
        # The other flags are named like plan keys: one builder makes both kinds of item.
        items = [make_item(options, program=p) for p in programs]
        items += [make_item(options, hlo=h) for h in hlo_files]
        request = CollectRequest(items=items, out=out or DEFAULT_DATA, backend=backend)
    request = replace(request, retry_unmeasured=retry_unmeasured,
                      keep_source_paths=keep_source_paths, verbose=verbose)
    summary = _run(request, executor, address)
    _print_summary(summary)
    if summary.partial:
        from tpugraphs_tools.collect import EXIT_PARTIAL, RETRY_FLAG

        for what, reason in summary.unmeasured.items():
            again = (f" (stored by an earlier run and skipped: add {RETRY_FLAG} to try again)"
                     if what in summary.skipped else "")
            terminal.note("partial", f"{what}: {reason}{again}")
        terminal.note("partial", f"{len(summary.unmeasured)} item(s) stored without measured "
                      f"configs (exit status {EXIT_PARTIAL}); the other items are complete")
        raise SystemExit(EXIT_PARTIAL)


def _run(request: Any, executor: str, address: str | None) -> Any:
    if executor == "ray":
        from tpugraphs_tools.collect import collect_with_ray

        # what runs is drawn like local progress (not when piped); lost tasks always show
        with terminal.status("collect (ray)") as show:
            return collect_with_ray(request, address=address, progress=show,
                                    notice=lambda line: terminal.warnings([line]))
    from tpugraphs_tools.collect import bar_lines
    from tpugraphs_tools.collect import collect as run_collect

    with terminal.bars() as show:
        return run_collect(request, progress=lambda event: show(bar_lines(event)))


def _print_summary(summary: Any) -> None:
    table = Table(title=f"collected into {summary.dataset}")
    # num_configs counts the graph's npz configs: its labels (store/counts.py)
    for col in ("graph_id", "program", "nodes", "edges", "configurable", "labels"):
        table.add_column(col, justify="right" if col not in ("graph_id", "program") else "left",
                         overflow="fold")
    for row in summary.graphs:
        table.add_row(row["graph_id"], row["program"], str(row["num_nodes"]),
                      str(row["num_edges"]), str(row["num_configurable"]), str(row["num_configs"]))
    terminal.print(table)
    for what, line in summary.resumed.items():
        terminal.print(f"resumed {what}: {line}", highlight=False)
    if summary.skipped:
        terminal.print(f"already complete, not measured again: {', '.join(summary.skipped)}")
    if summary.configs:
        _print_config_summary({g: s.to_json() for g, s in summary.configs.items()})
    for label, tiles in summary.tiles.items():
        _print_tile_summary(label, tiles.to_json())
    if summary.configs or summary.tiles:
        graphs = len(summary.configs) + sum(t.kernels for t in summary.tiles.values())
        terminal.print(f"stored for {graphs} graph{'' if graphs == 1 else 's'}: "
                       f"{summary.counts.describe()}", highlight=False)
    if summary.failures:
        failures = Table(title="failures by reason (whole output: <out>/.tgt-logs/collect.log)")
        failures.add_column("configs", justify="right")
        failures.add_column("reason", overflow="fold")
        for reason, n in summary.failures.most_common():
            failures.add_row(str(n), reason)
        terminal.print(failures)
    _print_rate(summary)


def _print_rate(summary: Any) -> None:
    """Labels per minute: this run's ok labels over its wall time (resumed rows not counted)."""
    if summary.labels_per_minute is None:
        return  # no wall time (a summary built without running)
    minutes = summary.wall_seconds / 60
    if not summary.labels:  # e.g. every graph already complete
        terminal.print(f"labels per minute: - (no ok labels measured in this run; {minutes:.1f} "
                       f"min of wall time)", highlight=False)
        return
    terminal.print(f"labels per minute: {summary.labels_per_minute:.1f} ({summary.labels} ok "
                   f"labels measured in {minutes:.1f} min of wall time)", highlight=False)


def _print_tile_summary(label: str, s: dict) -> None:
    table = Table(title=f"kernel configs of {label} ({s['config_space']})")
    table.add_column("measure")
    table.add_column("value", overflow="fold")
    table.add_row("kernels stored / skipped", f"{s['kernels']} / {s['kernels_skipped']}")
    from tpugraphs_tools.store import ConfigCounts

    stored = ConfigCounts(s["configs_stored"], s["labels"], s["control_rows"])
    table.add_row("stored", stored.describe())
    unstored = s["configs"] - s["configs_stored"]
    table.add_row("configs tried", f"{s['configs']} ("
                  + ", ".join(f"{k} {v}" for k, v in sorted(s["status"].items())) + ")"
                  + (f", {unstored} of them in kernels not stored" if unstored else ""))
    if s.get("not_as_requested"):
        table.add_row("ok configs compiled to another tile than asked",
                      f"{s['not_as_requested']} (labelled by the tile that ran)")
    paired = s.get("apart_from_default") is not None
    if paired:
        table.add_row("configs whose 95% CI excludes the default",
                      str(s["apart_from_default"]))
    else:
        table.add_row("configs differing from default by > 3× CV", str(s["effects_over_3cv"]))
    top = s.get("largest_effect")
    if top:
        how = "CI apart from 1" if paired else f"{top['effect_cv']:.1f} CV"
        table.add_row("largest effect", f"{top['relative_to_default']:.3f}× default "
                      f"({how}) on {top['parent_instruction']} with {top['config']}")
    if s.get("best_speedup"):
        table.add_row("fastest / slowest config ÷ default",
                      f"{1 / s['best_speedup']:.3f}× / {s['worst_slowdown']:.3f}×")
    if paired:
        table.add_row("median CI ±", _pct(s.get("ci_half_width_median")))
        table.add_row("pairs apart (95% CIs disjoint, within a kernel)", _apart(s))
        table.add_row("A/A control", _control(s))
        if s.get("noise_floor") is not None:
            table.add_row("noise floor (A/A CI half-width, median)",
                          f"±{100 * s['noise_floor']:.2f}%")
    terminal.print(table)


# (header, cell) of the layout table; a "\n" in a header breaks it between words
_Cell = Callable[[dict], str]
_LAYOUT_COLUMNS: dict[str, tuple[str, _Cell]] = {
    "graph_id": ("graph_id", lambda s: s["graph_id"]),
    "configs": ("configs", lambda s: str(s["configs"])),
    "labels": ("labels", lambda s: str(s["labels"])),
    "control rows": ("control\nrows", lambda s: str(s["control_rows"])),
    "no-op": ("no-op", lambda s: str(s["status"].get("noop", 0))),
    "duplicate": ("duplicate", lambda s: str(s["status"].get("duplicate", 0))),
    "errors": ("errors", lambda s: _errors(s, detail=True)),
    "errors, narrow": ("errors", lambda s: _errors(s, detail=False)),
    "fastest": ("fastest\n÷ default", lambda s: _ratio(s["best_speedup"], invert=True)),
    "slowest": ("slowest\n÷ default", lambda s: _ratio(s["worst_slowdown"])),
    "ci": ("median\nCI ±", lambda s: _pct(s.get("ci_half_width_median"))),
    "pairs": ("pairs\napart", lambda s: _apart(s)),
    "control": ("A/A control", lambda s: _control(s)),
    "control, narrow": ("A/A\nholds 1", lambda s: _control(s, ranges=False)),
}
FULL = ("graph_id", "configs", "labels", "no-op", "duplicate", "errors", "control rows",
        "fastest", "slowest", "ci", "pairs", "control")
NARROW = ("graph_id", "configs", "labels", "errors, narrow", "fastest", "ci", "pairs",
          "control, narrow")


def _layout_table(rows: list[dict], columns: tuple[str, ...]) -> Table:
    """Cells never wrap (a figure stays whole); only the graph id may fold to fit."""
    table = Table(title="layout configs", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  collapse_padding=True)
    for key in columns:
        header = _LAYOUT_COLUMNS[key][0]
        if key == "graph_id":
            table.add_column(header, overflow="fold")
        else:
            table.add_column(header, justify="right", no_wrap=True)
    for s in rows:
        table.add_row(*(_LAYOUT_COLUMNS[key][1](s) for key in columns))
    return table


def _print_config_summary(summaries: dict[str, dict]) -> None:
    rows = [{**s, "graph_id": graph_id} for graph_id, s in summaries.items()]
    terminal.fitted(_layout_table(rows, FULL), _layout_table(rows, NARROW),
                    left_out="(too narrow for no-op, duplicate, error kinds, control rows, "
                             "slowest ÷ default and per-graph A/A ranges: piped output has every "
                             "column)")
    floors = [s["noise_floor"] for s in summaries.values() if s.get("noise_floor") is not None]
    if floors:
        held = sum(s.get("controls_holding_1", 0) for s in summaries.values())
        total = sum(s.get("controls", 0) for s in summaries.values())
        ranges = [s["control_range"] for s in summaries.values() if s.get("control_range")]
        spread = (f" (ratios {min(r[0] for r in ranges):.3f}–{max(r[1] for r in ranges):.3f})"
                  if ranges else "")
        terminal.print(f"noise floor (A/A control CI half-width, median over graphs): "
                       f"±{100 * sorted(floors)[len(floors) // 2]:.2f}%; control CI holds 1.0 "
                       f"in {held}/{total} batches{spread}")
    spreads = [s["process_sd"] for s in summaries.values() if s.get("process_sd") is not None]
    if spreads:
        terminal.print(f"spread between measurement processes (SD, median over graphs): "
                       f"{100 * sorted(spreads)[len(spreads) // 2]:.2f}%, in every label's CI")
    print_pairs_apart(sum(s.get("pairs_separated") or 0 for s in summaries.values()),
                      sum(s.get("pairs") or 0 for s in summaries.values()))


def _errors(s: dict, *, detail: bool) -> str:
    """Failed configs (every status but ok, no-op, duplicate and the control rows)."""
    errors = {k: v for k, v in s["status"].items()
              if k not in ("ok", "noop", "duplicate", "control", "repeat")}
    kinds = ", ".join(f"{k} {v}" for k, v in errors.items())
    return f"{sum(errors.values())}" + (f" ({kinds})" if detail and kinds else "")


def _ratio(value: float | None, *, invert: bool = False) -> str:
    if not value:
        return "-"
    return f"{1 / value if invert else value:.3f}×"


def _pct(value: float | None) -> str:
    return f"±{100 * value:.2f}%" if value is not None else "-"


def _apart(s: dict) -> str:
    """Config pairs whose label CIs are disjoint: the orders the labels claim."""
    pairs = s.get("pairs") or 0
    return f"{s.get('pairs_separated', 0)}/{pairs}" if pairs else "-"


def _control(s: dict, *, ranges: bool = True) -> str:
    """The A/A control of a graph: batches whose CI holds 1.0 (and its ratio range)."""
    if not s.get("controls"):
        return "-"
    held = f"{s['controls_holding_1']}/{s['controls']}"
    if not ranges:
        return held
    low, high = s["control_range"]
    return f"{held} hold 1 ({low:.3f}–{high:.3f})"


def _print_status(root: str) -> None:
    from tpugraphs_tools.collect import collection_status
    from tpugraphs_tools.store import ConfigCounts

    status = collection_status(root)
    table = Table(title=f"collection status of {status['dataset']}")
    for col in ("graph_id", "state", "rows", "statuses"):
        table.add_column(col, overflow="fold")
    for row in status["committed"]:
        table.add_row(row["graph_id"], "committed",
                      ConfigCounts.of_statuses(row["statuses"]).describe(),
                      ", ".join(f"{k} {v}" for k, v in sorted(row["statuses"].items())))
    for graph_id, info in status["partial"].items():
        table.add_row(graph_id, "[yellow]in progress[/]",
                      f"{ConfigCounts.of_statuses(info['statuses']).describe()} journaled",
                      ", ".join(f"{k} {v}" for k, v in info["statuses"].items()))
    terminal.print(table)
    for parent, tile in status["tile_programs"].items():
        terminal.print(
            f"tile program {tile['program']} ({parent}): {tile['kernels']} kernels: "
            f"{len(tile['committed'])} committed, {len(tile['in_progress'])} in progress "
            f"({sum(tile['in_progress'].values())} rows journaled), {len(tile['skipped'])} "
            f"not stored, {len(tile['left'])} left", highlight=False)
        for name, why in tile["skipped"].items():
            terminal.print(f"  not stored: {name}: {why}", highlight=False)
