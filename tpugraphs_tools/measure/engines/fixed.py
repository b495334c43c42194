"""The fixed engine: ``repeats`` rotating rounds of single runs against a solo-timed default.

``tgt collect --engine fixed`` keeps it, the first engine of the layout and tile collections,
for comparisons. One loaded copy per program, one argument set.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from tpugraphs_tools.measure.device_timer import HOST
from tpugraphs_tools.measure.engines.base import (
    DefaultProgram,
    LoadedBatch,
    TimedItem,
    Traits,
    bind_copies,
)
from tpugraphs_tools.measure.messages import Batch, DefaultInfo
from tpugraphs_tools.measure.paired import OnRound
from tpugraphs_tools.measure.results import ConfigResult
from tpugraphs_tools.measure.timing import time_alone, time_batch


class FixedEngine:
    """:class:`~tpugraphs_tools.measure.engines.base.Engine` of ``SessionSpec.engine ==
    "fixed"``."""

    traits: ClassVar[Traits] = Traits(repeats_per_batch=0, replicated=False, budgeted=False)

    def __init__(self, default: DefaultProgram, on_round: OnRound | None = None) -> None:
        self.default = default
        self.spec = default.spec
        self.on_round = on_round   # a watcher's progress, after every round (round_board.py)

    def ready(self, info: DefaultInfo) -> DefaultInfo:
        return dataclasses.replace(info, timing=time_alone(
            self.default.run_once, self.spec.warmup, self.spec.repeats))

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
                                  self.spec.repeats, on_round=self.on_round)
        return [dataclasses.replace(item.result, timing=timing, default_timing=ref, timer=HOST)
                for item, timing in zip(items, timings, strict=True)]
