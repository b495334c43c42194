"""Sessions: what a measurer is told about one graph (or kernel), resolved from the user's
options, the graph's module and the platform it is measured on.

Why here and not in ``collect/``: every platform decision (isolation, numerics tolerance,
compile options, how a sample is timed, the GPU tile defaults) is a measurement rule
(``device_env.py``), so collect crosses into measure once, with (options, module, platform),
before a worker starts. Why apart from ``options.py``: that is the user's record (flags, plan
keys and their checks); here it meets the engine (``Traits``) and the platform.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from tpugraphs_tools.hlo import Module
from tpugraphs_tools.measure.device_env import (
    Platform,
    is_gpu,
    isolation_for,
    layout_compile_options,
    resolve_rtol,
    timer_for,
)
from tpugraphs_tools.measure.engines import traits_of
from tpugraphs_tools.measure.messages import SessionSpec
from tpugraphs_tools.measure.options import MeasureOptions, option_default
from tpugraphs_tools.measure.results import HOST
from tpugraphs_tools.measure.run_state import PipelineOptions, Session
from tpugraphs_tools.measure.stats.stopping import StopRule

# Tile kernels on a GPU, where --timer gives device time: values that replace options still at
# their (CPU-sized) defaults. A device-timed microsecond kernel is precise after a few rounds:
# fewer measurement processes (each one a CUDA context and a load of every copy), fewer loaded
# copies (code placement moves CPU labels, not device kernel time), short samples and a
# per-kernel budget. gpt small, 6 kernels x 10 configs, ran past 230 s at the CPU defaults.
GPU_TILE_DEFAULTS: dict[str, Any] = {
    "min_sample_ms": 0.2, "measure_processes": 2, "loaded_copies": 4,
    "max_seconds_per_config": 1.0, "budget_seconds": 4.0}


def layout_session(opts: MeasureOptions, text: str, module: Module, platform: Platform
                   ) -> Session:
    """What a measurer is told to measure layout configs of ``module`` (``text``: its
    default config) on ``platform``: ``opts.engine``'s engine, every config compiled with
    the platform's layout options (GPU: no autotuning)."""
    return _session(opts, text, module, platform, "layout",
                    layout_compile_options(platform.name))


def kernel_session(opts: MeasureOptions, text: str, module: Module, platform: Platform, *,
                   compile_options: dict[str, Any], fresh_compiler_per_job: bool) -> Session:
    """What a measurer is told to measure one tile kernel: as for layout, with the GPU tile
    defaults (:func:`tile_options`), deduplicated on generated code (an option that changes
    neither the HLO nor the code is a no-op), the optimized HLO returned with each result, and
    a config's own process spread used where it is the larger (``SessionSpec.item_spread``).
    ``compile_options`` are the config space's for the default config."""
    session = _session(tile_options(opts, platform.name), text, module, platform, "tile",
                       compile_options)
    spec = replace(session.spec, dedupe_on_code=True, return_optimized=True,
                   fresh_compiler_per_job=fresh_compiler_per_job, item_spread=True)
    return replace(session, spec=spec)


def tile_options(opts: MeasureOptions, platform: str) -> MeasureOptions:
    """``opts`` with :data:`GPU_TILE_DEFAULTS` for every option still at its default, on a GPU
    with a device timer (an option set to exactly its default counts as not set)."""
    if not is_gpu(platform) or timer_for(platform, "tile", opts.timer) == HOST:
        return opts
    unset = {k: v for k, v in GPU_TILE_DEFAULTS.items()
             if getattr(opts, k) == option_default(k)}
    return replace(opts, **unset)


def processes_of(opts: MeasureOptions) -> int:
    """Measurement processes a batch is timed in: ``measure_processes`` where the engine
    combines several (paired), else 1."""
    return opts.measure_processes if traits_of(opts.engine).replicated else 1


def stop_rule(opts: MeasureOptions) -> StopRule:
    """The paired engine's stopping rule for one measurement process: the combined label of
    ``measure_processes`` reaches ``target_precision`` when each reaches √P times it, and the
    round and time caps, the graph's budget and the loaded copies are the whole label's."""
    p = processes_of(opts)
    rounds = max(3, math.ceil(opts.max_rounds / p))
    return StopRule(target_precision=opts.target_precision * math.sqrt(p),
                    rank_precision=None if opts.rank_precision is None else
                    min(opts.rank_precision, opts.target_precision) * math.sqrt(p),
                    max_rounds=rounds, max_seconds_per_config=opts.max_seconds_per_config / p,
                    min_rounds=min(StopRule.min_rounds, rounds),
                    loaded_copies=max(1, math.ceil(opts.loaded_copies / p)), race=opts.race,
                    budget_seconds=None if opts.budget_seconds is None else
                    opts.budget_seconds / p)


def _session(opts: MeasureOptions, text: str, module: Module, platform: Platform,
             collection: str, compile_options: dict[str, Any]) -> Session:
    """The spec and the pipeline options, every platform rule applied once: the numerics
    tolerance by the module's precision, the timer for the collection, the isolation."""
    spec = SessionSpec(base_text=text, backend=opts.backend, seed=opts.seed,
                       warmup=opts.warmup, fixed_rounds=opts.fixed_rounds,
                       rtol=resolve_rtol(opts.rtol, platform.name, module),
                       options=compile_options, engine=opts.engine,
                       min_sample_ms=opts.min_sample_ms, prime_runs=opts.prime_runs,
                       stop=stop_rule(opts), adaptive=opts.adaptive,
                       processes=processes_of(opts),
                       timer=timer_for(platform.name, collection, opts.timer))
    pipeline = PipelineOptions(compile_workers=opts.workers, timing_batch=opts.timing_batch,
                               timeout_s=opts.timeout,
                               isolation=isolation_for(platform.name, opts.isolation),
                               timing_lanes=opts.timing_lanes)
    return Session(spec, pipeline)
