"""Child-process bodies of the pipelined engine: a compile worker and a measurement worker.

Both exit quietly when the parent goes away (pipe closed or PR_SET_PDEATHSIG), never leaving a
collection's CPU time to orphans.

Test-only fault injection: the environment variable ``TGT_TEST_FAULTS`` (JSON, config index →
``crash`` | ``hang`` | ``raise`` | ``crash_run`` | ``native_exit`` | ``native_raise``: native
output on fd 2, then exit 1 or raise) is read here, by the worker entry points only,
and stands in for real compiler crashes and hangs. No product type carries a fault.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tpugraphs_tools import _xla_compat as X
from tpugraphs_tools.measure.engines import (
    DefaultProgram,
    Engine,
    LoadedBatch,
    TimedItem,
    make_engine,
)
from tpugraphs_tools.measure.messages import Batch, Compiled, DefaultInfo, Go, Job, SessionSpec
from tpugraphs_tools.measure.processes import (
    available_cpus,
    die_with_parent,
    pin,
    pinned,
    signal_all,
)
from tpugraphs_tools.measure.results import (
    COMPILE_ERROR,
    OK,
    REPEAT,
    RUNTIME_ERROR,
    WRONG_RESULT,
    ConfigResult,
)
from tpugraphs_tools.measure.round_board import RoundBoard
from tpugraphs_tools.measure.worker_logs import first_reason

if TYPE_CHECKING:
    from tpugraphs_tools.measure.apply import ConstraintSlot
    from tpugraphs_tools.measure.realized import Realized

# An error's text in the log: compiler errors can dump whole modules; the head says why.
ERROR_TEXT_LIMIT = 20000


def _message(exc: BaseException) -> str:
    """A config row's error: the first line that says why. The whole text goes to this
    worker's stderr, which is the collection's log (measure/worker_logs.py)."""
    text = f"{type(exc).__name__}: {exc}"
    reason = first_reason(text) or type(exc).__name__
    if reason != text.strip():
        print(text if len(text) < ERROR_TEXT_LIMIT else text[:ERROR_TEXT_LIMIT] + "…",
              file=sys.stderr, flush=True)
    return reason


FAULTS_ENV = "TGT_TEST_FAULTS"  # tests only (module docstring)


def _test_faults() -> dict[int, str]:
    """Config index -> injected fault, from ``TGT_TEST_FAULTS`` (tests only; empty otherwise)."""
    raw = os.environ.get(FAULTS_ENV)
    return {int(k): str(v) for k, v in json.loads(raw).items()} if raw else {}


def _inject(fault: str | None) -> None:
    """Test hooks standing in for real compiler crashes (SIGILL seen with oneDNN) and hangs."""
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if fault == "hang":
        time.sleep(3600)
    if fault == "raise":
        raise RuntimeError("injected compile failure")
    if fault in ("native_exit", "native_raise"):  # XLA's C++ logging: straight to fd 2
        os.write(2, b"E1205 10:00:00.000000  4242 config_assigner.cc:536] Could not get "
                    b"config for HLO: injected native failure\n"
                    b"    All configs failed during profiling (injected detail line)\n")
        if fault == "native_exit":
            os._exit(1)
        raise RuntimeError("INTERNAL: injected status line\ninjected second line")


def compile_and_read(text: str, signature: Any, options: dict[str, Any] | None,
                     spec: SessionSpec, slots: list[ConstraintSlot]
                     ) -> tuple[Any, Realized, str, str]:
    """Compile, read the optimized module back: (executable, realized, dedupe key, HLO text).

    The key is (optimized fingerprint, options), or with ``spec.dedupe_on_code`` (optimized
    fingerprint, generated machine code): then an option that changes nothing is a no-op.
    """
    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.measure import compile as C
    from tpugraphs_tools.measure.realized import code_key, options_key, realized_layouts

    code = None
    if spec.dedupe_on_code:
        exe, code = C.compile_with_code_hash(text, signature, options, spec.backend)
    else:
        exe = C.compile_text(text, signature, options, spec.backend)
    optimized_text = X.executable_hlo_text(exe)
    realized = realized_layouts(parse_hlo_text(optimized_text, source="optimized"), slots)
    if not spec.dedupe_on_code:
        return exe, realized, options_key(realized["fingerprint"], options), optimized_text
    key = code_key(realized["fingerprint"], code)
    return exe, {**realized, "code_hash": code}, key, optimized_text


def compile_main(conn: Any, spec: SessionSpec, cpus: set[int] | None) -> None:
    """Compile jobs, read back the optimized HLO, serialize the executable."""
    die_with_parent()
    pin(cpus)
    import jax

    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.measure.compile import entry_signature

    signature = entry_signature(parse_hlo_text(spec.base_text, source="default config"))
    device = jax.devices(spec.backend)[0]
    faults = _test_faults()
    while True:
        try:
            job: Job | SessionSpec | None = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        if isinstance(job, SessionSpec):  # the next graph of a collection (measure/reuse.py)
            spec = job
            signature = entry_signature(parse_hlo_text(spec.base_text, source="default config"))
            device = jax.devices(spec.backend)[0]
            continue
        options = spec.options if job.options is None else job.options
        try:
            start = time.perf_counter()
            if faults.get(job.index) != "crash_run":
                _inject(faults.get(job.index))
            exe, realized, key, optimized_text = compile_and_read(job.text, signature, options,
                                                                  spec, job.slots)
            conn.send(("compiled", Compiled(
                job.index, time.perf_counter() - start, realized, key,
                X.serialize_executable(exe, device),
                optimized_text if spec.return_optimized else None)))
        except Exception as exc:
            conn.send(("result", ConfigResult(job.index, COMPILE_ERROR, error=_message(exc))))
        if spec.fresh_compiler_per_job:
            return  # the parent starts a fresh worker for the next job


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

    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.measure import compile as C

    signature = C.entry_signature(parse_hlo_text(spec.base_text, source="default config"))
    inputs = C.make_inputs(signature, spec.seed, spec.backend)
    start = time.perf_counter()
    base, realized, key, optimized_text = compile_and_read(spec.base_text, signature,
                                                           spec.options, spec, [])
    compiled = DefaultInfo(time.perf_counter() - start, realized, key,
                           optimized_text=optimized_text if spec.return_optimized else None)
    default = DefaultProgram(spec, base, inputs, signature, jax.devices(spec.backend)[0], C.run)
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
        return ConfigResult.of(item, RUNTIME_ERROR, error=_message(exc))
    if not np.isfinite(error) or error > check.tolerance:
        return ConfigResult.of(item, WRONG_RESULT, max_abs_error=error,
                               error=(f"max abs error {error:.3g} vs default (tolerance "
                                      f"{check.tolerance:.3g})"))
    return TimedItem(ConfigResult.of(item, OK, max_abs_error=error), [exe], item.executable)


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
        conn.send(("init_error", _message(exc)))
        return None
    conn.send(("ready", ready))
    return engine, check


def measure_main(conn: Any, spec: SessionSpec, cpus: set[int] | None,
                 board: RoundBoard | None = None) -> None:
    """Hold the inputs and the default config; check and time batches of executables with
    the engine ``spec.engine`` names (measure/engines/), its rounds written on ``board``."""
    die_with_parent()
    pin(cpus)
    crash_runs = {i for i, fault in _test_faults().items() if fault == "crash_run"}
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
            # The next graph of a collection (measure/reuse.py): a new default and engine in
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
