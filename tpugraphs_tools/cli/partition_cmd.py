"""``tgt partition``: store a segment id per node (METIS or contiguous) for segment training."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from tpugraphs_tools.cli._common import data_argument, handle_errors, plural, terminal
from tpugraphs_tools.format import KINDS

if TYPE_CHECKING:  # the library is imported when the command runs (fast --help)
    from tpugraphs_tools.partition import PartitionResult


@click.command("partition")
@data_argument
@click.option("--segments", type=click.IntRange(min=1), default=None,
              help="Segments per graph (k). Default 64 unless --max-segment-nodes is given.")
@click.option("--max-segment-nodes", type=click.IntRange(min=1), default=None,
              help="Pick k per graph as ceil(nodes / N) instead of a fixed k.")
@click.option("--method", type=click.Choice(["metis", "contiguous"]), default="metis",
              show_default=True, help="METIS k-way (contiguous parts) or GST's node-id ranges.")
@click.option("--collection", type=click.Choice([k.value for k in KINDS]), default=None,
              help="Only graphs of this collection.")
@click.option("--graph", "graph_ids", multiple=True, help="Only this graph id. Repeatable.")
@handle_errors
def partition(data: str, segments: int | None, max_segment_nodes: int | None, method: str,
              collection: str | None, graph_ids: tuple[str, ...]) -> None:
    """Partition every graph of DATA (default data/) and store partitions/<method>-<k>/.

    \b
    Re-running the same command replaces the same rows and files.
    Examples:
      tgt partition data/ --segments 64
      tgt partition data/ --max-segment-nodes 1000 --method contiguous
    """
    from tpugraphs_tools.partition import partition_dataset, partition_name
    from tpugraphs_tools.store import Dataset

    if segments is not None and max_segment_nodes is not None:
        raise click.UsageError("give --segments or --max-segment-nodes, not both")
    if segments is None and max_segment_nodes is None:
        segments = 64
    dataset = Dataset.open(data)
    name = partition_name(method, segments, max_segment_nodes)
    with terminal.status("partitioning") as show:
        results = partition_dataset(dataset, method=method, segments=segments,
                                    max_segment_nodes=max_segment_nodes,
                                    graph_ids=list(graph_ids) or None, collection=collection,
                                    progress=show)
    if not results:
        terminal.print(f"no graphs to partition in {data}", style="yellow")
        return
    columns = ("graph_id", "nodes", "segments", "edge cut", "cut %", "balance", "seconds")
    table = terminal.table(f"{name} partitions in {data}", columns, right=columns[1:])
    for res in results:
        row = res.row
        pct = 100.0 * row["edge_cut"] / max(row["num_edges"], 1)
        table.add_row(row["graph_id"], str(row["num_nodes"]), str(row["num_segments"]),
                      str(row["edge_cut"]), f"{pct:.2f}", f"{row['balance']:.3f}",
                      f"{row['seconds']:.3f}")
    terminal.print(table)
    _print_reduced(results)
    terminal.success(f"{plural(len(results), 'graph')} → partitions/{name}/ (table partitions)")


def _print_reduced(results: list[PartitionResult], limit: int = 10) -> None:
    """Graphs that got fewer segments than asked, each with why (small graphs, mostly)."""
    reduced = [(r.row["graph_id"], r.reduced) for r in results if r.reduced]
    if not reduced:
        return
    terminal.note("fewer segments", f"{len(reduced)} of {plural(len(results), 'graph')} got "
                  "fewer segments than asked:")
    for graph_id, why in reduced[:limit]:
        terminal.print(f"  {graph_id}: {why}", highlight=False)
    if len(reduced) > limit:
        terminal.print(f"  … {len(reduced) - limit} more (num_segments per graph in the "
                       "partitions table)", highlight=False)
