"""Tile collection: kernels of an optimized module × per-kernel configs × measured runtimes.

Every kernel (fusion or heavy op) of the optimized entry becomes its own graph
(``hlo/kernels.py``), linked to its parent by ``parent_graph_id``/``parent_instruction``.
This module walks the kernels, has each measured (``kernel.py``: the default
config first, then the space's candidates, each timed with the default in the same window),
builds its graph and hands it to a store (``stores.py``). How labels,
``config_runtime`` and ``config_runtime_normalizers`` follow from the timings is in
``labels.py`` and docs/tile-collection.md. The kernels of one program share their
worker processes (``measure/measurer.py``): each kernel hands them its own default.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tpugraphs_tools.collect.graphs import CollectedGraph, graph_row
from tpugraphs_tools.collect.rows import ConfigRow, GraphRow
from tpugraphs_tools.collect.summary import TileSummary
from tpugraphs_tools.collect.tile.kernel import KernelRun, Progress, measure_kernel
from tpugraphs_tools.collect.tile.labels import kernel_arrays
from tpugraphs_tools.collect.tile.options import TileOptions
from tpugraphs_tools.collect.tile.stores import KernelsDone, KernelStore, MemoryStore
from tpugraphs_tools.collect.tile.summary import summarize
from tpugraphs_tools.configs import KernelConfigSpace, default_space
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import HloSource, Kernel, extract_kernels
from tpugraphs_tools.measure import (
    OK,
    Platform,
    SharedWorkers,
    WorkerError,
    platform_of,
    traits_of,
)
from tpugraphs_tools.store import make_graph_id


@dataclass
class TileResult:
    graphs: list[tuple[CollectedGraph, list[ConfigRow]]]
    summary: TileSummary


def tile_graph_id(program: str, kernel_fingerprint: str) -> str:
    """Kernel ids never collide with whole-program ids of the same program."""
    return make_graph_id(f"{program}.tile", kernel_fingerprint)


def kernel_ids(kernels: Sequence[Kernel], program: str) -> list[str]:
    return [tile_graph_id(program, k.fingerprint) for k in kernels]


def measure_kernels(compiled_source: HloSource, kernels: Sequence[Kernel],
                    space: KernelConfigSpace, opts: TileOptions, store: KernelStore, *,
                    program: str, program_args: dict[str, Any], parent_graph_id: str | None,
                    progress: Progress = lambda _m: None,
                    on_kernel: Callable[[int, int, str], None] = lambda _i, _n, _name: None,
                    on_row: Callable[[ConfigRow], None] = lambda _r: None,
                    on_resumed: Callable[[list[ConfigRow]], None] = lambda _r: None
                    ) -> KernelsDone:
    """Measure, build and hand ``store`` each kernel as soon as it is done (kernels the store
    already settled are passed over; a kernel it holds rows of continues from them)."""
    platform = platform_of(opts.measure.backend)
    out = KernelsDone()
    with SharedWorkers(reuse=opts.share_workers) as workers:
        for i, (kernel, graph_id) in enumerate(zip(kernels, kernel_ids(kernels, program),
                                                   strict=True), start=1):
            progress(f"kernel {i}/{len(kernels)}: {kernel.name}")
            on_kernel(i, len(kernels), kernel.name)
            if store.stored(graph_id):
                out.resumed.append(graph_id)
                continue
            if (why := store.skipped(kernel.name)) is not None:
                out.skipped[kernel.name] = why
                continue
            configs = space.configs(kernel.module)
            if len(configs) < 2:
                kind = f"{kernel.opcode} ({kernel.kind})" if kernel.kind else kernel.opcode
                why = (f"no {space.name} choice applies: {len(configs) - 1} non-default "
                       f"config(s) for a {kind} kernel on this backend")
            else:
                done = store.measured(graph_id)
                on_resumed(done)

                def measured(row: ConfigRow, graph_id: str = graph_id) -> None:
                    store.row(graph_id, row)
                    on_row(row)

                try:
                    run = measure_kernel(kernel, space, opts, configs, progress, measured,
                                         workers, done)
                except (WorkerError, ConfigError) as exc:
                    why = f"default config failed: {exc}"
                else:
                    out.restarts += run.restarts
                    out.tried.update(r["status"] for r in run.rows)
                    built = _kernel_graph(compiled_source, kernel, run, space.name, opts,
                                          program=program, program_args=program_args,
                                          parent_graph_id=parent_graph_id, platform=platform)
                    if isinstance(built, tuple):
                        store.store(*built)
                        out.stored.append(built)
                        if len(kernel.instances) > 1:
                            out.instances[graph_id] = kernel.instances
                        continue
                    why = built
            out.skipped[kernel.name] = why
            store.skip(kernel.name, why)
    return out


def _kernel_graph(compiled_source: HloSource, kernel: Kernel, run: KernelRun, space: str,
                  opts: TileOptions, *, program: str, program_args: dict[str, Any],
                  parent_graph_id: str | None, platform: Platform
                  ) -> tuple[CollectedGraph, list[ConfigRow]] | str:
    """The kernel's graph and config rows, or why it is not stored (too few distinct ok
    configs)."""
    distinct = sum(1 for r in run.rows if r["status"] == OK)
    if distinct < opts.min_distinct:
        statuses = dict(Counter(r["status"] for r in run.rows))
        return (f"no {space} choice changed it: {distinct} distinct config(s) after "
                f"{len(run.rows)} tried {statuses}")
    origin = f"{compiled_source.origin}:{kernel.name}"
    src = HloSource(kernel.module, kernel.text, None, compiled_source.kind, "optimized", origin)
    graph = featurize(kernel.module)
    rows, arrays = kernel_arrays([*run.rows, *run.extras], run.feats,
                                 traits_of(opts.measure.engine))
    row: GraphRow = {
        **graph_row(src, graph, program=program, program_args=program_args,
                    collection="tile", backend=platform.name,
                    device_kind=platform.device_kind,
                    config_space=space),
        "graph_id": tile_graph_id(program, kernel.fingerprint),
        "parent_graph_id": parent_graph_id, "parent_instruction": kernel.name,
        "num_configurable": 0, "num_configs": int(arrays["config_runtime"].shape[0])}
    return CollectedGraph(src, graph, row, arrays), rows


def collect_tile(compiled_source: HloSource, *, program: str, program_args: dict[str, Any],
                 parent_graph_id: str | None, opts: TileOptions,
                 progress: Progress = lambda _m: None,
                 on_kernel: Callable[[int, int, str], None] = lambda _i, _n, _name: None,
                 on_row: Callable[[ConfigRow], None] = lambda _r: None) -> TileResult:
    """Extract, configure and measure every kernel of an optimized module, in memory (the
    library entry point; ``tgt collect --collection tile`` commits kernel by kernel:
    ``run.py``)."""
    space = opts.space or default_space(platform_of(opts.measure.backend).name,
                                        seed=opts.measure.seed)
    extraction = extract_kernels(compiled_source.module, opts.measure.max_kernels,
                                 source=compiled_source.origin)
    store = MemoryStore()
    done = measure_kernels(compiled_source, extraction.kernels, space, opts, store,
                           program=program, program_args=program_args,
                           parent_graph_id=parent_graph_id, progress=progress,
                           on_kernel=on_kernel, on_row=on_row)
    summary = summarize([(g.row, rows) for g, rows in done.stored],
                        {**extraction.skipped, **done.skipped}, space.name,
                        traits_of(opts.measure.engine), done.restarts, done.tried)
    return TileResult(done.stored, replace(summary, instances=done.instances,
                                           left_out=extraction.left_out))
