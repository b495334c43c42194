"""The fixed engine: ``fixed_rounds`` rotating rounds of single runs against a solo-timed
default.

``tgt collect --engine fixed`` keeps it, the first engine of the layout and tile collections,
for comparisons. One loaded copy per program, one argument set.

Its timing: warm-ups, then the reference and the candidates run alternately. Cross-process
drift on this kind of machine reaches 4–5% (once 2.5×), more than most layout effects, so
every config is timed against the default config in the same process and the same time
window, and stored relative to it (docs/layout-collection.md).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from tpugraphs_tools.measure.engines.base import (
    DefaultProgram,
    LoadedBatch,
    TimedItem,
    Traits,
    bind_copies,
)
from tpugraphs_tools.measure.messages import Batch, DefaultInfo
from tpugraphs_tools.measure.results import HOST, ConfigResult, Timing
from tpugraphs_tools.measure.stats.rounds import OnRound


class FixedEngine:
    """:class:`~tpugraphs_tools.measure.engines.base.Engine` of ``SessionSpec.engine ==
    "fixed"``."""

    traits: ClassVar[Traits] = Traits(repeats_per_batch=0, replicated=False, budgeted=False,
                                      ratio_labels=False)

    def __init__(self, default: DefaultProgram, on_round: OnRound | None = None) -> None:
        self.default = default
        self.spec = default.spec
        self.on_round = on_round   # a watcher's progress, after every round (round_board.py)

    def ready(self, info: DefaultInfo) -> DefaultInfo:
        return dataclasses.replace(info, timing=time_alone(
            self.default.run_once, self.spec.warmup, self.spec.fixed_rounds))

    def extras(self) -> list[TimedItem]:
        return []

    def load(self, items: list[TimedItem]) -> LoadedBatch:
        sets = [self.default.inputs]
        defaults = bind_copies([self.default.executable], sets, self.default.run)
        copies = [bind_copies(item.executables, sets, self.default.run) for item in items]
        return LoadedBatch(defaults, copies)

    def warm(self, loaded: LoadedBatch) -> None:
        # The numerics check ran each program once: the first warm-up run is done.
        for _ in range(max(0, self.spec.warmup - 1)):  # compile workers keep running here
            for fn in [*loaded.defaults, *(c[0] for c in loaded.items)]:
                fn()

    def label(self, message: Batch, loaded: LoadedBatch, items: list[TimedItem]
              ) -> list[ConfigResult]:
        ref, timings = time_batch(self.default.run_once, [c[0] for c in loaded.items], 0,
                                  self.spec.fixed_rounds, on_round=self.on_round)
        return [dataclasses.replace(item.result, timing=timing, default_timing=ref, timer=HOST)
                for item, timing in zip(items, timings, strict=True)]


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
