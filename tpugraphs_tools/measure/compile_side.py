"""The compile side of the measurement loop: jobs to the compile workers, compiled configs back.

Why apart from the timing side (``timing_side.py``): feeding compile workers and settling what
they return (no-ops and duplicates are decided here, before anything is timed) touches only
the compile workers and the run's queues, never a measurement process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from tpugraphs_tools.measure.results import CRASH, DUPLICATE, NOOP, TIMEOUT, ConfigResult
from tpugraphs_tools.measure.run_state import Compiling, RunState
from tpugraphs_tools.measure.workers.pool import WorkerPool

OnResult = Callable[[ConfigResult], None]


class CompileSide:
    """The compile half of a :class:`~tpugraphs_tools.measure.measurer.Measurer`: it drives
    the pool's compile workers."""

    def __init__(self, pool: WorkerPool) -> None:
        self.pool = pool

    def recycle(self, state: RunState) -> None:
        """Start fresh compile workers in the slots whose worker exited after its job."""
        for slot in state.recycle:
            self.pool.replace_compiler(slot, restart=False)
        state.recycle.clear()

    def feed(self, state: RunState) -> None:
        """Give every idle compile worker a job while the look-ahead window has room."""
        in_flight = len(state.compiling) + len(state.compiled) + len(state.batch)
        for slot, proc in enumerate(self.pool.compilers):
            if (slot not in state.compiling and slot not in state.recycle and state.todo
                    and in_flight < self.pool.opts.lookahead):
                job = state.todo.popleft()
                proc.mark()
                proc.conn.send(job)
                state.compiling[slot] = Compiling(job, time.monotonic())
                in_flight += 1

    def receive(self, state: RunState, ready: Sequence[object], known: dict[str, int],
                on_result: OnResult) -> None:
        """Take in compiled configs (no-ops and duplicates are settled here), crashes and
        timed-out compiles."""
        timeout = self.pool.opts.timeout_s
        for slot in list(state.compiling):
            proc = self.pool.compilers[slot]
            if proc.conn in ready:
                flight = state.compiling.pop(slot)
                try:
                    kind, payload = proc.conn.recv()
                except (EOFError, ConnectionError):
                    on_result(ConfigResult(flight.job.index, CRASH,
                                           error=proc.exit_description()))
                    self.pool.replace_compiler(slot)
                    continue
                if kind == "result":
                    on_result(payload)
                elif payload.key in known:
                    first = known[payload.key]
                    on_result(payload.result(NOOP if first == 0 else DUPLICATE,
                                             duplicate_of=first))
                else:
                    known[payload.key] = payload.index
                    state.compiled.append(payload)
                if self.pool.spec.fresh_compiler_per_job:
                    state.recycle.add(slot)
            elif time.monotonic() - state.compiling[slot].started > timeout:
                flight = state.compiling.pop(slot)
                on_result(ConfigResult(flight.job.index, TIMEOUT,
                                       error=f"compile gave no result within {timeout:.0f}"
                                             " s; worker killed"))
                self.pool.replace_compiler(slot)
