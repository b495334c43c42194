"""Timing methodology: warm-ups, then the reference and the candidate run alternately.

Cross-process drift on this kind of machine reaches 4–5% (once 2.5×), more than most layout
effects, so every config is timed against the default config in the same process and the same
time window, and stored relative to it (docs/layout-collection.md).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Timing:
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


def _once(fn: Callable[[], object]) -> int:
    start = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - start


def time_interleaved(reference: Callable[[], object], candidate: Callable[[], object],
                     warmup: int = 2, repeats: int = 10) -> tuple[Timing, Timing]:
    """Time ``reference`` and ``candidate`` alternately; each callable must block until done."""
    for _ in range(warmup):
        reference()
        candidate()
    ref: list[int] = []
    cand: list[int] = []
    for i in range(repeats):
        # Alternate which goes first so neither systematically benefits from a warm cache.
        if i % 2 == 0:
            ref.append(_once(reference))
            cand.append(_once(candidate))
        else:
            cand.append(_once(candidate))
            ref.append(_once(reference))
    return Timing.of(ref), Timing.of(cand)


def time_alone(fn: Callable[[], object], warmup: int = 2, repeats: int = 10) -> Timing:
    for _ in range(warmup):
        fn()
    return Timing.of([_once(fn) for _ in range(repeats)])
