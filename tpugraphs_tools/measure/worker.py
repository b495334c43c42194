"""What the parent and the worker processes exchange: the session, the jobs, the statuses.

Configs are compiled and run in worker processes (``workers.py``, driven by ``pipeline.py``)
because XLA:CPU was seen dying with SIGILL on some option sets: a config must never take the
whole collection down, and its failure is recorded as data with one of these statuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tpugraphs_tools.errors import WorkerError as WorkerError
from tpugraphs_tools.measure.paired import StopRule
from tpugraphs_tools.measure.timing import Timing

OK, NOOP, DUPLICATE = "ok", "noop", "duplicate"
COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT, CRASH, WRONG_RESULT = (
    "compile_error", "runtime_error", "timeout", "crash", "wrong_result")
CONTROL = "control"  # an A/A copy of the default timed as a config: the batch's noise floor
REPEAT = "repeat"    # a config of an earlier batch timed again: variance between windows
ENGINES = ("paired", "fixed")


@dataclass
class SessionSpec:
    """What the workers need to measure configs of one graph (or kernel)."""

    base_text: str
    backend: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    warmup: int = 2
    repeats: int = 10
    rtol: float = 1e-3
    # Tile collection: dedupe on (optimized HLO, generated machine code) instead of
    # (optimized HLO, options), so an option that changes nothing is a no-op (compile.py).
    # Only valid for options that act through the HLO or the generated code.
    dedupe_on_code: bool = False
    return_optimized: bool = False  # send the optimized HLO text back with each result
    # XLA:GPU caches autotuning per process by fusion HLO, ignoring the options that force a
    # tile: each configured compile then needs a compile worker of its own (tile_gpu.py).
    fresh_compiler_per_job: bool = False
    # "paired": samples of k runs next to default samples, ratio CIs, adaptive rounds and an
    # A/A control per batch (measure/paired.py); "fixed": ``repeats`` rotating rounds of single
    # runs against a solo-timed default (the tile collection, and the old layout engine).
    engine: str = "fixed"
    min_sample_ms: float = 1.0
    stop: StopRule = field(default_factory=StopRule)   # per measurement process
    adaptive: bool = True
    # Paired engine: measurement processes each batch is timed in (measure/replicas.py).
    processes: int = 1


@dataclass
class Job:
    """One config to compile: HLO text with the config applied, and its compile options."""

    index: int
    text: str
    slots: list[dict[str, Any]] = field(default_factory=list)  # apply.constraint_slots
    options: dict[str, Any] | None = None


@dataclass
class Compiled:
    """A config a compile worker compiled, on its way to be timed (pickled between processes)."""

    index: int
    compile_seconds: float
    realized: dict[str, Any]       # realized layouts, fingerprint (measure/realized.py)
    key: str                       # dedupe key: same key, same program
    executable: bytes              # serialized; the measurement worker loads it
    optimized_text: str | None = None  # with SessionSpec.return_optimized
    repeat_of: int | None = None   # paired engine: a config of an earlier batch timed again


@dataclass
class Batch:
    """One message to the measurement worker: configs to time (repeats included), the compile
    workers to stop during timed rounds, and the CIs of configs finished before (paired)."""

    items: list[Compiled]
    pause: list[int] = field(default_factory=list)
    context: list[tuple[float, float]] = field(default_factory=list)
    # Paired engine: samples of k runs as another process of this session calibrated it (the
    # processes of a graph time equal samples); None calibrates.
    runs_per_sample: int | None = None
    # Paired engine: timed seconds this batch may spend in each process (its share of the
    # graph's --budget-seconds, measure/racing.py); None: no budget.
    budget_seconds: float | None = None


@dataclass
class DefaultInfo:
    """The measurement worker's default config, once it is compiled and checked ("ready")."""

    compile_seconds: float
    realized: dict[str, Any]
    key: str
    timing: Timing | None = None   # fixed engine only: the default timed alone
    optimized_text: str | None = None


@dataclass
class ConfigResult:
    """What became of one config (``index``; None for the A/A control): its status and, when
    it was timed, its timings and its label. Only the fields its status implies are set."""

    index: int | None
    status: str
    error: str | None = None
    compile_seconds: float | None = None
    realized: dict[str, Any] | None = None
    key: str | None = None
    optimized_text: str | None = None
    repeat_of: int | None = None      # a REPEAT of this config index
    duplicate_of: int | None = None   # NOOP (0) / DUPLICATE of this config index
    max_abs_error: float | None = None
    timing: Timing | None = None      # the config's runs (paired: per-run times of samples)
    default_timing: Timing | None = None  # the default's, in the same window
    relative_to_default: float | None = None  # paired engine: the label and its 95% CI
    relative_ci_low: float | None = None
    relative_ci_high: float | None = None
    rounds: int | None = None
    stop_reason: str | None = None
    runs_per_sample: int | None = None
    timed_seconds: float | None = None
    measure_seconds: float | None = None  # the measurement worker's busy time, shared
    paused_seconds: float = 0.0           # compile workers stopped for this batch
    # Paired engine, for combining one batch timed in several processes (replicas.py): the
    # label on the log scale, its se (rounds and copy placement) and df, the raw samples.
    log_center: float | None = None
    log_se: float | None = None
    df: int | None = None
    config_samples_ns: list[int] | None = None
    default_samples_ns: list[int] | None = None
    processes: int = 1                    # measurement processes the label averages
    process_sd: float | None = None       # between-process SD (log scale) in its CI

    @classmethod
    def of(cls, item: Compiled, status: str, **fields: Any) -> ConfigResult:
        """A result carrying what the compile worker found out about ``item``."""
        return cls(index=item.index, status=status, compile_seconds=item.compile_seconds,
                   realized=item.realized, key=item.key, optimized_text=item.optimized_text,
                   repeat_of=item.repeat_of, **fields)

