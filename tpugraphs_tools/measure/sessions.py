"""Worker specs of one graph or kernel, built from the user's :class:`MeasureOptions`.

Why apart from ``options.py``: that is the user's record (flags, plan keys, their checks);
here it meets the platform (isolation, tolerance, compile options, timer) and becomes what the
measurer and its workers are told.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tpugraphs_tools.measure.device_env import is_gpu, timer_for
from tpugraphs_tools.measure.messages import SessionSpec
from tpugraphs_tools.measure.options import MeasureOptions, option_default
from tpugraphs_tools.measure.results import HOST
from tpugraphs_tools.measure.run_state import PipelineOptions, Session

# Tile kernels on a GPU, where --timer gives device time: values that replace options still at
# their (CPU-sized) defaults. A device-timed microsecond kernel is precise after a few rounds:
# fewer measurement processes (each one a CUDA context and a load of every copy), fewer loaded
# copies (code placement moves CPU labels, not device kernel time), short samples and a
# per-kernel budget. gpt small, 6 kernels x 10 configs, ran past 230 s at the CPU defaults.
GPU_TILE_DEFAULTS: dict[str, Any] = {
    "min_sample_ms": 0.2, "measure_processes": 2, "copies": 4,
    "max_seconds_per_config": 1.0, "budget_seconds": 4.0}


def tile_options(opts: MeasureOptions, platform: str) -> MeasureOptions:
    """``opts`` with :data:`GPU_TILE_DEFAULTS` for every option still at its default, on a GPU
    with a device timer (an option set to exactly its default counts as not set)."""
    if not is_gpu(platform) or timer_for(platform, "tile", opts.timer) == HOST:
        return opts
    unset = {k: v for k, v in GPU_TILE_DEFAULTS.items()
             if getattr(opts, k) == option_default(k)}
    return replace(opts, **unset)


def pipeline_options(opts: MeasureOptions, isolation: str) -> PipelineOptions:
    """How the workers are driven; ``isolation`` is ``opts.isolation`` resolved for the
    platform (device_env.isolation_for)."""
    return PipelineOptions(compile_workers=opts.workers, timing_batch=opts.timing_batch,
                           timeout_s=opts.timeout, isolation=isolation,
                           timing_lanes=opts.timing_lanes)


def layout_session(opts: MeasureOptions, text: str, rtol: float, compile_options: dict[str, Any],
                   isolation: str, timer: str = HOST) -> Session:
    """Worker specs of a layout collection: ``opts.timing``'s engine; ``timer`` is
    ``opts.timer`` resolved for the platform (device_env.timer_for)."""
    spec = SessionSpec(base_text=text, backend=opts.backend, seed=opts.seed,
                       warmup=opts.warmup, repeats=opts.repeats, rtol=rtol,
                       options=compile_options, engine=opts.timing,
                       min_sample_ms=opts.min_sample_ms, prime_runs=opts.prime_runs,
                       stop=opts.stop, adaptive=opts.adaptive,
                       processes=opts.processes, timer=timer)
    return Session(spec, pipeline_options(opts, isolation))


def kernel_session(opts: MeasureOptions, text: str, rtol: float,
                   compile_options: dict[str, Any], isolation: str,
                   fresh_compiler_per_job: bool, timer: str = HOST) -> Session:
    """Worker specs of one tile kernel: ``opts.timing``'s engine as for layout, deduplicated on
    generated code (an option that changes neither the HLO nor the code is a no-op), the
    optimized HLO returned with each result, and a config's own process spread used where it
    is the larger (``SessionSpec.item_spread``)."""
    layout = layout_session(opts, text, rtol, compile_options, isolation, timer)
    spec = replace(layout.spec, dedupe_on_code=True, return_optimized=True,
                   fresh_compiler_per_job=fresh_compiler_per_job, item_spread=True)
    return replace(layout, spec=spec)
