"""The measurement worker: hold the default config, check and time batches with an engine.

It exits quietly when the parent goes away (pipe closed or PR_SET_PDEATHSIG), never leaving a
collection's CPU time to an orphan.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from tpugraphs_tools import _xla_compat as X
from tpugraphs_tools.compiler import compile_and_read, entry_signature, make_inputs, run
from tpugraphs_tools.hlo import parse_hlo_text
from tpugraphs_tools.measure.engines import (
    DefaultProgram,
    Engine,
    LoadedBatch,
    TimedItem,
    make_engine,
)
from tpugraphs_tools.measure.messages import Batch, Compiled, DefaultInfo, Go, SessionSpec
from tpugraphs_tools.measure.results import (
    OK,
    REPEAT,
    RUNTIME_ERROR,
    WRONG_RESULT,
    ConfigResult,
)
from tpugraphs_tools.measure.workers.faults import error_message, injected_faults
from tpugraphs_tools.measure.workers.processes import (
    available_cpus,
    die_with_parent,
    pin,
    pinned,
    signal_all,
)
from tpugraphs_tools.measure.workers.round_board import RoundBoard


@dataclass
class _NumericsCheck:
    """A config's outputs must match the default's within ``tolerance`` (absolute), which is
    ``spec.rtol`` times the largest default output (at least 1)."""

    default: DefaultProgram
    reference: list[np.ndarray]
    tolerance: float

    @classmethod
    def of(cls, default: DefaultProgram) -> _NumericsCheck:
        reference = [np.asarray(o) for o in default.run_once()]
        scale = max([1.0] + [float(np.max(np.abs(r.astype(np.float64)))) for r in reference
                             if r.size])
        return cls(default, reference, default.spec.rtol * scale)

    def max_error(self, exe: Any) -> float:
        outputs = [np.asarray(o) for o in self.default.run(exe, self.default.inputs)]
        errors = [float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                  for a, b in zip(outputs, self.reference, strict=True) if a.size]
        return max(errors, default=0.0)


def _start_default(spec: SessionSpec, board: RoundBoard | None = None
                   ) -> tuple[Engine, _NumericsCheck, DefaultInfo]:
    """Compile the default config, run it once for the numerics reference, start the engine
    (which writes its rounds on ``board``)."""
    import jax

    signature = entry_signature(parse_hlo_text(spec.base_text, source="default config"))
    inputs = make_inputs(signature, spec.seed, spec.backend)
    start = time.perf_counter()
    base, realized, key, optimized_text = compile_and_read(
        spec.base_text, signature, spec.options, backend=spec.backend,
        dedupe_on_code=spec.dedupe_on_code, slots=[])
    compiled = DefaultInfo(time.perf_counter() - start, realized, key,
                           optimized_text=optimized_text if spec.return_optimized else None)
    default = DefaultProgram(spec, base, inputs, signature, jax.devices(spec.backend)[0], run)
    check = _NumericsCheck.of(default)
    engine = make_engine(default, None if board is None else board.round)
    return engine, check, engine.ready(compiled)


def _check_item(item: Compiled, check: _NumericsCheck, crash_runs: set[int]
                ) -> ConfigResult | TimedItem:
    """The item to time if its numerics pass, else its failed result."""
    if item.index in crash_runs and item.repeat_of is None:
        os.kill(os.getpid(), signal.SIGSEGV)
    try:
        exe = X.deserialize_executable(item.executable, check.default.device)
        error = check.max_error(exe)
    except Exception as exc:
        return item.result(RUNTIME_ERROR, error=error_message(exc))
    if not np.isfinite(error) or error > check.tolerance:
        return item.result(WRONG_RESULT, max_abs_error=error,
                               error=(f"max abs error {error:.3g} vs default (tolerance "
                                      f"{check.tolerance:.3g})"))
    return TimedItem(item.result(OK, max_abs_error=error), [exe], item.executable)


@dataclass
class _Loaded:
    """A batch checked and loaded, waiting to be timed (at once, or on a ``Go``)."""

    message: Batch
    checked: list[ConfigResult | TimedItem]   # item order, the engine's extras last
    items: list[TimedItem]
    loaded: LoadedBatch | None                # None: nothing passed the check
    busy_seconds: float                       # the worker's time so far on this batch


def _load_batch(message: Batch, engine: Engine, check: _NumericsCheck,
                crash_runs: set[int]) -> _Loaded:
    """Check ``message``'s items and load the ones to time (compile workers running)."""
    start = time.perf_counter()
    checked = [_check_item(item, check, crash_runs) for item in message.items]
    checked += engine.extras()
    items = [c for c in checked if isinstance(c, TimedItem)]
    loaded = engine.load(items) if items else None
    return _Loaded(message, checked, items, loaded, time.perf_counter() - start)


def _time_batch(batch: _Loaded, engine: Engine, cpus: set[int] | None = None,
                board: RoundBoard | None = None) -> list[ConfigResult]:
    """Warm up and label a loaded batch with the compile workers stopped for the timed part
    (on ``cpus`` where given); results in item order, the engine's extras last."""
    start = time.perf_counter()
    labelled: list[ConfigResult] = []
    paused = 0.0
    if board is not None:
        board.begin()
    with pinned(cpus):
        timing_cpus = len(available_cpus())   # what this process may run on while timing
        if batch.loaded is not None:
            try:
                labelled, paused = _warm_and_label(batch, engine)
            finally:
                if board is not None:
                    board.idle()
    timed = iter(dataclasses.replace(r, status=REPEAT if r.repeat_of is not None else r.status,
                                     timing_cpus=timing_cpus) for r in labelled)
    results = [next(timed) if isinstance(c, TimedItem) else c for c in batch.checked]
    busy = batch.busy_seconds + time.perf_counter() - start
    # The measurement worker's busy time, shared by the batch.
    return [dataclasses.replace(r, measure_seconds=busy / len(results), paused_seconds=paused)
            for r in results]


def _warm_and_label(batch: _Loaded, engine: Engine) -> tuple[list[ConfigResult], float]:
    """The engine's warm-up, then its labels with the compile workers stopped; the labels and
    the seconds the compile workers were stopped."""
    assert batch.loaded is not None
    engine.warm(batch.loaded)
    stop = time.perf_counter()
    signal_all(batch.message.pause, signal.SIGSTOP)
    try:
        labelled = engine.label(batch.message, batch.loaded, batch.items)
    finally:
        signal_all(batch.message.pause, signal.SIGCONT)
    return labelled, time.perf_counter() - stop if batch.message.pause else 0.0


def _go(batch: _Loaded, go: Go) -> _Loaded:
    """The held batch with what the processes timed before this one settled."""
    message = dataclasses.replace(batch.message, pause=go.pause,
                                  runs_per_sample=go.runs_per_sample,
                                  process_var=go.process_var, hold=False)
    return dataclasses.replace(batch, message=message)


def _start_and_report(conn: Any, spec: SessionSpec, board: RoundBoard | None = None
                      ) -> tuple[Engine, _NumericsCheck] | None:
    """Start ``spec``'s default and tell the parent ("ready", or "init_error" and None)."""
    try:
        engine, check, ready = _start_default(spec, board)
    except Exception as exc:
        conn.send(("init_error", error_message(exc)))
        return None
    conn.send(("ready", ready))
    return engine, check


def measure_main(conn: Any, spec: SessionSpec, cpus: set[int] | None,
                 board: RoundBoard | None = None) -> None:
    """Hold the inputs and the default config; check and time batches of executables with
    the engine ``spec.engine`` names (measure/engines/), its rounds written on ``board``."""
    die_with_parent()
    pin(cpus)
    crash_runs = {i for i, fault in injected_faults().items() if fault == "crash_run"}
    started = _start_and_report(conn, spec, board)
    if started is None:
        return
    engine, check = started
    held: _Loaded | None = None    # a batch loaded on hold, waiting for its Go
    while True:
        try:
            message: Batch | Go | SessionSpec | None = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        if isinstance(message, SessionSpec):
            # The next graph of a collection (measure/measurer.py): a new default and engine in
            # this warm process, no new jax start-up. The old engine's programs are dropped.
            del engine, check
            held = None
            started = _start_and_report(conn, message, board)
            if started is None:
                return
            engine, check = started
            continue
        if isinstance(message, Go):
            batch, held = held, None
            if batch is None or message.cancel:
                continue
            results = _time_batch(_go(batch, message), engine, message.cpus, board)
        elif message.hold:
            held = _load_batch(message, engine, check, crash_runs)
            conn.send(("loaded", None))
            continue
        else:
            results = _time_batch(_load_batch(message, engine, check, crash_runs), engine,
                                  board=board)
        try:
            conn.send(("results", results))
        except (BrokenPipeError, OSError):
            return
