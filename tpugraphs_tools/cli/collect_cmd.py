"""``tgt collect``: build a dataset from zoo programs, user programs or HLO files."""

from __future__ import annotations

import click
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from tpugraphs_tools.cli._common import DEFAULT_DATA, console, handle_errors


@click.command("collect")
@click.option("--program", "programs", multiple=True,
              help="Zoo program (see `tgt programs`) or user 'module:make_fn'. Repeatable.")
@click.option("--hlo", "hlo_files", multiple=True, type=click.Path(dir_okay=False),
              help="HLO text (.hlo/.txt) or HloModuleProto (.pb) file. Repeatable.")
@click.option("--out", default=DEFAULT_DATA, show_default=True, type=click.Path(file_okay=False),
              help="Dataset directory (created or extended).")
@click.option("--batch", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--image-size", type=click.IntRange(min=8), default=None,
              help="Image side for vision programs (default: the preset's).")
@click.option("--seq-len", type=click.IntRange(min=1), default=None,
              help="Sequence length for sequence programs (default: the preset's).")
@click.option("--dtype", type=click.Choice(["float32", "bfloat16"]), default="float32",
              show_default=True)
@click.option("--preset", default="base", show_default=True, help="Program size preset.")
@click.option("--mode", type=click.Choice(["infer", "train"]), default="infer", show_default=True,
              help="Forward pass or full training step.")
@click.option("--backend", default=None, help="jax backend (default: jax's default).")
@click.option("--configs", default=20, show_default=True, type=click.IntRange(min=0),
              help="Layout configs per graph, default config included (0 = graphs only).")
@click.option("--strategy", type=click.Choice(["default", "random"]), default="default",
              show_default=True, help="default: perturbations of the compiler's choice; "
              "random: every configurable tensor gets a random layout.")
@click.option("--seed", default=0, show_default=True, help="Seed for configs and inputs.")
@click.option("--repeats", default=10, show_default=True, type=click.IntRange(min=1),
              help="Timed runs per config (interleaved with the default config).")
@click.option("--warmup", default=2, show_default=True, type=click.IntRange(min=0))
@click.option("--timeout", "timeout_s", default=120.0, show_default=True,
              help="Seconds per config (compile + run) before the worker is killed.")
@handle_errors
def collect(programs: tuple[str, ...], hlo_files: tuple[str, ...], out: str, batch: int,
            image_size: int | None, seq_len: int | None, dtype: str, preset: str, mode: str,
            backend: str | None, configs: int, strategy: str, seed: int, repeats: int,
            warmup: int, timeout_s: float) -> None:
    """Lower programs / read HLO, featurize like TpuGraphs, measure layout configs, store in OUT.

    \b
    Examples:
      tgt collect --program resnet50
      tgt collect --program resnet50 --batch 1 --image-size 112 --configs 100 --seed 0 --out d/
      tgt collect --program resnet50 --configs 0          # graphs only
      tgt collect --hlo dump/module_0001.jit_f.before_optimizations.txt
    """
    from tpugraphs_tools.collect import CollectRequest
    from tpugraphs_tools.collect import collect as run_collect
    from tpugraphs_tools.collect.layout import LayoutOptions

    if not programs and not hlo_files:
        raise click.UsageError("give at least one --program or --hlo")
    layout = LayoutOptions(configs=configs, strategy=strategy, seed=seed, warmup=warmup,
                           repeats=repeats, timeout_s=timeout_s)
    request = CollectRequest(programs=list(programs), hlo_files=list(hlo_files), out=out,
                             backend=backend, layout=layout)
    if programs:
        request.program_args = _program_args(batch, image_size, seq_len, dtype, preset, mode)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("collecting", total=None)
        summary = run_collect(request, progress=lambda msg: bar.update(task, description=msg))
    table = Table(title=f"collected into {summary.dataset}")
    for col in ("graph_id", "program", "nodes", "edges", "configurable", "configs"):
        table.add_column(col, justify="right" if col not in ("graph_id", "program") else "left")
    for row in summary.graphs:
        table.add_row(row["graph_id"], row["program"], str(row["num_nodes"]),
                      str(row["num_edges"]), str(row["num_configurable"]), str(row["num_configs"]))
    console.print(table)
    if summary.configs:
        _print_config_summary(summary.configs)


def _print_config_summary(summaries: dict[str, dict]) -> None:
    table = Table(title="layout configs")
    for col in ("graph_id", "configs", "ok", "no-op", "duplicate", "errors", "best speed-up",
                "worst slowdown"):
        table.add_column(col, justify="left" if col == "graph_id" else "right")
    for graph_id, s in summaries.items():
        status = s["status"]
        errors = sum(v for k, v in status.items() if k not in ("ok", "noop", "duplicate"))
        detail = ", ".join(f"{k} {v}" for k, v in status.items()
                           if k not in ("ok", "noop", "duplicate"))
        best = f"{s['best_speedup']:.3f}×" if s["best_speedup"] else "-"
        worst = f"{s['worst_slowdown']:.3f}×" if s["worst_slowdown"] else "-"
        table.add_row(graph_id, str(s["configs"]), str(status.get("ok", 0)),
                      str(status.get("noop", 0)), str(status.get("duplicate", 0)),
                      f"{errors}" + (f" ({detail})" if detail else ""), best, worst)
    console.print(table)


def _program_args(batch: int, image_size: int | None, seq_len: int | None, dtype: str,
                  preset: str, mode: str) -> object:
    from tpugraphs_tools.programs import ProgramArgs

    return ProgramArgs(batch=batch, image_size=image_size, seq_len=seq_len, dtype=dtype,
                       preset=preset, mode=mode)
