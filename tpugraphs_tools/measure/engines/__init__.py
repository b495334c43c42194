"""Timing engines of the measurement worker, behind one contract (``base.Engine``)."""

from __future__ import annotations

from tpugraphs_tools.measure.engines.base import (
    DefaultProgram,
    Engine,
    LoadedBatch,
    TimedItem,
    Traits,
)
from tpugraphs_tools.measure.engines.fixed import FixedEngine
from tpugraphs_tools.measure.engines.paired import PairedEngine
from tpugraphs_tools.measure.stats.rounds import OnRound

ENGINE_CLASSES: dict[str, type[FixedEngine] | type[PairedEngine]] = {
    "paired": PairedEngine, "fixed": FixedEngine}
# ``--engine`` choices, in the registry's order (the default first)
ENGINES = tuple(ENGINE_CLASSES)


def make_engine(default: DefaultProgram, on_round: OnRound | None = None) -> Engine:
    """The engine ``default.spec.engine`` names; ``on_round`` hears each round's progress."""
    return ENGINE_CLASSES[default.spec.engine](default, on_round)


def traits_of(engine: str) -> Traits:
    """What the parent process must know about the engine named ``engine``."""
    return ENGINE_CLASSES[engine].traits


__all__ = ["ENGINES", "ENGINE_CLASSES", "DefaultProgram", "Engine", "FixedEngine", "LoadedBatch",
           "PairedEngine", "TimedItem", "Traits", "make_engine", "traits_of"]
