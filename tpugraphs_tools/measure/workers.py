"""Child-process bodies of the pipelined engine: a compile worker and a measurement worker.

Both exit quietly when the parent goes away (pipe closed or PR_SET_PDEATHSIG), never leaving a
collection's CPU time to orphans.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from tpugraphs_tools import _xla_compat as X
from tpugraphs_tools.measure.processes import die_with_parent, pin, signal_all
from tpugraphs_tools.measure.worker import (
    COMPILE_ERROR,
    CONTROL,
    OK,
    REPEAT,
    RUNTIME_ERROR,
    WRONG_RESULT,
    Job,
    SessionSpec,
)


def _message(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 2000 else text[:2000] + "…"


def _inject(fault: str | None) -> None:
    """Test hooks standing in for real compiler crashes (SIGILL seen with oneDNN) and hangs."""
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if fault == "hang":
        time.sleep(3600)
    if fault == "raise":
        raise RuntimeError("injected compile failure")


def compile_and_read(text: str, signature: Any, options: dict[str, Any] | None,
                     spec: SessionSpec, slots: list[dict[str, Any]]
                     ) -> tuple[Any, dict[str, Any], str, str]:
    """Compile, read the optimized module back: (executable, realized, dedupe key, HLO text).

    The key is (optimized fingerprint, options), or with ``spec.dedupe_on_code`` (optimized
    fingerprint, generated machine code): then an option that changes nothing is a no-op.
    """
    from tpugraphs_tools.hlo.text import parse_hlo_text
    from tpugraphs_tools.measure import compile as C
    from tpugraphs_tools.measure.realized import options_key, realized_layouts

    code = None
    if spec.dedupe_on_code:
        exe, code = C.compile_with_code_hash(text, signature, options, spec.backend)
    else:
        exe = C.compile_text(text, signature, options, spec.backend)
    optimized_text = X.executable_hlo_text(exe)
    realized = realized_layouts(parse_hlo_text(optimized_text, source="optimized"), slots)
    if spec.dedupe_on_code:
        realized["code_hash"] = code
        # No dumped code means library/runtime thunks only: the HLO decides everything.
        key = options_key(f"{realized['fingerprint']}:{code or 'no-code'}", None)
    else:
        key = options_key(realized["fingerprint"], options)
    return exe, realized, key, optimized_text


def compile_main(conn: Any, spec: SessionSpec, cpus: set[int] | None) -> None:
    """Compile jobs, read back the optimized HLO, serialize the executable."""
    die_with_parent()
    pin(cpus)
    import jax

    from tpugraphs_tools.hlo.text import parse_hlo_text
    from tpugraphs_tools.measure.compile import entry_signature

    signature = entry_signature(parse_hlo_text(spec.base_text, source="default config"))
    device = jax.devices(spec.backend)[0]
    while True:
        try:
            job: Job | None = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        options = spec.options if job.options is None else job.options
        try:
            start = time.perf_counter()
            if job.fault != "crash_run":
                _inject(job.fault)
            exe, realized, key, optimized_text = compile_and_read(job.text, signature, options,
                                                                  spec, job.slots)
            payload = {"index": job.index, "compile_seconds": time.perf_counter() - start,
                       "realized": realized, "key": key, "fault": job.fault,
                       "executable": X.serialize_executable(exe, device)}
            if spec.return_optimized:
                payload["optimized_text"] = optimized_text
            conn.send(("compiled", payload))
        except Exception as exc:
            conn.send(("result", {"index": job.index, "status": COMPILE_ERROR,
                                  "error": _message(exc)}))
        if spec.fresh_compiler_per_job:
            return  # the parent starts a fresh worker for the next job


def paired_labels(reference: list[Any], runs: list[list[Any]], spec: SessionSpec, k: int,
                  context: Any, placement: Any, waiting: list[int]) -> list[dict[str, Any]]:
    """Time ``runs`` against ``reference`` in paired rounds; each is a list of loaded copies
    of one program (``spec.stop.copies``). ``waiting`` (the A/A control, a repeated config)
    are timed as long as the batch runs and never stop it."""
    from tpugraphs_tools.measure.paired import time_paired, timed_sample
    from tpugraphs_tools.measure.timing import Timing

    def sample(i: int, copy: int) -> tuple[float, float]:
        copies = reference if i < 0 else runs[i]
        return timed_sample(copies[copy % len(copies)], k)

    batch = time_paired(sample, len(runs), spec.stop, [tuple(c) for c in context],
                        control=waiting, adaptive=spec.adaptive, placement=placement)
    default = Timing.of([round(x) for x in batch.default_ns]).as_dict()
    labels = []
    for i in range(len(runs)):
        ratio = batch.ratio(i, spec.stop.confidence)
        labels.append({"timing": Timing.of([round(x) for x in batch.config_ns[i]]).as_dict(),
                       "default_timing": default, "relative_to_default": ratio.ratio,
                       "relative_ci_low": ratio.low, "relative_ci_high": ratio.high,
                       "rounds": ratio.rounds, "stop_reason": batch.stop_reason[i],
                       "runs_per_sample": k, "timed_seconds": batch.seconds[i]})
    return labels


def measure_main(conn: Any, spec: SessionSpec, cpus: set[int] | None) -> None:
    """Hold the inputs and the default config; check and time batches of executables."""
    die_with_parent()
    pin(cpus)
    import jax
    import numpy as np

    from tpugraphs_tools.hlo.text import parse_hlo_text
    from tpugraphs_tools.measure import compile as C
    from tpugraphs_tools.measure.paired import Placement, calibrate
    from tpugraphs_tools.measure.timing import time_alone, time_batch

    control: list[Any] = []
    runs_per_sample = None
    placement = Placement()

    try:
        module = parse_hlo_text(spec.base_text, source="default config")
        signature = C.entry_signature(module)
        inputs = C.make_inputs(signature, spec.seed, spec.backend)
        start = time.perf_counter()
        base, realized, key, optimized_text = compile_and_read(spec.base_text, signature,
                                                               spec.options, spec, [])
        base_compile = time.perf_counter() - start
        reference = [np.asarray(o) for o in C.run(base, inputs)]
        ready = {"compile_seconds": base_compile, "realized": realized, "key": key}
        if spec.engine == "paired":
            # No solo timing here (compile workers are starting up): the sample size k is
            # calibrated in the first batch's quiet window. The timed default and the A/A
            # control are independently loaded copies of the default that take the configs'
            # path (serialized, deserialized), so no label carries a load-path difference.
            first = jax.devices(spec.backend)[0]
            blob = X.serialize_executable(base, first)
            bases = [X.deserialize_executable(blob, first)
                     for _ in range(2 * max(1, spec.stop.copies))]
            control = [X.deserialize_executable(blob, first)
                       for _ in range(max(1, spec.stop.copies))]
            base = bases[0]
        else:
            bases = [base]
            ready["timing"] = time_alone(lambda: C.run(base, inputs), spec.warmup,
                                         spec.repeats).as_dict()
        if spec.return_optimized:
            ready["optimized_text"] = optimized_text
        conn.send(("ready", ready))
    except Exception as exc:
        conn.send(("init_error", _message(exc)))
        return
    device = jax.devices(spec.backend)[0]
    scale = max([1.0] + [float(np.max(np.abs(r.astype(np.float64)))) for r in reference
                         if r.size])
    tolerance = spec.rtol * scale

    def check(exe: Any) -> float:
        outputs = [np.asarray(o) for o in C.run(exe, inputs)]
        errors = [float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                  for a, b in zip(outputs, reference, strict=True) if a.size]
        return max(errors, default=0.0)

    while True:
        try:
            message: dict[str, Any] | None = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        batch, pause = message["items"], message.get("pause", [])
        results: list[dict[str, Any]] = []
        timed: list[tuple[dict[str, Any], Any]] = []
        batch_start = time.perf_counter()
        for item in batch:
            result = {k: item[k] for k in ("index", "compile_seconds", "realized", "key",
                                           "optimized_text", "repeat_of") if k in item}
            results.append(result)
            if item.get("fault") == "crash_run":
                os.kill(os.getpid(), signal.SIGSEGV)
            try:
                exe = X.deserialize_executable(item["executable"], device)
                error = check(exe)
            except Exception as exc:
                result.update(status=RUNTIME_ERROR, error=_message(exc))
                continue
            result["max_abs_error"] = error
            if not np.isfinite(error) or error > tolerance:
                result.update(status=WRONG_RESULT, error=f"max abs error {error:.3g} vs "
                              f"default (tolerance {tolerance:.3g})")
                continue
            exes = [exe]
            if spec.engine == "paired":  # more loaded copies: placement effects average out
                exes += [X.deserialize_executable(item["executable"], device)
                         for _ in range(spec.stop.copies - 1)]
            timed.append((result, exes))
        paused = 0.0
        if spec.engine == "paired":
            timed.append(({"index": None, "status": CONTROL}, control))
            results.append(timed[-1][0])
        if timed:
            copies = [[lambda e=e: C.run(e, inputs) for e in exes] for _, exes in timed]
            defaults = [lambda e=e: C.run(e, inputs) for e in bases]
            runs = [c[0] for c in copies]
            # The numerics check above already ran each config once: it is the first warm-up.
            # Further loaded copies run once here (their first run is cold).
            for fn in [f for c in copies for f in c[1:]]:
                fn()
            for _ in range(max(0, spec.warmup - 1)):  # compile workers keep running here
                for fn in [*defaults, *runs]:
                    fn()
            stop = time.perf_counter()
            signal_all(pause, signal.SIGSTOP)
            try:
                if spec.engine == "paired":
                    if runs_per_sample is None:  # once per graph, compile workers stopped
                        runs_per_sample = calibrate(lambda: C.run(base, inputs),
                                                    spec.min_sample_ms * 1e6)
                    waiting = [i for i, (r, _) in enumerate(timed)
                               if r.get("status") == CONTROL or "repeat_of" in r]
                    labels = paired_labels(defaults, copies, spec, runs_per_sample,
                                           message.get("context", ()), placement, waiting)
                else:
                    ref, cands = time_batch(lambda: C.run(base, inputs), runs, 0, spec.repeats)
                    labels = [{"status": OK, "timing": t.as_dict(),
                               "default_timing": ref.as_dict()} for t in cands]
            finally:
                signal_all(pause, signal.SIGCONT)
                paused = time.perf_counter() - stop if pause else 0.0
            for (result, _), label in zip(timed, labels, strict=True):
                result.update(label, status=REPEAT if "repeat_of" in result
                              else result.get("status", OK))
        busy = time.perf_counter() - batch_start
        for result in results:  # the measurement worker's busy time, shared by the batch
            result["measure_seconds"] = busy / len(results)
            result["paused_seconds"] = paused
        try:
            conn.send(("results", results))
        except (BrokenPipeError, OSError):
            return
