"""``tgt collect``: build a dataset from zoo programs, user programs, HLO files or a plan."""

from __future__ import annotations

from typing import Any

import click
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
        help="Program size preset.")
@option("--mode", type=click.Choice(["infer", "train"]), default="infer", show_default=True,
        section=PROGRAM, help="Forward pass or full training step.")
@measure_options
@option("--backend", default=None, section=RUN, help="jax backend (default: jax's default).")
@option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
        section=RUN, help="Run items in this process or on a Ray cluster.")
@option("--address", default=None, section=RUN,
        help="Ray cluster address (with --executor ray).")
@option("--verbose", is_flag=True, default=False, section=RUN,
        help="Show the worker processes' raw output (XLA's own logging included) here "
             "instead of writing it to <out>/.tgt-logs/collect.log.")
@handle_errors
def collect(programs: tuple[str, ...], hlo_files: tuple[str, ...], plan: str | None,
            status_of: str | None, out: str | None, backend: str | None, executor: str,
            address: str | None, verbose: bool, **options: Any) -> None:
    """Lower programs / read HLO, featurize like TpuGraphs, measure layout configs, store.

    Killed at any point, the same command resumes where it stopped. Exit status: 0 all
    measured, 1 error (nothing half-written), 3 partial: a graph whose default config the
    backend cannot compile or run is stored with `default_failed` config rows saying why.

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
    request.verbose = verbose
    summary = _run(request, executor, address)
    _print_summary(summary)
    if summary.partial:
        from tpugraphs_tools.collect import EXIT_PARTIAL

        for what, reason in summary.unmeasured.items():
            terminal.note("partial", f"{what}: {reason}")
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
    for col in ("graph_id", "program", "nodes", "edges", "configurable", "configs"):
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
    table.add_row("configs tried", f"{s['configs']} "
                  + ", ".join(f"{k} {v}" for k, v in sorted(s["status"].items())))
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


def _print_config_summary(summaries: dict[str, dict]) -> None:
    table = Table(title="layout configs")
    for col in ("graph_id", "configs", "ok", "no-op", "duplicate", "errors",
                "fastest ÷ default", "slowest ÷ default", "median CI ±", "pairs apart",
                "A/A control"):
        table.add_column(col, justify="left" if col == "graph_id" else "right", overflow="fold",
                         min_width=24 if col == "graph_id" else None)
    for graph_id, s in summaries.items():
        status = s["status"]
        errors = {k: v for k, v in status.items()
                  if k not in ("ok", "noop", "duplicate", "control", "repeat")}
        detail = ", ".join(f"{k} {v}" for k, v in errors.items())
        best = f"{1 / s['best_speedup']:.3f}×" if s["best_speedup"] else "-"
        worst = f"{s['worst_slowdown']:.3f}×" if s["worst_slowdown"] else "-"
        table.add_row(graph_id, str(s["configs"]), str(status.get("ok", 0)),
                      str(status.get("noop", 0)), str(status.get("duplicate", 0)),
                      f"{sum(errors.values())}" + (f" ({detail})" if detail else ""), best, worst,
                      _pct(s.get("ci_half_width_median")), _apart(s), _control(s))
    terminal.print(table)
    floors = [s["noise_floor"] for s in summaries.values() if s.get("noise_floor") is not None]
    if floors:
        held = sum(s.get("controls_holding_1", 0) for s in summaries.values())
        total = sum(s.get("controls", 0) for s in summaries.values())
        terminal.print(f"noise floor (A/A control CI half-width, median over graphs): "
                       f"±{100 * sorted(floors)[len(floors) // 2]:.2f}%; control CI holds 1.0 "
                       f"in {held}/{total} batches")
    spreads = [s["process_sd"] for s in summaries.values() if s.get("process_sd") is not None]
    if spreads:
        terminal.print(f"spread between measurement processes (SD, median over graphs): "
                       f"{100 * sorted(spreads)[len(spreads) // 2]:.2f}%, in every label's CI")
    print_pairs_apart(sum(s.get("pairs_separated") or 0 for s in summaries.values()),
                      sum(s.get("pairs") or 0 for s in summaries.values()))


def _pct(value: float | None) -> str:
    return f"±{100 * value:.2f}%" if value is not None else "-"


def _apart(s: dict) -> str:
    """Config pairs whose label CIs are disjoint: the orders the labels claim."""
    pairs = s.get("pairs") or 0
    return f"{s.get('pairs_separated', 0)}/{pairs}" if pairs else "-"


def _control(s: dict) -> str:
    """The A/A control of a graph: batches whose CI holds 1.0, its ratio range."""
    if not s.get("controls"):
        return "-"
    low, high = s["control_range"]
    return f"{s['controls_holding_1']}/{s['controls']} hold 1 ({low:.3f}–{high:.3f})"


def _print_status(root: str) -> None:
    from tpugraphs_tools.collect import collection_status

    status = collection_status(root)
    table = Table(title=f"collection status of {status['dataset']}")
    for col in ("graph_id", "state", "config rows", "statuses"):
        table.add_column(col, overflow="fold")
    for row in status["committed"]:
        table.add_row(row["graph_id"], "committed", str(row["config_rows"]),
                      ", ".join(f"{k} {v}" for k, v in sorted(row["statuses"].items())))
    for graph_id, info in status["partial"].items():
        table.add_row(graph_id, "[yellow]in progress[/]", str(info["measured"]),
                      f"journal: {info['header']}")
    terminal.print(table)
    for parent, tile in status["tile_programs"].items():
        terminal.print(
            f"tile program {tile['program']} ({parent}): {tile['kernels']} kernels: "
            f"{len(tile['committed'])} committed, {len(tile['in_progress'])} in progress "
            f"({sum(tile['in_progress'].values())} rows journaled), {len(tile['skipped'])} "
            f"not stored, {len(tile['left'])} left", highlight=False)
        for name, why in tile["skipped"].items():
            terminal.print(f"  not stored: {name}: {why}", highlight=False)
