"""The contract between the measurement worker and a timing engine.

The worker loop (``workers/measure_worker.py``) owns what every engine shares: the default config
compiled and checked once, each batch's numerics check, the compile workers stopped during the
timed section, the ``repeat`` status. An :class:`Engine` owns how a checked batch is loaded,
warmed up and timed, and which labels it gets: ``engines/paired.py`` (ratio CIs, adaptive rounds,
an A/A control per batch) and ``engines/fixed.py`` (rotating rounds against a solo-timed default).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from tpugraphs_tools.measure.messages import Batch, DefaultInfo, SessionSpec
from tpugraphs_tools.measure.results import ConfigResult

Run = Callable[[], object]


@dataclass
class DefaultProgram:
    """The default config as the measurement worker holds it for a whole session."""

    spec: SessionSpec
    executable: Any             # loaded; its outputs are the numerics reference
    inputs: list[Any]           # the argument set the numerics check runs on
    signature: Any              # compiler/compile.py entry_signature of the module
    device: Any
    run: Callable[[Any, list[Any]], list[Any]]   # compiler/compile.py ``run``

    def run_once(self) -> list[Any]:
        return self.run(self.executable, self.inputs)


@dataclass
class TimedItem:
    """One item of a batch that passed the numerics check and will be timed."""

    result: ConfigResult        # checked, not yet timed: the engine labels a copy of it
    executables: list[Any]      # the checked executable; engines may load more copies
    blob: bytes                 # its serialized form (paired: reloaded as copies)


@dataclass
class LoadedBatch:
    """What an engine loaded for one batch: the runs of the default and of every item."""

    defaults: list[Run]
    items: list[list[Run]]      # per TimedItem, in order: its loaded copies
    seed: int = 0               # the batch's order seed (paired: fresh per batch)


@dataclass(frozen=True)
class Traits:
    """What the parent process (measure/measurer.py) and the rows built from an engine's
    results (collect/) must know about it: the one place an engine's facts are read."""

    # Configs of earlier batches timed again in each batch (their ``repeat`` rows measure
    # the variance between timing windows, collect/labels.py).
    repeats_per_batch: int
    # Every batch is timed in each of ``SessionSpec.processes`` measurement workers in turn
    # and their labels are combined (measure/stats/replicas.py); False: one worker.
    replicated: bool
    # Items stop on a timing budget (``StopRule.max_seconds_per_config``), which the batch's
    # hang limit must allow for; False: a fixed number of rounds.
    budgeted: bool
    # Labels are ratios to in-window default samples with CIs: the default's row is the
    # reference (ratio 1), the default's runtime is its median in the window, and an A/A
    # control is timed per batch; False: the minimum of fixed rounds against the default's
    # minimum timed alone, no CI.
    ratio_labels: bool


class Engine(Protocol):
    """How one measurement worker times batches of checked configs against the default."""

    traits: ClassVar[Traits]

    def ready(self, info: DefaultInfo) -> DefaultInfo:
        """The worker's "ready" message, completed (fixed: with the default timed alone)."""

    def extras(self) -> list[TimedItem]:
        """Items timed in every batch besides its configs (paired: the A/A control); their
        results are appended to the batch's results."""

    def load(self, items: list[TimedItem]) -> LoadedBatch:
        """Load the copies to time and run each once (its first run allocates; compile
        workers still running). May come seconds before ``warm`` (``Batch.hold``)."""

    def warm(self, loaded: LoadedBatch) -> None:
        """The warm-up runs, just before ``label`` (compile workers still running)."""

    def label(self, message: Batch, loaded: LoadedBatch, items: list[TimedItem]
              ) -> list[ConfigResult]:
        """Time the loaded runs (compile workers stopped): the items' results with their
        labels, in item order (``dataclasses.replace`` of ``TimedItem.result``)."""


def bind_copies(exes: list[Any], sets: list[list[Any]], run: Callable[[Any, list[Any]], object]
                ) -> list[Run]:
    """Copy j of a program runs on argument set j mod ``len(sets)``.

    Where the arguments sit in memory is one draw per set, and it changes some configs'
    speed: with one set per process, resnet18 configs read bimodal between processes (+0.4%
    or +3.3% for the same config) while their copies agreed inside each process. With a set
    per copy that draw varies between copies, so the copies' spread measures it and their
    mean averages it (docs/design/label-engine.md, step 3). Copy j of the default and of
    every config share set j, as they share a round."""
    return [functools.partial(run, exe, sets[j % len(sets)]) for j, exe in enumerate(exes)]
