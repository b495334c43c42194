"""Collect on a Ray cluster: config chunks of every graph measured on the cluster's nodes.

The driver lowers and featurizes (cheap, deterministic), splits each graph's missing config
indices into chunks and submits one task per chunk; a task measures its chunk with the same
pipelined engine as a local run (default config first, so every chunk is timed against its own
default on its own node). Rows come back to the driver, which journals them as they arrive and
commits each finished graph atomically — the same resume guarantees as the local executor.

A chunk whose task is lost with its worker or node (a node killed or gone, a worker crashed or
killed for memory) is resubmitted by the driver, up to ``max_attempts`` times: Ray itself does
not retry (``max_retries=0``), so every loss is seen and reported. Only a task that returns
delivers rows, and the driver commits a graph once all its chunks returned: a lost chunk's
configs are measured once more elsewhere and stored once, never twice.

Tile items (``--collection tile``) are measured by the driver's own workers, journaled and
committed kernel by kernel as in a local run (``collect/tile/run.py``).

Runtimes are only comparable between identical nodes: use one node type per dataset.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tpugraphs_tools.collect.check import check_request
from tpugraphs_tools.collect.failures import failure_reason, no_empty_out, unmeasured_rows
from tpugraphs_tools.collect.graphs import CollectedGraph
from tpugraphs_tools.collect.journal import ConfigJournal
from tpugraphs_tools.collect.labels import EXTRA_STATUSES
from tpugraphs_tools.collect.layout import (
    collect_layout_configs,
    layout_result,
    next_control_index,
)
from tpugraphs_tools.collect.progress import ProgressTracker
from tpugraphs_tools.collect.rows import ConfigRow
from tpugraphs_tools.collect.run import (
    CollectItem,
    CollectRequest,
    CollectSummary,
    build_graph,
    commit_graph,
    keep_stored_names,
    log_folder,
    resumed_line,
    start_graph,
    tile_sources,
)
from tpugraphs_tools.collect.tile.run import collect_tiles
from tpugraphs_tools.configs import LayoutConfig, LayoutSpace, generate_configs, layout_space
from tpugraphs_tools.errors import CollectError
from tpugraphs_tools.errors import RayUnavailableError as RayUnavailableError
from tpugraphs_tools.format import Kind
from tpugraphs_tools.hlo import parse_hlo_text
from tpugraphs_tools.measure import (
    OK,
    MeasureOptions,
    Traits,
    WorkerError,
    log_workers_to,
    traits_of,
)
from tpugraphs_tools.parallel import ray_session
from tpugraphs_tools.store import Dataset, dataset_writer


@dataclass
class _Chunk:
    """One task's work: configs ``indices`` of a graph, and how many times it was submitted."""

    graph_id: str
    text: str
    options: MeasureOptions
    indices: list[int]
    attempt: int = 1

    def describe(self) -> str:
        return f"{self.graph_id}: configs {_ranges(self.indices)}"


@dataclass
class _Graph:
    """A graph whose chunks are out on the cluster; committed when ``open`` drops to 0."""

    collected: CollectedGraph
    journal: ConfigJournal
    rows: dict[int, ConfigRow]  # config index -> row (committed, journaled, returned)
    configs: list[LayoutConfig]
    space: LayoutSpace
    traits: Traits   # its engine's (every chunk is measured with the graph's options)
    open: int = 0


def measure_chunk(text: str, opts: MeasureOptions, indices: list[int]) -> list[ConfigRow]:
    """Runs on a Ray worker: measure configs ``indices`` (+ the default) of one graph."""
    module = parse_hlo_text(text, source="ray task")
    space = layout_space(module)
    configs = generate_configs(space, opts.configs, opts.strategy, opts.seed)
    chosen = [0, *[i for i in indices if i != 0]]
    try:
        result = collect_layout_configs(text, module, opts, configs=[configs[i] for i in chosen])
    except WorkerError as exc:  # the graph is still stored, with the reason (failures.py)
        reason = failure_reason(exc, module, opts.backend or "the default backend")
        return unmeasured_rows([configs[i].to_json(space) for i in indices], opts.strategy,
                               opts.seed, reason, indices)
    rows: list[ConfigRow] = []
    for local, row in enumerate(result.rows):
        if row["status"] in EXTRA_STATUSES:  # renumbered by the driver (next_control_index)
            dup = row.get("duplicate_of")
            rows.append({**row, "duplicate_of": chosen[dup] if dup is not None else None})
            continue
        if local == 0 and 0 not in indices:
            continue
        rows.append({**row, "config_index": chosen[local],
                     "duplicate_of": (chosen[dup] if (dup := row["duplicate_of"]) is not None
                                      else None)})
    return rows


def collect_with_ray(request: CollectRequest, address: str | None = None,
                     chunk_size: int = 16, num_cpus: float = 2, max_attempts: int = 3,
                     progress: Callable[[str], None] = lambda _m: None,
                     notice: Callable[[str], None] | None = None) -> CollectSummary:
    """Collect ``request`` on the Ray cluster at ``address`` (or the one already joined);
    each chunk of ``chunk_size`` configs is one task asking for ``num_cpus`` CPUs, submitted
    at most ``max_attempts`` times when its worker or node is lost. ``progress`` gets what is
    running; ``notice`` (default: ``progress``) the lost and resubmitted tasks, which a user
    should see even when the progress is not drawn."""
    check_request(request)  # before a cluster is joined or anything measured
    # the dataset's lock next: a second writer is refused before Ray starts
    with no_empty_out(request.out), dataset_writer(request.out), \
            log_workers_to(log_folder(request)), ray_session(address) as ray:
        remote = ray.remote(num_cpus=num_cpus, max_retries=0)(measure_chunk)
        started = time.monotonic()
        summary = _collect(ray, remote, request, chunk_size, max_attempts, progress,
                           notice or progress)
    summary.wall_seconds = time.monotonic() - started
    return summary


def _lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Ray's errors for a task lost with its worker or node (not raised by the task's code)."""
    errors = ray.exceptions
    return (errors.WorkerCrashedError, errors.NodeDiedError, errors.ObjectLostError,
            errors.OutOfMemoryError)


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _ranges(indices: list[int]) -> str:
    """``[0, 1, 2, 5]`` → ``"0-2, 5"``: a chunk's configs in a progress line."""
    parts: list[str] = []
    for i in sorted(indices):
        if parts and i == int(parts[-1].rsplit("-", 1)[-1]) + 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{i}"
        else:
            parts.append(str(i))
    return ", ".join(parts)


def _collect(ray: Any, remote: Any, request: CollectRequest, chunk_size: int,
             max_attempts: int, progress: Callable[[str], None],
             notice: Callable[[str], None]) -> CollectSummary:
    dataset = Dataset.open(request.out, create=True)
    dataset.check_parts()
    summary = CollectSummary(dataset=str(request.out))
    lost = _lost_errors(ray)
    pending: dict[Any, _Chunk] = {}  # Ray object ref -> the chunk its task measures

    def submit(chunk: _Chunk) -> None:
        pending[remote.remote(chunk.text, chunk.options, chunk.indices)] = chunk

    graphs: dict[str, _Graph] = {}
    for item in keep_stored_names(dataset, request, summary):
        if item.collection == Kind.TILE:
            progress(f"{item.label}: tile kernels, measured by this driver's workers")
            _collect_tiles_here(dataset, item, request.backend, summary,
                                request.keep_source_paths)
            continue
        collected = build_graph(item, request.backend, keep_source_paths=request.keep_source_paths)
        work = start_graph(dataset, collected, item.options, summary, request.retry_unmeasured)
        if work is None:
            continue
        layout, journal, done = work
        if done:
            summary.resumed[collected.graph_id] = resumed_line(done)
        layout = replace(layout, backend=request.backend)
        space = layout_space(collected.source.module)
        configs = generate_configs(space, layout.configs, layout.strategy, layout.seed)
        missing = [i for i in range(len(configs)) if i not in done]
        graph = graphs[collected.graph_id] = _Graph(collected, journal, done, configs, space,
                                                    traits_of(layout.engine))
        for start in range(0, len(missing), chunk_size):
            submit(_Chunk(collected.graph_id, collected.source.text, layout,
                          missing[start:start + chunk_size]))
            graph.open += 1
        progress(f"{collected.graph_id}: {len(missing)} configs in {graph.open} Ray tasks")
        if not missing:
            _commit(dataset, graphs.pop(collected.graph_id), summary)
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        chunk = pending.pop(ready[0])
        try:
            rows = ray.get(ready[0])
        except lost as exc:
            if chunk.attempt >= max_attempts:
                raise CollectError(
                    f"{chunk.describe()}: lost {chunk.attempt} times, giving up (the "
                    f"measured graphs are committed; rerun to continue): "
                    f"{_one_line(exc)}") from None
            chunk.attempt += 1
            notice(f"{chunk.describe()}: task lost ({_one_line(exc)}); resubmitted, "
                   f"attempt {chunk.attempt} of {max_attempts}")
            submit(chunk)
            continue
        graph_id = chunk.graph_id
        state = graphs[graph_id]
        summary.labels += sum(1 for row in rows if row["status"] == OK)
        for row in rows:
            if row["status"] in EXTRA_STATUSES:
                row["config_index"] = next_control_index(state.rows, len(state.configs))
            state.rows[row["config_index"]] = row
            state.journal.append(row)
        state.open -= 1
        if state.open == 0:
            _commit(dataset, graphs.pop(graph_id), summary)
    return summary


def _collect_tiles_here(dataset: Dataset, item: CollectItem, backend: str | None,
                        summary: CollectSummary, keep_source_paths: bool = False) -> None:
    """A tile item runs on the driver, journaled and committed kernel by kernel as a local
    run does (its kernels are small: one task each would mostly pay for its own start)."""
    tracker = ProgressTracker(lambda _event: None, [None])
    tracker.begin(0, item.label)
    collect_tiles(dataset, item, tile_sources(item, backend), backend, summary, tracker,
                  keep_source_paths)


def _commit(dataset: Dataset, state: _Graph, summary: CollectSummary) -> None:
    rows = [state.rows[i] for i in sorted(state.rows)]  # configs, then controls
    commit_graph(dataset, state.collected,
                 layout_result(rows, state.configs, state.space, state.traits),
                 state.journal, summary)
