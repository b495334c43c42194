"""``collect``: programs and HLO files → a dataset, resumable at any point.

Each item (a program with its arguments, or an HLO file) becomes one graph; its layout configs
are measured with rows journaled as they arrive (``journal.py``), then the graph, its npz and
its config rows are committed atomically. Re-running the same request skips committed graphs
and continues journaled ones: nothing is measured twice and nothing measured is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from tpugraphs_tools.collect.graphs import (
    CollectedGraph,
    collect_hlo_file,
    collect_source,
    lower_program,
    write_graphs,
)
from tpugraphs_tools.collect.journal import ConfigJournal
from tpugraphs_tools.collect.layout import LayoutOptions, collect_layout_configs
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.store import Dataset

Progress = Callable[[str], None]


@dataclass
class CollectItem:
    """One graph to collect: ``program`` (zoo or ``module:fn``) or ``hlo`` (a file path)."""

    program: str | None = None
    hlo: str | None = None
    program_args: Any = None             # ProgramArgs (None fields: the preset's defaults)
    layout: LayoutOptions | None = None  # None or configs == 0: graph only

    @property
    def label(self) -> str:
        return self.program or self.hlo or "?"


@dataclass
class CollectRequest:
    items: list[CollectItem] = field(default_factory=list)
    out: str = "data/"
    backend: str | None = None


@dataclass
class CollectSummary:
    dataset: str
    graphs: list[dict[str, Any]] = field(default_factory=list)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # graph_id -> summary
    skipped: list[str] = field(default_factory=list)                  # already complete


def resolve_args(name: str, requested: Any) -> Any:
    """Fill the preset's image_size/seq_len so every stored graph has explicit arguments."""
    from tpugraphs_tools.programs import ProgramArgs, default_args, get_program

    requested = requested or ProgramArgs()
    overrides = {k: v for k, v in requested.as_dict().items() if v is not None and k != "preset"}
    return default_args(get_program(name), requested.preset, **overrides)


def build_graph(item: CollectItem, backend: str | None) -> CollectedGraph:
    """Lower/read and featurize one item (cheap and deterministic: done again on resume)."""
    if item.hlo is not None:
        return collect_hlo_file(item.hlo, backend=backend)
    args = resolve_args(item.program, item.program_args)
    _, src = lower_program(item.program, args)
    return collect_source(src, program=src.origin, program_args=args.as_dict(), backend=backend)


def committed_rows(dataset: Dataset, graph_id: str, header: dict[str, Any]
                    ) -> dict[int, dict[str, Any]] | None:
    """Config rows already committed for ``graph_id``; None if the graph is not committed."""
    graphs = dataset.graphs()
    if graphs.height == 0 or graph_id not in set(graphs["graph_id"].to_list()):
        return None
    configs = dataset.configs().filter(pl.col("graph_id") == graph_id)
    rows = {int(r["config_index"]): r for r in configs.to_dicts()}
    if rows:
        first = rows[min(rows)]
        if (first["strategy"], first["seed"]) != (header["strategy"], header["seed"]):
            raise DatasetError(
                f"{dataset.root}: graph {graph_id} already holds configs of strategy "
                f"{first['strategy']!r} seed {first['seed']}; collect into another --out "
                "to use different ones")
    return rows


def collect(request: CollectRequest, progress: Progress = lambda _msg: None) -> CollectSummary:
    dataset = Dataset.open(request.out, create=True)
    summary = CollectSummary(dataset=str(Path(request.out)))
    for item in request.items:
        progress(f"lowering + featurizing {item.label}")
        collected = build_graph(item, request.backend)
        layout = item.layout
        if layout is None or layout.configs <= 0:
            write_graphs(dataset, [collected])
            summary.graphs.append(collected.row)
            continue
        header = layout.journal_header()
        committed = committed_rows(dataset, collected.graph_id, header)
        if committed is not None and len(committed) >= layout.configs:
            summary.skipped.append(collected.graph_id)
            summary.graphs.append(dataset.graph_row(collected.graph_id))
            continue
        journal = ConfigJournal(dataset.root, collected.graph_id, header)
        done = {**(committed or {}), **journal.load()}
        result = collect_layout_configs(
            collected.source.text, collected.source.module,
            replace(layout, backend=request.backend), done=done, on_row=journal.append,
            progress=lambda i, n, label=item.label: progress(f"{label}: config {i}/{n}"))
        collected.config_arrays = result.arrays
        collected.row["num_configs"] = int(result.arrays["config_runtime"].shape[0])
        write_graphs(dataset, [collected], configs={collected.graph_id: result.rows})
        journal.remove()
        summary.configs[collected.graph_id] = result.summary
        summary.graphs.append(collected.row)
    return summary
