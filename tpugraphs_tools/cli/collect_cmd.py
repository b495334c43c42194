"""``tgt collect``: build a dataset from zoo programs, user programs, HLO files or a plan."""

from __future__ import annotations

from typing import Any

import click

from tpugraphs_tools.cli._collect_live import run_with_bars
from tpugraphs_tools.cli._collect_summary import print_status, print_summary
from tpugraphs_tools.cli._common import DEFAULT_DATA, handle_errors, terminal
from tpugraphs_tools.cli._options import (
    SectionedCommand,
    check_executor,
    deprecated_alias,
    executor_options,
    option,
    record_options,
    refuse_given,
    resolve_deprecated,
)
from tpugraphs_tools.format import KINDS
from tpugraphs_tools.measure import OPTION_GROUPS, MeasureOptions

INPUT, PROGRAM, RUN = "Input and output", "Program (--program)", "Execution"
# What --plan leaves to the command line: the rest (program and measurement options) is the
# plan's own, and given as flags too it would be ignored.
PLAN_FLAGS = {"plan", "out", "backend", "executor", "address", "retry_unmeasured",
              "keep_source_paths", "verbose"}


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
@record_options(MeasureOptions, groups=OPTION_GROUPS)
@option("--backend", default=None, section=RUN, help="jax backend (default: jax's default).")
@executor_options("Run items in this process or on a Ray cluster.", section=RUN)
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

    from tpugraphs_tools.collect import (
        CollectRequest,
        load_plan_file,
        make_item,
        plan_warnings,
        request_from_plan,
    )

    ctx = click.get_current_context()
    if status_of is not None:
        refuse_given(ctx, "--status", {"status_of"}, "which shows a dataset's progress and exits")
        print_status(status_of)
        return
    check_executor(executor, address)
    terminal.warnings(resolve_deprecated(ctx, options))
    if plan is not None:
        if programs or hlo_files:
            raise click.UsageError("give either --plan or --program/--hlo, not both")
        refuse_given(ctx, "--plan", PLAN_FLAGS, "a plan sets these in its defaults or items")
        raw = load_plan_file(plan)
        terminal.warnings(plan_warnings(raw, source=plan))
        request = request_from_plan(raw, source=plan, out=out)
        if backend is not None:  # like --out, the command line's backend wins
            request = replace(request, backend=backend)
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
    print_summary(summary)
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

    return run_with_bars(lambda progress: run_collect(request, progress=progress), bar_lines)
