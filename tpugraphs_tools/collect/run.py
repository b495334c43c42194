"""``collect``: programs and HLO files → a dataset (graphs now, configs via the collections)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tpugraphs_tools.collect.graphs import (
    CollectedGraph,
    collect_hlo_file,
    collect_source,
    lower_program,
    write_graphs,
)
from tpugraphs_tools.collect.layout import LayoutOptions, collect_layout_configs
from tpugraphs_tools.store import Dataset

Progress = Callable[[str], None]


@dataclass
class CollectRequest:
    programs: list[str] = field(default_factory=list)
    hlo_files: list[str] = field(default_factory=list)
    out: str = "data/"
    program_args: Any = None            # ProgramArgs
    backend: str | None = None
    layout: LayoutOptions | None = None  # None or configs == 0: graphs only


@dataclass
class CollectSummary:
    dataset: str
    graphs: list[dict[str, Any]] = field(default_factory=list)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # graph_id -> summary


def collect(request: CollectRequest, progress: Progress = lambda _msg: None) -> CollectSummary:
    """Lower/read each input, featurize it and store it; one atomic commit per graph."""
    dataset = Dataset.open(request.out, create=True)
    summary = CollectSummary(dataset=str(Path(request.out)))
    items: list[tuple[str, Callable[[], CollectedGraph]]] = []
    for name in request.programs:
        items.append((name, lambda name=name: _from_program(name, request)))
    for path in request.hlo_files:
        items.append((path, lambda path=path: collect_hlo_file(path, backend=request.backend)))
    for label, make in items:
        progress(f"lowering + featurizing {label}")
        collected = make()
        rows: list[dict[str, Any]] = []
        if request.layout is not None and request.layout.configs > 0:
            result = collect_layout_configs(
                collected.source.text, collected.source.module,
                replace(request.layout, backend=request.backend),
                progress=lambda i, n, label=label: progress(f"{label}: config {i}/{n}"))
            collected.config_arrays = result.arrays
            collected.row["num_configs"] = int(result.arrays["config_runtime"].shape[0])
            rows = result.rows
            summary.configs[collected.graph_id] = result.summary
        write_graphs(dataset, [collected], configs={collected.graph_id: rows})
        summary.graphs.append(collected.row)
    return summary


def resolve_args(name: str, requested: Any) -> Any:
    """Fill the preset's image_size/seq_len so every stored graph has explicit arguments."""
    from tpugraphs_tools.programs import ProgramArgs, default_args, get_program

    requested = requested or ProgramArgs()
    overrides = {k: v for k, v in requested.as_dict().items() if v is not None and k != "preset"}
    return default_args(get_program(name), requested.preset, **overrides)


def _from_program(name: str, request: CollectRequest) -> CollectedGraph:
    args = resolve_args(name, request.program_args)
    _, src = lower_program(name, args)
    return collect_source(src, program=src.origin, program_args=args.as_dict(),
                          backend=request.backend)
