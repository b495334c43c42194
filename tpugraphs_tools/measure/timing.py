"""Timing methodology: warm-ups, then the reference and the candidate run alternately.

Cross-process drift on this kind of machine reaches 4–5% (once 2.5×), more than most layout
effects, so every config is timed against the default config in the same process and the same
time window, and stored relative to it (docs/layout-collection.md).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
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


def time_batch(reference: Callable[[], object], candidates: Sequence[Callable[[], object]],
               warmup: int = 2, repeats: int = 10,
               on_round: Callable[[int, int], None] | None = None
               ) -> tuple[Timing, list[Timing]]:
    """Time a reference and a batch of candidates in rounds, rotating the order every round.

    Each round runs the reference once and every candidate once, so all of them see the same
    machine state within a round; the reference costs 1/len(candidates) of the timed runs
    instead of doubling them. Every callable must block until its work is done. ``on_round``
    hears (rounds done, candidates still timed) before the first round and after each.
    """
    calls = [reference, *candidates]
    for _ in range(warmup):
        for fn in calls:
            fn()
    samples: list[list[int]] = [[] for _ in calls]
    if on_round is not None:
        on_round(0, len(candidates))
    for r in range(repeats):
        shift = r % len(calls)
        for k in range(len(calls)):
            i = (k + shift) % len(calls)
            samples[i].append(_once(calls[i]))
        if on_round is not None:
            on_round(r + 1, len(candidates) if r + 1 < repeats else 0)
    return Timing.of(samples[0]), [Timing.of(s) for s in samples[1:]]


def time_alone(fn: Callable[[], object], warmup: int = 2, repeats: int = 10) -> Timing:
    for _ in range(warmup):
        fn()
    return Timing.of([_once(fn) for _ in range(repeats)])
