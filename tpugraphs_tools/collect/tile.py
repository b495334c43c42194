"""Tile collection: kernels of an optimized module × per-kernel configs × measured runtimes.

Every kernel (fusion or heavy op) of the optimized entry becomes its own graph
(``collect/kernels.py``), linked to its parent by ``parent_graph_id``/``parent_instruction``.
Each kernel is measured by the pipelined engine (``measure/pipeline.py``) with the engine
``--engine`` names: the default config first, then the space's candidates, each timed with
the default in the same window. How labels, ``config_runtime`` and
``config_runtime_normalizers`` follow from the timings is in ``collect/tile_labels.py`` and
docs/tile-collection.md. The kernels of one program share their worker processes
(``measure/reuse.py``): each kernel hands them its own default.

No-ops: the engine dedupes on (optimized HLO fingerprint, hash of the generated machine code),
so a config whose options change neither is ``noop`` and never timed, whatever its options say.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tpugraphs_tools.collect.graphs import CollectedGraph, device_info, graph_row
from tpugraphs_tools.collect.kernels import Kernel, compilable_text, extract_kernels
from tpugraphs_tools.collect.rows import ConfigRow, GraphRow
from tpugraphs_tools.collect.summary import TileEffect, TileSummary
from tpugraphs_tools.collect.tile_labels import (
    is_paired,
    kernel_arrays,
    pooled_quality,
    tile_row,
)
from tpugraphs_tools.configs import (
    KernelConfig,
    KernelConfigSpace,
    default_space,
)
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import HloSource, parse_hlo_text
from tpugraphs_tools.measure import (
    COMPILE_ERROR,
    CONTROL,
    NOOP,
    OK,
    REPEAT,
    ConfigResult,
    Job,
    MeasureOptions,
    SharedWorkers,
    Status,
    Timing,
    WorkerError,
    device_env,
    kernel_session,
)
from tpugraphs_tools.store import ConfigCounts, make_graph_id

Progress = Callable[[str], None]


@dataclass(frozen=True)
class TileOptions:
    """The tile collection's own knobs on top of the shared :class:`MeasureOptions`
    (``measure.configs`` is the measured configs per kernel, at least 2)."""

    measure: MeasureOptions = field(default_factory=lambda: MeasureOptions(configs=8))
    max_attempts: int | None = None    # configs tried per kernel; default 3 × configs_per_kernel
    min_distinct: int = 2              # kernels with fewer ok configs are reported, not stored
    space: KernelConfigSpace | None = None  # default: the backend's space (configs/tile.py)
    # Kernels share their worker processes (measure/reuse.py); False: fresh ones per kernel,
    # as before (for measuring what sharing saves).
    share_workers: bool = True

    @property
    def configs_per_kernel(self) -> int:
        """Measured (ok) configs per kernel, the default included."""
        return max(2, self.measure.configs)


@dataclass
class TileResult:
    graphs: list[tuple[CollectedGraph, list[ConfigRow]]]
    summary: TileSummary


@dataclass
class _KernelRun:
    rows: list[ConfigRow] = field(default_factory=list)
    feats: list[np.ndarray] = field(default_factory=list)
    restarts: int = 0
    extras: list[ConfigRow] = field(default_factory=list)  # control/repeat rows, paired


def tile_graph_id(program: str, kernel_fingerprint: str) -> str:
    """Kernel ids never collide with whole-program ids of the same program."""
    return make_graph_id(f"{program}.tile", kernel_fingerprint)


def _measure_text(kernel: Kernel, space: KernelConfigSpace) -> str:
    if space.kernel_form == "wrapped":
        if kernel.wrapped_text is None:
            raise ConfigError(f"{space.name} configures fusions; {kernel.name} is a "
                              f"{kernel.opcode}")
        return compilable_text(parse_hlo_text(kernel.wrapped_text, source=kernel.name))
    return kernel.measure_text


def _effect(cand: Timing, ref: Timing) -> dict[str, float]:
    """Relative runtime and its distance from 1 in units of the noisier side's CV."""
    rel = cand.min_ns / ref.min_ns
    cv = max(cand.cv, ref.cv)
    return {"relative_to_default": rel, "default_cv": ref.cv,
            "effect_cv": abs(rel - 1) / cv if cv > 0 else float("inf")}


def _realize(space: KernelConfigSpace, config: KernelConfig, text: str | None
             ) -> tuple[KernelConfig, dict[str, Any]]:
    if text is None:
        return config, {}
    realized, facts = space.realized(parse_hlo_text(text, source="optimized kernel"), config)
    if realized != config:
        facts = {**facts, "realized_config": json.loads(realized.to_json())}
    return realized, facts


def measure_kernel(kernel: Kernel, space: KernelConfigSpace, opts: TileOptions,
                   configs: list[KernelConfig], progress: Progress = lambda _m: None,
                   on_row: Callable[[ConfigRow], None] = lambda _r: None,
                   workers: SharedWorkers | None = None) -> _KernelRun:
    """Default + candidates of one kernel until ``configs_per_kernel`` are measured ok.

    Single-setting configs go first; combinations follow in a second pass that skips any
    combination containing a setting that was a no-op on its own. ``workers``: processes
    shared with the program's other kernels (None: this kernel's own, closed at the end).
    """
    text = _measure_text(kernel, space)
    platform, _kind = device_info(opts.measure.backend)
    measure = device_env.tile_options(opts.measure, platform)
    spec, pipeline = kernel_session(
        measure, space.apply(text, configs[0]),
        rtol=device_env.resolve_rtol(measure.rtol, platform, kernel.module),
        compile_options=space.compile_options(configs[0]),
        isolation=device_env.isolation_for(platform, measure.isolation),
        fresh_compiler_per_job=space.fresh_compiler_per_config,
        timer=device_env.timer_for(platform, "tile", measure.timer))
    if workers is None:
        with SharedWorkers(reuse=False) as own:
            return measure_kernel(kernel, space, opts, configs, progress, on_row, own)
    run = _KernelRun()
    max_attempts = opts.max_attempts or 3 * opts.configs_per_kernel
    by_index: dict[int, KernelConfig] = {}
    noop_settings: set[Any] = set()
    rows: dict[int, ConfigRow] = {}
    feats: dict[int, np.ndarray] = {}
    extras: list[ConfigResult] = []

    def record(result: ConfigResult) -> None:
        if result.repeat_of is not None and result.status != REPEAT:
            return  # a failed re-timing of a config measured fine before: nothing to keep
        if result.status in (CONTROL, REPEAT):
            extras.append(result)  # rows after the configs, once their indices are known
            return
        assert result.index is not None  # only control rows have no config index
        index = result.index
        config = by_index[index]
        realized, facts = _realize(space, config, result.optimized_text)
        if result.status == NOOP and len(config.settings) == 1:
            noop_settings.add(config.settings[0])
        if result.status == OK:
            if index and result.timing and result.default_timing and result.stop_reason is None:
                facts.update(_effect(result.timing, result.default_timing))
            feats[index] = space.encode(realized)
        rows[index] = tile_row(index, config, measure, result, facts)
        on_row(rows[index])
        progress(f"{kernel.name}: config {index} {result.status}")

    def enough() -> bool:
        return sum(1 for r in rows.values() if r["status"] == OK) >= opts.configs_per_kernel

    def finished() -> list[tuple[float, float]]:
        return [(low, high) for r in rows.values()
                if r["status"] == OK and not r["is_default"]
                and (low := r["relative_ci_low"]) is not None
                and (high := r["relative_ci_high"]) is not None]

    measurer = workers.session(spec, pipeline)
    restarts = measurer.restarts
    info = measurer.start()
    known = {info.key: 0}
    by_index[0] = configs[0]
    record(ConfigResult(0, OK, timing=info.timing, default_timing=info.timing,
                        realized=info.realized, compile_seconds=info.compile_seconds,
                        max_abs_error=0.0, optimized_text=info.optimized_text))
    singles = [c for c in configs[1:] if len(c.settings) == 1]
    combos = [c for c in configs[1:] if len(c.settings) > 1]
    for phase in (singles, combos):
        jobs = []
        for config in phase:
            if len(by_index) - 1 >= max_attempts:
                break
            if len(config.settings) > 1 and noop_settings & set(config.settings):
                continue  # a combination with a setting that alone changed nothing
            index = len(by_index)
            by_index[index] = config
            try:
                jobs.append(Job(index, space.apply(text, config),
                                options=space.compile_options(config)))
            except ConfigError as exc:
                record(ConfigResult(index, COMPILE_ERROR, error=str(exc)))
        if not enough():
            measurer.run(jobs, known, record, stop=enough, context=finished)
        else:
            for job in jobs:  # never compiled: not part of the data
                by_index.pop(job.index)
    run.restarts = measurer.restarts - restarts
    for index in sorted(rows):
        run.rows.append(rows[index])
        if index in feats:
            run.feats.append(feats[index])
    first = max(rows) + 1
    for i, result in enumerate(extras):  # control/repeat rows follow the configs
        row = tile_row(first + i, by_index[result.repeat_of or 0], measure, result, {},
                       extra=True)
        run.extras.append(row)
        on_row(row)
    return run


def collect_tile(compiled_source: HloSource, *, program: str, program_args: dict[str, Any],
                 parent_graph_id: str | None, opts: TileOptions,
                 progress: Progress = lambda _m: None,
                 on_kernel: Callable[[int, int, str], None] = lambda _i, _n, _name: None,
                 on_row: Callable[[ConfigRow], None] = lambda _r: None) -> TileResult:
    """Extract, configure and measure every kernel of an optimized module (library entry point
    behind ``tgt collect --collection tile``)."""
    device_env.share_device_memory()
    platform, device_kind = device_info(opts.measure.backend)
    space = opts.space or default_space(platform, seed=opts.measure.seed)
    extraction = extract_kernels(compiled_source.module, opts.measure.max_kernels,
                                 source=compiled_source.origin)
    skipped = dict(extraction.skipped)
    graphs: list[tuple[CollectedGraph, list[ConfigRow]]] = []
    restarts = 0
    tried: Counter[Status] = Counter()
    instances: dict[str, list[str]] = {}
    runs: list[tuple[Kernel, _KernelRun]] = []
    with SharedWorkers(reuse=opts.share_workers) as workers:
        for i, kernel in enumerate(extraction.kernels, start=1):
            progress(f"kernel {i}/{len(extraction.kernels)}: {kernel.name}")
            on_kernel(i, len(extraction.kernels), kernel.name)
            configs = space.configs(kernel.module)
            if len(configs) < 2:
                skipped[kernel.name] = f"no {space.name} configs for this kernel"
                continue
            try:
                runs.append((kernel, measure_kernel(kernel, space, opts, configs, progress,
                                                    on_row, workers)))
            except (WorkerError, ConfigError) as exc:
                skipped[kernel.name] = f"default config failed: {exc}"
    for kernel, run in runs:
        restarts += run.restarts
        tried.update(r["status"] for r in run.rows)
        distinct = sum(1 for r in run.rows if r["status"] == OK)
        if distinct < opts.min_distinct:
            statuses = dict(Counter(r["status"] for r in run.rows))
            skipped[kernel.name] = (f"{distinct} distinct config(s) after {len(run.rows)} tried "
                                    f"{statuses}: no {space.name} choice changed this kernel")
            continue
        origin = f"{compiled_source.origin}:{kernel.name}"
        src = HloSource(kernel.module, kernel.text, None,
                        compiled_source.kind, "optimized", origin)
        graph = featurize(kernel.module)
        rows, arrays = kernel_arrays([*run.rows, *run.extras], run.feats)
        row: GraphRow = {
            **graph_row(src, graph, program=program, program_args=program_args,
                        collection="tile", backend=platform, device_kind=device_kind,
                        config_space=space.name),
            "graph_id": tile_graph_id(program, kernel.fingerprint),
            "parent_graph_id": parent_graph_id, "parent_instruction": kernel.name,
            "num_configurable": 0, "num_configs": int(arrays["config_runtime"].shape[0])}
        collected = CollectedGraph(src, graph, row, arrays)
        graphs.append((collected, rows))
        if len(kernel.instances) > 1:
            instances[row["graph_id"]] = kernel.instances
    summary = summarize(graphs, skipped, space.name, restarts, tried)
    return TileResult(graphs, replace(summary, instances=instances))


def summarize(graphs: list[tuple[CollectedGraph, list[ConfigRow]]],
              skipped: dict[str, str], space: str, restarts: int = 0,
              tried: Counter[Status] | None = None) -> TileSummary:
    """Counts, statuses (of every config tried, stored kernels or not) and the largest effect
    vs default over the stored kernels (fixed engine: in units of CV; paired: the largest
    ratio whose CI excludes 1.0), and how sure the labels are (paired)."""
    rows = [(g, r) for g, rs in graphs for r in rs if r["status"] not in (CONTROL, REPEAT)]
    paired = is_paired([r for _, r in rows])
    effects = []
    apart: list[TileEffect] = []  # paired: configs whose 95% CI excludes the default's 1.0
    not_as_requested = 0
    for g, r in rows:
        ratio = r["relative_to_default"]
        if r["status"] != OK or r["is_default"]:
            continue
        real = json.loads(r["realized"] or "{}")
        not_as_requested += real.get("matches_request") is False
        if ratio is None:
            continue
        effect = TileEffect(
            graph_id=g.graph_id, parent_instruction=g.row["parent_instruction"],
            config=json.loads(r["config"]), relative_to_default=ratio,
            effect_cv=real.get("effect_cv"), runtime_cv=r["runtime_cv"],
            default_cv=real.get("default_cv"))
        effects.append(effect)
        low, high = r["relative_ci_low"], r["relative_ci_high"]
        if low is not None and high is not None and not low <= 1.0 <= high:
            apart.append(effect)
    effects.sort(key=lambda e: -(e.effect_cv or 0))
    apart.sort(key=lambda e: -abs(math.log(e.relative_to_default)))
    relative = [e.relative_to_default for e in effects]
    status = tried if tried is not None else Counter(r["status"] for _, r in rows)
    largest = (apart[0] if apart else None) if paired else (effects[0] if effects else None)
    return TileSummary(
        config_space=space, kernels=len(graphs), kernels_skipped=len(skipped),
        skipped=skipped, configs=sum(status.values()), configs_stored=len(rows),
        status=dict(status), worker_restarts=restarts,
        effects_over_3cv=sum(1 for e in effects if (e.effect_cv or 0) > 3),
        largest_effect=largest,
        best_speedup=1 / min(relative) if relative else None,
        worst_slowdown=max(relative) if relative else None,
        apart_from_default=len(apart) if paired else None,
        labels=pooled_quality([rs for _, rs in graphs]), not_as_requested=not_as_requested,
        counts=ConfigCounts.of_rows(r["status"] for _, rs in graphs for r in rs))
