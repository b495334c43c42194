"""``tgt export``: write a dataset as the official TpuGraphs npz tree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from rich.table import Table

from tpugraphs_tools.cli._common import console, data_argument, err_console, handle_errors


def _ratios(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[float, ...]:
    from tpugraphs_tools.publish import parse_ratios

    try:
        return parse_ratios(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def split_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--split-by/--seed/--ratios, shared by export and publish so both split alike."""
    fn = click.option("--ratios", default="0.8,0.1,0.1", show_default=True, callback=_ratios,
                      help="train,valid,test fractions of the groups without a stored split.")(fn)
    fn = click.option("--seed", type=int, default=0, show_default=True,
                      help="Seed of the group shuffle (same seed, same splits).")(fn)
    return click.option("--split-by", type=click.Choice(["program", "fingerprint"]),
                        default="program", show_default=True,
                        help="Group kept whole in one split. A split already in "
                             "graphs.parquet is kept and its group follows it.")(fn)


def print_warnings(warnings: list[str], limit: int = 10) -> None:
    for line in warnings[:limit]:
        err_console.print(f"[yellow]warning:[/] {line}", highlight=False)
    if len(warnings) > limit:
        err_console.print(f"[yellow]… {len(warnings) - limit} more warnings[/]")


@click.command("export")
@data_argument
@click.option("--format", "fmt", type=click.Choice(["tpugraphs"]), default="tpugraphs",
              show_default=True, help="Output format (the official TpuGraphs npz tree).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder to write; it appears only when complete.")
@click.option("--source", type=click.Choice(["xla", "nlp"]), default=None,
              help="Layout source folder. Default: an imported graph's own, otherwise xla.")
@split_options
@click.option("--overwrite", is_flag=True, help="Replace --out if it is not empty.")
@handle_errors
def export(data: str, fmt: str, out: str, source: str | None, split_by: str, seed: int,
           ratios: tuple[float, float, float], overwrite: bool) -> None:
    """Write DATA (default data/) as the official TpuGraphs npz tree.

    \b
    Files: npz/layout/{source}/{search}/{split}/<graph>.npz and npz/tile/xla/{split}/<graph>.npz
    with exactly the TpuGraphs keys, dtypes and shapes.
    The search folder is each config's strategy (default/random); no program is in two splits.
    Example:
      tgt export data/ --format tpugraphs --out tpugraphs/
      tgt export data/ --out tpugraphs/ --split-by fingerprint --seed 1 --ratios 0.7,0.15,0.15
    """
    from tpugraphs_tools.publish import export_tpugraphs

    with console.status("exporting"):
        result = export_tpugraphs(data, out, source=source, split_by=split_by, seed=seed,
                                  ratios=ratios, overwrite=overwrite)
    print_warnings(result.warnings)
    table = Table(title=f"{fmt} tree in {out}")
    table.add_column("folder")
    table.add_column("files", justify="right")
    for folder, count in result.counts().items():
        table.add_row(folder, str(count))
    console.print(table)
    console.print(f"[green]✓[/] {len(result.files)} files → {out}")
