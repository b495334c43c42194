"""``collect``: programs and HLO files → a dataset, resumable at any point.

Each item (a program with its arguments, or an HLO file) becomes one graph; its layout configs
are measured with rows journaled as they arrive (``journal.py``), then the graph, its npz and
its config rows are committed atomically. Re-running the same request skips committed graphs
and continues journaled ones: nothing is measured twice and nothing measured is lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from tpugraphs_tools.collect.check import check_request
from tpugraphs_tools.collect.failures import (
    no_empty_out,
    retried,
    store_unmeasured,
    unmeasured_reason,
)
from tpugraphs_tools.collect.graphs import (
    CollectedGraph,
    collect_hlo_file,
    collect_source,
    lower_program,
    write_graphs,
)
from tpugraphs_tools.collect.journal import ConfigJournal, JournalHeader
from tpugraphs_tools.collect.layout import LayoutResult, collect_layout_configs, journal_header
from tpugraphs_tools.collect.program_names import names_to_keep, program_args_of
from tpugraphs_tools.collect.progress import ProgressEvent, ProgressTracker, Stage
from tpugraphs_tools.collect.request import CollectItem, CollectRequest, resolve_args
from tpugraphs_tools.collect.rows import ConfigRow, config_row, graph_row_of
from tpugraphs_tools.collect.summary import CollectSummary, failure_counts
from tpugraphs_tools.collect.tile.run import collect_tiles
from tpugraphs_tools.compiler import compile_hlo_source
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import Kind
from tpugraphs_tools.hlo import HloSource, from_compiled, from_file
from tpugraphs_tools.measure import (
    OK,
    MeasureOptions,
    WorkerError,
    log_workers_to,
)
from tpugraphs_tools.store import LOG_DIR, Dataset, dataset_writer

Progress = Callable[[ProgressEvent], None]


def log_folder(request: CollectRequest) -> Path | None:
    """Where the request's worker output goes (None: the terminal)."""
    return None if request.verbose else Path(request.out) / LOG_DIR


def build_graph(item: CollectItem, backend: str | None,
                stage: Callable[[Stage], None] = lambda _s: None,
                keep_source_paths: bool = False) -> CollectedGraph:
    """Lower/read and featurize one item (cheap and deterministic: done again on resume)."""
    if item.hlo is not None:
        stage("featurizing")
        collected = collect_hlo_file(item.hlo, backend=backend)
    else:
        args = resolve_args(item.program_name, item.program_args)
        _, src = lower_program(item.program_name, args)
        stage("featurizing")
        collected = collect_source(src, program=item.stored_as or src.origin,
                                   program_args=program_args_of(item.program_name, args),
                                   backend=backend)
    return replace(collected, keep_source_paths=keep_source_paths)


def committed_rows(dataset: Dataset, graph_id: str, header: JournalHeader
                    ) -> dict[int, ConfigRow] | None:
    """Config rows already committed for ``graph_id``; None if the graph is not committed."""
    graphs = dataset.graphs()
    if graphs.height == 0 or graph_id not in set(graphs["graph_id"].to_list()):
        return None
    configs = dataset.configs_of(graph_id)
    rows = {int(r["config_index"]): config_row(r, where=f"{dataset.root}: configs of {graph_id}")
            for r in configs.to_dicts()}
    if rows:
        first = rows[min(rows)]
        if (first["strategy"], first["seed"]) != (header["strategy"], header["seed"]):
            raise DatasetError(
                f"{dataset.root}: graph {graph_id} already holds configs of strategy "
                f"{first['strategy']!r} seed {first['seed']}; collect into another --out "
                "to use different ones")
    return rows


def tile_sources(item: CollectItem, backend: str | None
                 ) -> tuple[HloSource, Callable[[], HloSource], str, dict[str, Any]]:
    """(un-optimized module, its optimized module on demand, program, args) of a tile item;
    the program is lowered once and compiled only if its kernels are still to be measured."""
    if item.hlo is not None:
        src = from_file(item.hlo)
        return (src, lambda: compile_hlo_source(src, backend), src.module.name,
                {"file": item.hlo})
    args = resolve_args(item.program_name, item.program_args)
    lowered, src = lower_program(item.program_name, args)
    return (src, lambda: from_compiled(lowered.compile(), origin=src.origin),
            item.stored_as or src.origin, program_args_of(item.program_name, args))


def start_graph(dataset: Dataset, collected: CollectedGraph, layout: MeasureOptions | None,
                summary: CollectSummary, retry_unmeasured: bool = False
                ) -> tuple[MeasureOptions, ConfigJournal, dict[int, ConfigRow]] | None:
    """Decide what is left to measure for one graph (shared by every executor).

    Graph-only items are committed here; complete graphs are skipped (a graph stored
    unmeasured is measured again when :func:`failures.retried` says). Otherwise returns the
    options, the graph's journal and the rows already measured (committed + journaled).
    """
    if layout is None or layout.configs <= 0:
        write_graphs(dataset, [collected])
        summary.graphs.append(collected.row)
        return None
    header = journal_header(layout)
    committed = committed_rows(dataset, collected.graph_id, header)
    if committed is not None and sum(1 for i in committed if i < layout.configs) \
            >= layout.configs:  # control/repeat rows (indices past the configs) do not count
        reason = unmeasured_reason(committed.values())
        if reason is not None and retried(reason, retry_unmeasured):
            committed = None  # measured from scratch; the commit replaces the stored rows
        else:
            if reason is not None:  # a rerun still reports the graph as unmeasured
                summary.unmeasured[collected.graph_id] = reason
            summary.skipped.append(collected.graph_id)
            summary.graphs.append(graph_row_of(dataset.graph_row(collected.graph_id),
                                               f"{dataset.root}: graphs.parquet"))
            return None
    journal = ConfigJournal(dataset.root, collected.graph_id, header)
    return layout, journal, {**(committed or {}), **journal.load()}


def resumed_line(done: Mapping[int, ConfigRow]) -> str:
    """What a rerun takes over for one layout graph (printed once by ``tgt collect``)."""
    return f"{len(done)} config row(s) measured by an earlier run kept, not measured again"


def commit_graph(dataset: Dataset, collected: CollectedGraph, result: LayoutResult,
                 journal: ConfigJournal, summary: CollectSummary) -> None:
    """Commit one measured layout graph atomically, drop its journal, add it to the summary
    (every executor ends a graph here: local and Ray)."""
    collected = replace(collected, config_arrays=result.arrays, row={
        **collected.row, "num_configs": int(result.arrays["config_runtime"].shape[0])})
    write_graphs(dataset, [collected], configs={collected.graph_id: result.rows},
                 journal=journal.path)
    journal.remove()  # its folder, when no other graph's journal is left
    summary.failures.update(failure_counts(result.rows))
    reason = unmeasured_reason(result.rows)
    if reason is not None:  # every row default_failed (a Ray chunk that could not run)
        summary.unmeasured[collected.graph_id] = reason
    summary.configs[collected.graph_id] = result.summary
    summary.graphs.append(collected.row)


def _planned(item: CollectItem) -> int | None:
    """An item's config total before it starts: a layout item's requested configs (its space
    may hold fewer); a tile item's depends on its kernels, unknown until they are found."""
    if item.collection == Kind.TILE:
        return None
    return item.options.configs if item.options is not None and item.options.configs > 0 else 0


def collect(request: CollectRequest, progress: Progress = lambda _event: None
            ) -> CollectSummary:
    """Collect ``request`` into its dataset; ``progress`` sees a :class:`ProgressEvent` at
    every stage and config result (collect/progress.py)."""
    started = time.monotonic()
    check_request(request)  # every input resolved before anything is lowered or written
    with no_empty_out(request.out), dataset_writer(request.out), \
            log_workers_to(log_folder(request)):
        summary = _collect(request, ProgressTracker(progress, [_planned(i) for i in
                                                               request.items]))
    summary.wall_seconds = time.monotonic() - started
    return summary


def keep_stored_names(dataset: Dataset, request: CollectRequest,
                      summary: CollectSummary) -> list[CollectItem]:
    """The request's items, each user program the dataset already names by path (an earlier
    tgt) set to keep that name (collect/program_names.py), with a line saying so."""
    kept = names_to_keep(dataset, [i.program for i in request.items if i.program])
    for spec, name in kept.items():
        summary.names[spec] = (f"stored as {name!r}, the name this dataset already gives "
                               "it (an earlier tgt named user programs by path), so its "
                               "graphs stay one program")
    return [replace(i, stored_as=kept[i.program]) if i.program in kept else i
            for i in request.items]


def _collect(request: CollectRequest, tracker: ProgressTracker) -> CollectSummary:
    dataset = Dataset.open(request.out, create=True)
    dataset.check_parts()
    summary = CollectSummary(dataset=str(Path(request.out)))
    for index, item in enumerate(keep_stored_names(dataset, request, summary)):
        tracker.begin(index, item.label)
        if item.collection == Kind.TILE:
            collect_tiles(dataset, item, tile_sources(item, request.backend),
                          request.backend, summary, tracker, request.keep_source_paths)
            tracker.end()
            continue
        collected = build_graph(item, request.backend, tracker.stage, request.keep_source_paths)
        work = start_graph(dataset, collected, item.options, summary, request.retry_unmeasured)
        if work is None:
            tracker.end()
            continue
        layout, journal, done = work
        if done:
            summary.resumed[collected.graph_id] = resumed_line(done)
        tracker.resumed(done.values())
        tracker.stage("compiling", "the default config")

        def on_row(row: ConfigRow, journal: ConfigJournal = journal) -> None:
            journal.append(row)
            tracker.row(row)

        try:
            result = collect_layout_configs(
                collected.source.text, collected.source.module,
                replace(layout, backend=request.backend), done=done, on_row=on_row,
                on_batch=tracker.batch)
        except WorkerError as exc:
            tracker.stage("storing")
            store_unmeasured(dataset, collected, layout, journal, summary, exc)
            tracker.end()
            continue
        tracker.stage("storing")
        commit_graph(dataset, collected, result, journal, summary)
        summary.labels += sum(1 for r in result.rows
                              if r["status"] == OK and r["config_index"] not in done)
        tracker.end()
    return summary
