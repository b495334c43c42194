"""Where the batch being timed stands, for a person watching ``tgt collect``.

A timing batch can run for minutes (resnet50: 16 configs in four measurement processes, ~5
minutes on two cores) and returns its results only at its end, so a bar fed by results alone
stood still for that long. Each measurement process gets a :class:`RoundBoard`: a few counters
in shared memory that its engine updates after every round (a store, no message and no system
call inside the timed section) and that the parent reads whenever its loop wakes, at least
once a second, to report a :class:`BatchProgress`.
"""

from __future__ import annotations

from dataclasses import dataclass
from multiprocessing.sharedctypes import RawArray
from typing import Any

_TIMING, _ROUNDS, _ACTIVE = range(3)


@dataclass(frozen=True)
class Reading:
    """One process's counters: timing (its rounds have begun), rounds done, configs still
    given rounds (the A/A control and re-timed configs not counted)."""

    timing: bool
    rounds: int
    active: int


class RoundBoard:
    """Counters one measurement process writes and its parent reads (passed to the process
    when it starts; a fresh board per process)."""

    def __init__(self) -> None:
        self._cells: Any = RawArray("q", 3)

    # -- the measurement process -------------------------------------------------------------
    def begin(self) -> None:
        """A batch's warm-up starts: no rounds yet."""
        self._cells[_TIMING] = 0
        self._cells[_ROUNDS] = 0

    def round(self, rounds: int, active: int) -> None:
        """After round ``rounds`` (0: before the first), ``active`` configs still timed."""
        self._cells[_ROUNDS] = rounds
        self._cells[_ACTIVE] = active
        self._cells[_TIMING] = 1

    def idle(self) -> None:
        """The batch's rounds are over; its counts stay until the next :meth:`begin`."""
        self._cells[_TIMING] = 0

    # -- the parent ------------------------------------------------------------------------
    def read(self) -> Reading:
        return Reading(bool(self._cells[_TIMING]), int(self._cells[_ROUNDS]),
                       int(self._cells[_ACTIVE]))


@dataclass(frozen=True)
class BatchProgress:
    """The timing batch out now, as the measurer's parent sees it between results."""

    number: int                  # 1-based, in this graph's measurement
    indices: tuple[int, ...]     # its configs (the results that end it)
    processes: int               # measurement processes that each time it in turn
    process: int                 # 1-based: the (first) process timing it now; 0: loading
    lanes: int = 1               # processes timing it at once
    rounds: int = 0              # rounds the process(es) timing it now have done
    settled: int = 0             # of its configs, those that need no more rounds there
    loaded: int = 0              # while loading: the processes that hold it loaded

    @property
    def configs(self) -> int:
        return len(self.indices)


def batch_progress(number: int, indices: tuple[int, ...], processes: int, timing: list[int],
                   readings: list[Reading], loaded: int = 0) -> BatchProgress:
    """What the processes timing now (``timing``, 0-based slots, and their ``readings``)
    say; before any of them has begun its rounds, the batch is loading (in ``loaded``
    processes so far) or warming up."""
    started = [r for r in readings if r.timing or r.rounds]
    if not timing or not started:
        return BatchProgress(number, indices, processes, timing[0] + 1 if timing else 0,
                             max(1, len(timing)), loaded=0 if timing else loaded)
    active = max(r.active for r in started)
    return BatchProgress(number, indices, processes, timing[0] + 1, len(timing),
                         rounds=min(r.rounds for r in started),
                         settled=max(0, len(indices) - active))
