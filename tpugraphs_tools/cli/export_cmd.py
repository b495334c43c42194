"""``tgt export``: write a dataset as the official TpuGraphs npz tree."""

from __future__ import annotations

import click

from tpugraphs_tools.cli._common import (
    data_argument,
    handle_errors,
    plural,
    split_options,
    terminal,
)


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

    with terminal.status("exporting"):
        result = export_tpugraphs(data, out, source=source, split_by=split_by, seed=seed,
                                  ratios=ratios, overwrite=overwrite)
    terminal.warnings(result.warnings)
    table = terminal.table(f"{fmt} tree in {out}", ("folder", "files"), right={"files"})
    for folder, count in result.counts().items():
        table.add_row(folder, str(count))
    terminal.print(table)
    terminal.success(f"{plural(len(result.files), 'file')} → {out}")
