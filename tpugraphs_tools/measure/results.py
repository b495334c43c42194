"""What became of a config: its status, why its timing stopped, and its result record.

The values are the strings configs.parquet stores (``schemas/configs.schema.json``): the enums
are ``StrEnum`` so a member is written, compared and JSON-encoded as its value.
"""

from __future__ import annotations

import enum
import statistics
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tpugraphs_tools.compiler import Realized


class Status(enum.StrEnum):
    """configs.parquet ``status``: the outcome of one config (failures are data)."""

    OK = "ok"
    NOOP = "noop"                    # compiled to the default's program
    DUPLICATE = "duplicate"          # compiled to an earlier config's program
    COMPILE_ERROR = "compile_error"
    INFEASIBLE = "infeasible"        # over the device's limits (a tile): never compiled
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASH = "crash"
    WRONG_RESULT = "wrong_result"
    DEFAULT_FAILED = "default_failed"  # the graph's default could not run: nothing measured
    CONTROL = "control"  # an A/A copy of the default timed as a config: the batch's noise floor
    REPEAT = "repeat"    # a config of an earlier batch timed again: variance between windows


class StopReason(enum.StrEnum):
    """configs.parquet ``stop_reason``: why timing stopped adding rounds for a config."""

    PRECISION = "precision"
    SEPARATED = "separated"
    MAX_ROUNDS = "max_rounds"
    MAX_SECONDS = "max_seconds"
    BATCH_DONE = "batch_done"
    # Written by earlier versions when a paired batch without adaptive rounds ran to its
    # round cap: read as max_rounds (never written now; old rows still validate).
    FIXED_ROUNDS = "fixed_rounds"
    REFERENCE = "reference"          # the default row: its label is the in-window default
    PLACEMENT_FLOOR = "placement_floor"
    BUDGET = "budget"                # the graph's --budget-seconds ran out (stats/racing.py)


class Timer(enum.StrEnum):
    """configs.parquet ``timer``: how a label's samples were timed
    (measure/engines/device_timer.py)."""

    HOST = "host"          # the host clock around k runs (launch and wait included)
    CUPTI = "cupti"        # CUPTI kernel records: device kernel time
    PROFILER = "profiler"  # kernel events of a jax.profiler trace: device kernel time
    MIXED = "mixed"        # the label's measurement processes disagreed (stats/replicas.py)


# ``--timer`` choices: auto (a device timer for tile kernels on a GPU, host elsewhere: the
# platform decides, device_env.timer_for), device (the first device timer that works), or one
# timer by name. Here, below both the platform rules and the engines that open the timers.
HOST, CUPTI, PROFILER = Timer.HOST.value, Timer.CUPTI.value, Timer.PROFILER.value
TIMERS = (HOST, CUPTI, PROFILER)
AUTO, DEVICE = "auto", "device"
TIMER_CHOICES = (AUTO, DEVICE, *TIMERS)


@dataclass(frozen=True)
class Timing:
    """Summary of one program's timed runs (or samples): minimum, median, spread, count."""

    min_ns: int
    median_ns: int
    cv: float
    repeats: int

    @classmethod
    def of(cls, samples: list[int]) -> Timing:
        mean = statistics.fmean(samples)
        cv = statistics.pstdev(samples) / mean if mean > 0 and len(samples) > 1 else 0.0
        return cls(min(samples), int(statistics.median(samples)), cv, len(samples))

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


OK, NOOP, DUPLICATE = Status.OK, Status.NOOP, Status.DUPLICATE
COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT, CRASH, WRONG_RESULT = (
    Status.COMPILE_ERROR, Status.RUNTIME_ERROR, Status.TIMEOUT, Status.CRASH,
    Status.WRONG_RESULT)
CONTROL, REPEAT = Status.CONTROL, Status.REPEAT
INFEASIBLE = Status.INFEASIBLE


@dataclass(frozen=True)
class ConfigResult:
    """What became of one config (``index``; None for the A/A control): its status and, when
    it was timed, its timings and its label. Only the fields its status implies are set.

    Frozen (it crosses processes by pickle, so no ``slots``): the measurement worker builds
    one after the numerics check and derives the timed one from it with
    ``dataclasses.replace``; collect/ turns a finished one into a configs.parquet row.
    """

    index: int | None
    # Always a Status after construction (a plain value is converted, an unknown one is an
    # error); ``str`` is accepted for callers that pass one through (the timing side).
    status: Status | str
    error: str | None = None
    compile_seconds: float | None = None
    # Read back from the optimized HLO (compiler/realized.py); None when it did not compile.
    realized: Realized | None = None
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
    stop_reason: str | None = None    # a StopReason value
    runs_per_sample: int | None = None
    timing_cpus: int | None = None   # CPUs the timing process could run on (affinity)
    timed_seconds: float | None = None
    measure_seconds: float | None = None  # the measurement worker's busy time, shared
    paused_seconds: float = 0.0           # compile workers stopped for this batch
    # Paired engine, for combining one batch timed in several processes (stats/replicas.py):
    # the label on the log scale, its se (rounds and copy placement) and df, the raw samples.
    log_center: float | None = None
    log_se: float | None = None
    df: int | None = None
    config_samples_ns: list[int] | None = None
    default_samples_ns: list[int] | None = None
    processes: int = 1                    # measurement processes the label averages
    process_sd: float | None = None       # between-process SD (log scale) in its CI
    timer: str | None = None              # how its samples were timed (TIMERS)
    kernels_per_run: int | None = None    # device timers: kernels a run launched (checked)
    timer_fallback: str | None = None     # why host time where a device timer was asked

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))  # frozen: set once, here
