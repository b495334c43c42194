"""What a measurer is told (``Session``: the spec and ``PipelineOptions``), what it keeps
about the graph it measures (``GraphState``: the repeat pool, the between-process spread, the
wave of processes timing a batch), and what one run of its event loop tracks between steps
(``RunState``): records only, so the measurer and its two sides hold the logic."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from tpugraphs_tools.measure.messages import Batch, Compiled, DefaultInfo, Job, SessionSpec
from tpugraphs_tools.measure.results import ConfigResult
from tpugraphs_tools.measure.stats.replicas import ProcessSpread


@dataclass
class PipelineOptions:
    """How the workers are driven (derived from MeasureOptions in measure/sessions.py)."""

    compile_workers: int = 1
    timing_batch: int = 16    # configs timed together against one default per round
    timeout_s: float = 120.0
    isolation: str = "auto"   # auto | pin | pause | none (processes.resolve_isolation)
    lookahead: int = 8
    # Paired engine: measurement processes that time a batch at the same time, each pinned
    # to a CPU of its own (processes.lanes_for); 1: one after another on every CPU.
    timing_lanes: int = 1


@dataclass(frozen=True)
class Session:
    """What a measurer is told about one graph (or kernel): its workers' spec and how they
    are driven (built by ``sessions.py``)."""

    spec: SessionSpec
    pipeline: PipelineOptions = field(default_factory=PipelineOptions)


@dataclass
class Wave:
    """The timing side's hold on the measurement processes while a batch is out."""

    phase: int = 0                                   # the process timing now (first of a wave)
    holding: set[int] = field(default_factory=set)   # processes holding a loaded batch
    timing: list[int] = field(default_factory=list)  # processes timing the batch now
    results: dict[int, list[ConfigResult]] = field(default_factory=dict)  # of those done
    paused_at: float | None = None   # when the parent stopped the compilers for a lane wave


@dataclass
class GraphState:
    """Everything a measurer keeps about the graph it measures now: moving on to another
    graph replaces it whole (:meth:`fresh`), so nothing of one graph leaks into the next."""

    spec: SessionSpec
    repeats: RepeatPool
    spread: ProcessSpread = field(default_factory=ProcessSpread)
    default_info: DefaultInfo | None = None
    wave: Wave = field(default_factory=Wave)
    batches: int = 0   # timing batches sent (numbered in BatchProgress)

    @classmethod
    def fresh(cls, spec: SessionSpec, repeats_per_batch: int) -> GraphState:
        """The state of a graph nothing was measured of yet (``repeats_per_batch``: the
        engine's ``Traits``)."""
        return cls(spec, RepeatPool(repeats_per_batch))

    def ready(self, slot: int, info: DefaultInfo) -> None:
        """The measurement process in ``slot`` compiled and checked the default: the first
        process's (or the first to answer) stands for the graph's."""
        if slot == 0 or self.default_info is None:
            self.default_info = info


@dataclass
class Compiling:
    job: Job
    started: float


@dataclass
class RunState:
    """What one ``Measurer.run`` tracks between the steps of its event loop."""

    todo: deque[Job]
    compiling: dict[int, Compiling] = field(default_factory=dict)  # compiler slot -> job
    compiled: deque[Compiled] = field(default_factory=deque)  # waiting to be timed
    singles: deque[Compiled] = field(default_factory=deque)   # retried alone after a crash
    batch: list[Compiled] = field(default_factory=list)       # being timed
    batch_started: float = 0.0
    message: Batch = field(default_factory=lambda: Batch([]))
    timed_by: list[list[ConfigResult]] = field(default_factory=list)  # results per process
    # fresh_compiler_per_job: slots whose worker exited, restarted once no round is timed
    # (a new process is not in the round's pause list).
    recycle: set[int] = field(default_factory=set)
    spent: float = 0.0  # timed seconds of the graph's budget spent, per measurement process

    @property
    def busy(self) -> bool:
        return bool(self.todo or self.compiling or self.compiled or self.singles
                    or self.batch)


# Configs timed ok kept to be timed again (``repeat`` rows): the latest few only, as their
# serialized executables are big.
REPEAT_POOL = 8


@dataclass
class RepeatPool:
    """Configs of earlier batches timed again in a later one (paired engine), so the labels'
    CIs can include the variance between timing windows (collect/labels.py widens them)."""

    per_batch: int
    timed_ok: list[Compiled] = field(default_factory=list)
    sent: int = 0

    def keep(self, items: Iterable[Compiled]) -> None:
        self.timed_ok = [*self.timed_ok, *items][-REPEAT_POOL:]

    def pick(self, singles: deque[Compiled]) -> list[Compiled]:
        """The next few, in turn; none while configs are being retried one at a time."""
        if not self.per_batch or not self.timed_ok or singles:
            return []
        picked = []
        for _ in range(min(self.per_batch, len(self.timed_ok))):
            item = self.timed_ok[self.sent % len(self.timed_ok)]
            self.sent += 1
            picked.append(replace(item, repeat_of=item.index))
        return picked
