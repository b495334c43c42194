"""What the parent and the worker processes exchange: the session, the jobs, the batches.

Every message is a frozen dataclass (pickled between processes, so no ``slots``): built once
by its sender; a variant is a ``dataclasses.replace``.

Configs are compiled and run in worker processes (``workers/``, driven by ``measurer.py``)
because XLA:CPU was seen dying with SIGILL on some option sets: a config must never take the
whole collection down, and its failure is recorded as data with a status (``results.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tpugraphs_tools.errors import DefaultTimeoutError as DefaultTimeoutError
from tpugraphs_tools.errors import WorkerError as WorkerError
from tpugraphs_tools.measure.results import ConfigResult, Status, Timing
from tpugraphs_tools.measure.stats.stopping import StopRule

if TYPE_CHECKING:
    from tpugraphs_tools.compiler import ConstraintSlot, Realized


@dataclass(frozen=True)
class SessionSpec:
    """What the workers need to measure configs of one graph (or kernel)."""

    base_text: str
    backend: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    warmup: int = 2
    fixed_rounds: int = 10
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
    # A/A control per batch (measure/stats/rounds.py); "fixed": ``fixed_rounds`` rotating rounds
    # of single runs against a solo-timed default (the old engine, ``--engine fixed``).
    engine: str = "fixed"
    min_sample_ms: float = 1.0
    prime_runs: int = 0   # paired: untimed runs of a program just before each sample of k > 1
    stop: StopRule = field(default_factory=StopRule)   # per measurement process
    adaptive: bool = True
    # Paired engine: measurement processes each batch is timed in (measure/stats/replicas.py).
    processes: int = 1
    # Paired engine: how a sample is timed, resolved for the platform (device_env.timer_for):
    # "host", "device" (the first device timer that works) or a timer's name
    # (measure/engines/device_timer.py); a device timer that does not work falls back to "host".
    timer: str = "host"
    # Paired engine, three or more processes: a config whose own processes disagree more than
    # the batch's pooled spread gets a CI from its own spread (replicas.combined_interval).
    # On for tile kernels, where microsecond kernels ran ~1.8x slower in some processes only;
    # off for whole programs, where it cost claims and no claimed order needed it.
    item_spread: bool = False


@dataclass(frozen=True)
class Job:
    """One config to compile: HLO text with the config applied, and its compile options."""

    index: int
    text: str
    slots: list[ConstraintSlot] = field(default_factory=list)  # apply.constraint_slots
    options: dict[str, Any] | None = None


@dataclass(frozen=True)
class Compiled:
    """A config a compile worker compiled, on its way to be timed (pickled between processes)."""

    index: int
    compile_seconds: float
    realized: Realized             # realized layouts, fingerprint (compiler/realized.py)
    key: str                       # dedupe key: same key, same program
    executable: bytes              # serialized; the measurement worker loads it
    optimized_text: str | None = None  # with SessionSpec.return_optimized
    repeat_of: int | None = None   # paired engine: a config of an earlier batch timed again

    def result(self, status: Status, **fields: Any) -> ConfigResult:
        """A result carrying what the compile worker found out about this config."""
        return ConfigResult(index=self.index, status=status,
                            compile_seconds=self.compile_seconds, realized=self.realized,
                            key=self.key, optimized_text=self.optimized_text,
                            repeat_of=self.repeat_of, **fields)


@dataclass(frozen=True)
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
    # graph's --budget-seconds, measure/stats/racing.py); None: no budget.
    budget_seconds: float | None = None
    # Paired engine: the between-process variance of a label (var u + var v, log scale) as
    # the processes that timed this batch before estimate it (replicas.partial_between); None
    # before two have. Rounds stop once they cannot narrow a CI that this term holds up.
    process_var: float | None = None
    # Paired engine with several processes: check and load the batch, answer "loaded", and
    # time it only on a :class:`Go`. Every process loads at once (the CPUs are free then);
    # the timing stays one process after another.
    hold: bool = False


@dataclass(frozen=True)
class Go:
    """Time the batch a worker loaded on hold, with what the processes before it settled
    (``Batch.runs_per_sample``, ``pause``, ``process_var``); ``cancel`` drops it untimed (the
    batch failed in another process)."""

    pause: list[int] = field(default_factory=list)
    runs_per_sample: int | None = None
    process_var: float | None = None
    cancel: bool = False
    # Pin the timing to these CPUs (processes timing side by side), then return to the
    # worker's own set; None: time where the worker runs.
    cpus: set[int] | None = None


@dataclass(frozen=True)
class DefaultInfo:
    """The measurement worker's default config, once it is compiled and checked ("ready")."""

    compile_seconds: float
    realized: Realized
    key: str
    timing: Timing | None = None   # fixed engine only: the default timed alone
    optimized_text: str | None = None
