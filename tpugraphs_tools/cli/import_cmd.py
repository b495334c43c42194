"""``tgt import``: read an official TpuGraphs tree, or the official raw tuning protos, into a
dataset."""

from __future__ import annotations

from pathlib import Path

import click

from tpugraphs_tools.cli._common import DEFAULT_DATA, handle_errors, plural, terminal
from tpugraphs_tools.cli._options import check_executor, executor_options


@click.command("import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True),
                metavar="TREE | FILE...")
@click.option("--tuning-data", is_flag=True,
              help="FILE... are official raw tuning protos (tpu_graphs/proto/tuning.proto: "
                   "a ModuleTuningData or a TuningData each; a folder: its *.pb), not an npz "
                   "tree.")
@click.option("--out", default=DEFAULT_DATA, show_default=True, type=click.Path(file_okay=False),
              help="New dataset folder; it appears only when every file is in.")
@click.option("--backend", default=None,
              help="Backend recorded for the graphs [default: what a tgt export recorded in "
                   "tgt-provenance.json, else tpu (TpuGraphs was measured on TPUs)].")
@click.option("--batch-mb", type=click.IntRange(min=1), default=256, show_default=True,
              help="Arrays imported between commits (each commit adds one table part).")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0,
              help="Processes reading files (0: one per core); with --tuning-data, modules "
                   "read at once. Results do not depend on it.")
@executor_options("Where files are read: local processes (--jobs) or tasks on a Ray cluster "
                  "(files on a filesystem every node sees).")
@click.option("--overwrite", is_flag=True, help="Replace --out if it is not empty.")
@handle_errors
def import_(sources: tuple[str, ...], tuning_data: bool, out: str, backend: str | None,
            batch_mb: int, jobs: int, executor: str, address: str | None,
            overwrite: bool) -> None:
    """Read the official TpuGraphs tree TREE (or, with --tuning-data, the official raw tuning
    protos FILE...) into a new tgt dataset.

    \b
    tgt import TREE: every npz under npz/layout/{xla,nlp}/{default,random}/{split}/ and
    npz/tile/xla/{split}/ (any prefix, e.g. the unpacked npz_all/ download).
    Program = file stem, split and search strategy from the path, source "tpugraphs",
    fingerprint = sha256 of the arrays; arrays are stored unchanged. A tree written by
    `tgt export` keeps its provenance (tgt-provenance.json: program, backend, device,
    config space, default config) for every file whose arrays are unchanged.
    \b
    tgt import --tuning-data FILE...: one graph per ModuleTuningData, featurized by tgt from
    its HloModuleProto; layout runs become layout configs, tile runs tile configs; runtime =
    ExecutionProfile.compute_time_ns, normalizer = the default run's; error runs are kept as
    runtime_error rows. A damaged file is refused before anything is written.
    \b
    Examples:
      tgt import ~/tpugraphs/npz_all/ --out tpugraphs-data/
      tgt import tpugraphs/ --out data/ --overwrite
      tgt import --tuning-data module_tuning_data_layout.pb op_tuning_data.pb --out tpu-data/
      tgt import --tuning-data raw-tuning/ --out tpu-data/ -j 8
    """
    from tpugraphs_tools.parallel import default_jobs

    check_executor(executor, address)
    if tuning_data:
        if executor != "local":
            raise click.UsageError("--tuning-data reads modules locally (--jobs); "
                                   "--executor ray is for npz trees")
        _import_tuning(sources, out, backend, jobs or default_jobs(), batch_mb << 20, overwrite)
        return
    if len(sources) != 1 or not Path(sources[0]).is_dir():
        raise click.UsageError("give one TREE folder (or pass --tuning-data for proto files)")
    from tpugraphs_tools.publish import import_tpugraphs

    tree = sources[0]
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
    terminal.success(f"{plural(result.graphs, 'graph')}, {result.counts.describe()} → {out}")


def _import_tuning(files: tuple[str, ...], out: str, backend: str | None, jobs: int,
                   batch_bytes: int, overwrite: bool) -> None:
    from tpugraphs_tools.publish import import_tuning_data

    with terminal.progress("importing modules") as advance:
        result = import_tuning_data(files, out, backend=backend or "tpu", overwrite=overwrite,
                                    jobs=jobs, batch_bytes=batch_bytes, progress=advance)
    terminal.warnings(result.warnings)
    table = terminal.table("imported tuning data",
                           ("file", "message", "modules", "graphs", "timed", "error rows"),
                           right={"modules", "graphs", "timed", "error rows"})
    for path, s in result.files.items():
        table.add_row(path, s.message, str(s.modules), str(s.graphs), str(s.timed),
                      str(s.failed))
    terminal.print(table)
    for graph_id, (matched, total) in result.config_nodes.items():
        terminal.note("config nodes", f"{graph_id}: node_config_ids match config_index_to_node "
                                      f"({matched} of {total})")
    terminal.success(f"{plural(result.graphs, 'graph')}, {result.counts.describe()}; "
                     f"{plural(result.failed, 'error row')} → {out}")
