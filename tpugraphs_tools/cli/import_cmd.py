"""``tgt import``: read an official TpuGraphs tree (or the real download) into a dataset."""

from __future__ import annotations

import click

from tpugraphs_tools.cli._common import DEFAULT_DATA, handle_errors, terminal


@click.command("import")
@click.argument("tree", type=click.Path(exists=True, file_okay=False))
@click.option("--out", default=DEFAULT_DATA, show_default=True, type=click.Path(file_okay=False),
              help="New dataset folder; it appears only when every file is in.")
@click.option("--backend", default=None,
              help="Backend recorded for the graphs [default: what a tgt export recorded in "
                   "tgt-provenance.json, else tpu (TpuGraphs was measured on TPUs)].")
@click.option("--batch-mb", type=click.IntRange(min=1), default=256, show_default=True,
              help="Arrays imported between commits (each commit adds one table part).")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0,
              help="Processes reading files (0: one per core). Results do not depend on it.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local",
              show_default=True, help="Where files are read: local processes (--jobs) or "
              "tasks on a Ray cluster (files on a filesystem every node sees).")
@click.option("--address", default=None, help="Ray cluster address (with --executor ray).")
@click.option("--overwrite", is_flag=True, help="Replace --out if it is not empty.")
@handle_errors
def import_(tree: str, out: str, backend: str | None, batch_mb: int, jobs: int,
            executor: str, address: str | None, overwrite: bool) -> None:
    """Read the official TpuGraphs tree TREE into a new tgt dataset.

    \b
    Every npz under npz/layout/{xla,nlp}/{default,random}/{split}/ and npz/tile/xla/{split}/
    (any prefix, e.g. the unpacked npz_all/ download).
    Program = file stem, split and search strategy from the path, source "tpugraphs",
    fingerprint = sha256 of the arrays; arrays are stored unchanged. A tree written by
    `tgt export` keeps its provenance (tgt-provenance.json: program, backend, device,
    config space, default config) for every file whose arrays are unchanged.
    Example:
      tgt import ~/tpugraphs/npz_all/ --out tpugraphs-data/
      tgt import tpugraphs/ --out data/ --overwrite
    """
    from tpugraphs_tools.parallel import default_jobs
    from tpugraphs_tools.publish import import_tpugraphs

    with terminal.progress("importing") as advance:
        result = import_tpugraphs(tree, out, backend=backend, overwrite=overwrite,
                                  batch_bytes=batch_mb << 20, jobs=jobs or default_jobs(),
                                  executor=executor, address=address,
                                  progress=advance)
    terminal.warnings(result.warnings)
    table = terminal.table(f"imported from {tree}", ("folder", "graphs"), right={"graphs"})
    for folder, count in sorted(result.folders.items()):
        table.add_row(folder, str(count))
    terminal.print(table)
    terminal.success(f"{result.graphs} graphs, {result.configs} configs → {out}")
