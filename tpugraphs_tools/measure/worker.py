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
    min_sample_ms: float = 5.0
    stop: StopRule = field(default_factory=StopRule)
    adaptive: bool = True


@dataclass
class Job:
    """One config to compile: HLO text with the config applied, and its compile options."""

    index: int
    text: str
    slots: list[dict[str, Any]] = field(default_factory=list)  # apply.constraint_slots
    options: dict[str, Any] | None = None
    fault: str | None = None  # tests only: "crash" | "hang" | "raise" | "crash_run"
