"""``tgt collect --collection tile``: kernels committed one by one, rows journaled as measured.

A tile collection is the longest one tgt runs (every kernel × every config), so a kill must
not undo it. Each kernel's rows go to its own journal (``journal.py``) as they are measured,
and the kernel (graph, npz, config rows) is committed as soon as it is done. The program's
kernel list and the kernels it did not store (and why) are kept in
``<dataset>/.tgt-work/<parent graph id>.kernels.json`` (``record.py``) until every kernel is
settled. Rerunning the same command passes over committed and settled kernels, continues a
journaled one from its rows and measures nothing twice; ``tgt collect --status`` reads the
same files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tpugraphs_tools.collect.failures import failure_reason
from tpugraphs_tools.collect.journal import JournalHeader
from tpugraphs_tools.collect.progress import ProgressTracker
from tpugraphs_tools.collect.request import CollectItem
from tpugraphs_tools.collect.rows import ConfigRow, config_row, graph_row_of
from tpugraphs_tools.collect.summary import CollectSummary
from tpugraphs_tools.collect.tile.options import TileOptions
from tpugraphs_tools.collect.tile.program import kernel_ids, measure_kernels
from tpugraphs_tools.collect.tile.record import (
    ProgramRecord,
    program_path,
    read_program,
    tile_header,
    write_program,
)
from tpugraphs_tools.collect.tile.stores import DatasetStore, KernelsDone, committed_kernels
from tpugraphs_tools.collect.tile.summary import summarize
from tpugraphs_tools.configs import default_space
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.hlo import Extraction, HloSource, Kernel, extract_kernels, fingerprint
from tpugraphs_tools.measure import OK, Traits, platform_of, traits_of
from tpugraphs_tools.store import Dataset, make_graph_id

Sources = tuple[HloSource, Callable[[], HloSource], str, dict[str, Any]]


def collect_tiles(dataset: Dataset, item: CollectItem, sources: Sources, backend: str | None,
                  summary: CollectSummary, tracker: ProgressTracker,
                  keep_source_paths: bool = False) -> None:
    """Every kernel of one program's optimized module, each committed when done (a rerun
    passes over a program with kernels in the dataset and no record left in .tgt-work/).
    ``sources``: the item's (un-optimized module, optimized on demand, program, args)."""
    unoptimized, optimize, program, args = sources
    parent_id = make_graph_id(program, fingerprint(unoptimized.module))
    path = program_path(dataset.root, parent_id)
    done = committed_kernels(dataset, parent_id)
    if done.height and not path.exists():  # every kernel settled by an earlier run
        where = f"{dataset.root}: graphs.parquet"
        summary.skipped.extend(done["graph_id"].to_list())
        summary.graphs.extend(graph_row_of(r, where) for r in done.to_dicts())
        return
    opts = TileOptions(replace(item.options or TileOptions().measure, backend=backend))
    tracker.stage("compiling", "the program, for its kernels")
    try:
        optimized = optimize()
    except Exception as exc:  # XLA's own errors (no kernels without the optimized module)
        summary.unmeasured[item.label] = failure_reason(
            exc, unoptimized.module, backend or "the default backend", what="program")
        return
    space = opts.space or default_space(platform_of(backend).name, seed=opts.measure.seed)
    extraction = extract_kernels(optimized.module, opts.measure.max_kernels,
                                 source=optimized.origin)
    record = _open_record(path, tile_header(opts.measure), program,
                          extraction.kernels, kernel_ids(extraction.kernels, program))
    store = DatasetStore(dataset, path, record, set(done["graph_id"].to_list())
                         if done.height else set(), keep_source_paths)
    per_kernel = opts.configs_per_kernel
    result = measure_kernels(
        optimized, extraction.kernels, space, opts, store, program=program,
        program_args=args, parent_graph_id=parent_id,
        on_kernel=lambda i, n, name: tracker.kernel(i, n, per_kernel, name),
        on_row=tracker.tile_row, on_resumed=tracker.tile_resumed)
    store.finish()
    tracker.stage("storing")
    _summarize_program(summary, item.label, dataset, parent_id, extraction, space.name,
                       traits_of(opts.measure.engine), store, result)


def _open_record(path: Path, header: JournalHeader, program: str, kernels: Sequence[Kernel],
                 ids: Sequence[str]) -> ProgramRecord:
    """The program record an interrupted run left (refused when its arguments differ), or a
    new one naming every kernel, written before the first kernel is measured."""
    if path.exists():
        record = read_program(path)
        if record["header"] != header:
            raise DatasetError(
                f"{path}: a partial tile collection with different arguments exists "
                f"({record['header']}); rerun with the same arguments, or delete the file "
                "and the program's kernel journals to start over")
        return record
    record = {"header": header, "program": program, "skipped": {},
              "kernels": [{"graph_id": g, "name": k.name}
                          for g, k in zip(ids, kernels, strict=True)]}
    write_program(path, record)
    return record


def _summarize_program(summary: CollectSummary, label: str, dataset: Dataset, parent_id: str,
                       extraction: Extraction, space: str, traits: Traits,
                       store: DatasetStore, result: KernelsDone) -> None:
    """Add the program's kernels to ``summary``: those an earlier run committed (read back
    from the dataset) and this run's, summarized together."""
    where = f"{dataset.root}: graphs.parquet"
    earlier = [r for r in committed_kernels(dataset, parent_id).to_dicts()
               if r["graph_id"] in set(result.resumed)]
    kernels: list[tuple[Mapping[str, Any], list[ConfigRow]]] = [
        (row, [config_row(c, where=f"{dataset.root}: configs of {row['graph_id']}")
               for c in dataset.configs_of(row["graph_id"]).to_dicts()])
        for row in earlier]
    kernels += [(g.row, rows) for g, rows in result.stored]
    summary.skipped.extend(result.resumed)
    summary.graphs.extend(graph_row_of(r, where) for r in earlier)
    summary.graphs.extend(g.row for g, _ in result.stored)
    summary.labels += sum(1 for g, rows in result.stored for r in rows
                          if r["status"] == OK) - sum(store.resumed_ok.get(g.graph_id, 0)
                                                      for g, _ in result.stored)
    tile = summarize(kernels, {**extraction.skipped, **result.skipped}, space,
                     traits, result.restarts, result.tried)
    summary.tiles[label] = replace(tile, instances=result.instances,
                                   left_out=extraction.left_out)
    summary.failures.update(store.failures)
    if result.resumed or store.continued:
        summary.resumed[label] = (
            f"{len(result.resumed)} kernel(s) committed by an earlier run passed over, "
            f"{len(store.continued)} continued from {sum(store.continued.values())} "
            f"journaled row(s), {len(extraction.kernels) - len(result.resumed)} measured now")
