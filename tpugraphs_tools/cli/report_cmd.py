"""``tgt report``: an offline HTML page with PNG plots of a dataset."""

from __future__ import annotations

import click

from tpugraphs_tools.cli._common import data_argument, handle_errors, print_pairs_apart, terminal


@click.command("report")
@data_argument
@click.option("--out", default="report/", show_default=True, type=click.Path(file_okay=False),
              help="Folder for index.html and the PNGs (a previous report there is replaced).")
@click.option("--overwrite", is_flag=True, help="Replace --out even if it holds other files.")
@handle_errors
def report(data: str, out: str, overwrite: bool) -> None:
    """Write an offline HTML report with plots of DATA (default data/).

    \b
    Plots: per graph, the fastest config ÷ default with its 95% CI and every label with its
    CI, against the A/A noise floor; runtime relative to the default per program; rows per
    status; graph sizes; configs per graph. A config counts as faster than the default only
    when its whole CI lies below 1. Per graph: headroom (fastest ÷ default with its CI, share
    of configs faster than the default, label spread) and the noise ceiling (Kendall τ two
    reruns of the same configs would reach).
    Needs matplotlib (pip install 'tpugraphs-tools[publish]'); the page works offline.
    Example:
      tgt report data/ --out report/
    """
    from tpugraphs_tools.publish import write_report

    with terminal.status("drawing"):
        result = write_report(data, out, overwrite=overwrite)
    stats = result.stats
    terminal.success(f"{stats.graphs} graphs, {stats.counts.describe()}, "
                     f"{len(result.plots)} plots → {result.page}")
    print_pairs_apart(stats.pairs_separated, stats.pairs)
    if (summary := stats.label_summary()) is not None:
        terminal.print(summary)
