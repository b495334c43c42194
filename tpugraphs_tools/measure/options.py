"""One record for how a collect item is measured, and the worker specs derived from it.

Why here and not in ``collect/``: measure/ is the lower layer. The worker specs
(:class:`SessionSpec`, :class:`PipelineOptions`) are built from this record, and measure/ must
never import collect/. ``tgt collect`` flags and plan keys both become a :class:`MeasureOptions`
through :meth:`MeasureOptions.from_keys` (field name = plan key = flag without ``--``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from tpugraphs_tools.configs import STRATEGIES
from tpugraphs_tools.measure.paired import StopRule
from tpugraphs_tools.measure.pipeline import PipelineOptions
from tpugraphs_tools.measure.processes import ISOLATIONS
from tpugraphs_tools.measure.worker import ENGINES, SessionSpec


@dataclass(frozen=True)
class MeasureOptions:
    """How one item is measured. Field = plan key = CLI flag (``timing_batch`` ↔
    ``--timing-batch``); the table in docs/collect.md lists them all.

    Fields:
        configs: configs per graph, the default included (0 = graph only); tile: measured
            configs per kernel (at least 2).
        strategy: ``default`` (perturbations of the compiler's choice) or ``random``.
        seed: seed of the generated configs and of the program inputs.
        warmup: untimed runs before timing.
        repeats: timed rounds per config (tile collection and ``timing="fixed"``).
        timeout: seconds per config (compile, or run) before its worker is killed.
        workers: compile worker processes running ahead of the measurement worker.
        timing_batch: configs timed together against one default per round (not the
            program's input batch, which is ``ProgramArgs.batch``).
        isolation: how compilation is kept off the timed runs: auto | pin | pause | none.
        timing: ``paired`` (ratio CIs, adaptive rounds, A/A control) or ``fixed`` (old engine).
        min_sample_ms: each timed sample repeats the program until it lasts this long.
        target_precision: a config stops once its 95% CI half-width is this fraction of it.
        rank_precision: ... unless its CI still overlaps a rank neighbour's (or holds 1.0):
            then it goes on to this half-width (None: off; on this host it did not pay,
            docs/timing.md).
        max_rounds: cap on paired rounds per config.
        max_seconds_per_config: cap on timed seconds per config.
        copies: loaded copies of the default and of each config, rotated over rounds (all
            measurement processes together).
        measure_processes: measurement processes every batch is timed in, one after the
            other (paired engine): labels average them and their CIs include the spread
            between processes; the precision target, the caps and the copies are shared out.
        max_kernels: tile collection: at most this many distinct kernels per program.
        backend: jax backend that compiles and times (None: jax's default); the request's.
        rtol: numerics tolerance × max |default output| (None: fits the module's precision).
        adaptive: False runs every config to ``max_rounds`` (benchmark reference; no flag).
    """

    configs: int = 20
    strategy: str = "default"
    seed: int = 0
    warmup: int = 2
    repeats: int = 10
    timeout: float = 120.0
    workers: int = 1
    timing_batch: int = 16
    isolation: str = "auto"
    timing: str = "paired"
    min_sample_ms: float = 1.0
    target_precision: float = 0.007
    rank_precision: float | None = None
    max_rounds: int = 6000
    max_seconds_per_config: float = 10.0
    copies: int = 16
    measure_processes: int = 4
    max_kernels: int | None = None
    backend: str | None = None
    rtol: float | None = None
    adaptive: bool = True

    def __post_init__(self) -> None:
        for name, low in _MINIMUM.items():
            value = getattr(self, name)
            if value is None and name in _OPTIONAL:
                continue
            number = isinstance(_DEFAULTS[name], float) or name in _FLOATS
            allowed = (int, float) if number else (int,)
            if isinstance(value, bool) or not isinstance(value, allowed):
                raise ValueError(f"{name} must be {'a number' if number else 'an integer'}, "
                                 f"got {value!r}")
            if low is not None and value < low:
                raise ValueError(f"{name} must be >= {low}, got {value!r}")
        for name, choices in _CHOICES.items():
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {list(choices)}, "
                                 f"got {getattr(self, name)!r}")

    @classmethod
    def from_keys(cls, values: Mapping[str, Any]) -> MeasureOptions:
        """The one builder: plan keys / CLI flag values (keys other than :data:`KEYS` are
        ignored, so a plan item or the CLI's parameters can be passed whole). Raises
        ValueError naming the key of a bad value."""
        return cls(**{k: values[k] for k in KEYS if k in values})

    @property
    def stop(self) -> StopRule:
        """The paired engine's stopping rule for one measurement process: the combined label
        of ``measure_processes`` reaches ``target_precision`` when each reaches √P times it,
        and the round and time caps and the copies are the whole label's."""
        p = self.measure_processes if self.timing == "paired" else 1
        rounds = max(3, math.ceil(self.max_rounds / p))
        return StopRule(target_precision=self.target_precision * math.sqrt(p),
                        rank_precision=None if self.rank_precision is None else
                        min(self.rank_precision, self.target_precision) * math.sqrt(p),
                        max_rounds=rounds, max_seconds_per_config=self.max_seconds_per_config / p,
                        min_rounds=min(StopRule.min_rounds, rounds),
                        copies=max(1, math.ceil(self.copies / p)))


_DEFAULTS = {f.name: f.default for f in fields(MeasureOptions)}
# Plan keys and CLI flags (``--timing-batch`` ↔ ``timing_batch``): every field a user sets.
KEYS = tuple(name for name in _DEFAULTS if name not in ("backend", "rtol", "adaptive"))
# Checked once, here (the CLI's click ranges say the same): field -> minimum (None: any).
_MINIMUM: dict[str, float | None] = {
    "configs": 0, "seed": None, "warmup": 0, "repeats": 1, "timeout": None, "workers": 1,
    "timing_batch": 1, "min_sample_ms": 0.0, "target_precision": 0.0, "rank_precision": 0.0,
    "max_rounds": 3,
    "max_seconds_per_config": 0.0, "copies": 1, "measure_processes": 1, "max_kernels": 1}
_OPTIONAL = {"max_kernels", "rank_precision"}
_FLOATS = {"rank_precision"}  # optional fields whose None default does not say the type
_CHOICES: dict[str, tuple[str, ...]] = {"strategy": STRATEGIES, "isolation": ISOLATIONS,
                                        "timing": ENGINES}


def pipeline_options(opts: MeasureOptions, isolation: str) -> PipelineOptions:
    """How the workers are driven; ``isolation`` is ``opts.isolation`` resolved for the
    platform (device_env.isolation_for)."""
    return PipelineOptions(compile_workers=opts.workers, timing_batch=opts.timing_batch,
                           timeout_s=opts.timeout, isolation=isolation)


def layout_session(opts: MeasureOptions, text: str, rtol: float, compile_options: dict[str, Any],
                   isolation: str) -> tuple[SessionSpec, PipelineOptions]:
    """Worker specs of a layout collection: ``opts.timing``'s engine."""
    spec = SessionSpec(base_text=text, backend=opts.backend, seed=opts.seed,
                       warmup=opts.warmup, repeats=opts.repeats, rtol=rtol,
                       options=compile_options, engine=opts.timing,
                       min_sample_ms=opts.min_sample_ms, stop=opts.stop, adaptive=opts.adaptive,
                       processes=opts.measure_processes if opts.timing == "paired" else 1)
    return spec, pipeline_options(opts, isolation)


def kernel_session(opts: MeasureOptions, text: str, rtol: float,
                   compile_options: dict[str, Any], isolation: str,
                   fresh_compiler_per_job: bool) -> tuple[SessionSpec, PipelineOptions]:
    """Worker specs of one tile kernel: the fixed engine, deduplicated on generated code (an
    option that changes neither the HLO nor the code is a no-op), the optimized HLO returned
    with each result."""
    spec = SessionSpec(base_text=text, options=compile_options, backend=opts.backend,
                       seed=opts.seed, warmup=opts.warmup, repeats=opts.repeats, rtol=rtol,
                       dedupe_on_code=True, return_optimized=True,
                       fresh_compiler_per_job=fresh_compiler_per_job)
    return spec, pipeline_options(opts, isolation)
