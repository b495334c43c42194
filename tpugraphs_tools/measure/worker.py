"""Compile and time configs in a worker process, so compiler crashes and hangs become data.

XLA:CPU was seen dying with SIGILL on some option sets; a config must never take the whole
collection down. The parent sends one job at a time over a pipe and waits with a timeout; a
dead worker yields a ``crash`` record, a silent one is killed and yields ``timeout``, and a
fresh worker is started (re-placing inputs and re-compiling the default) for the next job.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

OK, NOOP, DUPLICATE = "ok", "noop", "duplicate"
COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT, CRASH, WRONG_RESULT = (
    "compile_error", "runtime_error", "timeout", "crash", "wrong_result")


@dataclass
class SessionSpec:
    """What a worker needs to measure configs of one graph."""

    base_text: str
    backend: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    warmup: int = 2
    repeats: int = 10
    rtol: float = 1e-3
    # Tile collection: dedupe on (optimized HLO, generated machine code) instead of
    # (optimized HLO, options), so an option that changes nothing is a no-op (compile.py).
    # Only valid for options that act through the HLO or the generated code.
    dedupe_on_code: bool = False
    return_optimized: bool = False  # send the optimized HLO text back with each result


@dataclass
class Job:
    index: int
    text: str
    nodes: list[str] = field(default_factory=list)
    options: dict[str, Any] | None = None
    known: dict[str, int] = field(default_factory=dict)  # dedupe key -> config index
    fault: str | None = None  # tests only: "crash" | "hang" | "raise"


def _worker_main(conn: Any, spec: SessionSpec) -> None:
    """Worker loop (runs in the child): init the default config, then answer jobs."""
    from tpugraphs_tools.hlo.text import parse_hlo_text
    from tpugraphs_tools.measure import compile as C
    from tpugraphs_tools.measure.realized import options_key, realized_layouts
    from tpugraphs_tools.measure.timing import time_alone, time_interleaved

    def compile_and_read(text: str, options: dict[str, Any] | None, nodes: list[str]
                         ) -> tuple[Any, dict[str, Any], str, str]:
        if spec.dedupe_on_code:
            exe, code = C.compile_with_code_hash(text, signature, options, spec.backend)
        else:
            exe, code = C.compile_text(text, signature, options, spec.backend), None
        opt_text = exe.hlo_modules()[0].to_string()
        real = realized_layouts(parse_hlo_text(opt_text, source="optimized"), nodes)
        if spec.dedupe_on_code:
            real["code_hash"] = code
            # No dumped code means library/runtime thunks only: the HLO decides everything.
            key = options_key(f"{real['fingerprint']}:{code or 'no-code'}", None)
        else:
            key = options_key(real["fingerprint"], options)
        return exe, real, key, opt_text

    try:
        module = parse_hlo_text(spec.base_text, source="default config")
        signature = C.entry_signature(module)
        inputs = C.make_inputs(signature, spec.seed, spec.backend)
        start = time.perf_counter()
        base, base_real, base_key, base_text = compile_and_read(spec.base_text, spec.options, [])
        base_compile = time.perf_counter() - start
        reference = [o.__array__() for o in C.run(base, inputs)]
        base_time = time_alone(lambda: C.run(base, inputs), spec.warmup, spec.repeats)
        ready = {"compile_seconds": base_compile, "timing": base_time.as_dict(),
                 "realized": base_real, "key": base_key}
        if spec.return_optimized:
            ready["optimized_text"] = base_text
        conn.send(("ready", ready))
    except Exception as exc:
        conn.send(("init_error", f"{type(exc).__name__}: {exc}"))
        return
    import numpy as np

    while True:
        job: Job | None = conn.recv()
        if job is None:
            return
        result: dict[str, Any] = {"index": job.index}
        if job.fault == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if job.fault == "hang":
            time.sleep(3600)
        try:
            start = time.perf_counter()
            if job.fault == "raise":
                raise RuntimeError("injected compile failure")
            options = spec.options if job.options is None else job.options
            exe, real, key, opt_text = compile_and_read(job.text, options, job.nodes)
            result["compile_seconds"] = time.perf_counter() - start
            result["realized"] = real
            result["key"] = key
            if spec.return_optimized:
                result["optimized_text"] = opt_text
            if key in job.known:
                result["status"] = NOOP if job.known[key] == 0 else DUPLICATE
                result["duplicate_of"] = job.known[key]
                conn.send(("result", result))
                continue
        except Exception as exc:
            result.update(status=COMPILE_ERROR, error=_message(exc))
            conn.send(("result", result))
            continue
        try:
            outputs = [o.__array__() for o in C.run(exe, inputs)]
            error = max((float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                         if a.size else 0.0) for a, b in zip(outputs, reference, strict=True))
            scale = max(1.0, max(float(np.max(np.abs(r.astype(np.float64)))) if r.size else 0.0
                                 for r in reference))
            result["max_abs_error"] = error
            if not np.isfinite(error) or error > spec.rtol * scale:
                result.update(status=WRONG_RESULT,
                              error=f"max abs error {error:.3g} vs default (tolerance "
                                    f"{spec.rtol * scale:.3g})")
                conn.send(("result", result))
                continue
            ref_t, cand_t = time_interleaved(lambda: C.run(base, inputs),
                                             lambda ex=exe: C.run(ex, inputs),
                                             spec.warmup, spec.repeats)
            result.update(status=OK, timing=cand_t.as_dict(), default_timing=ref_t.as_dict())
        except Exception as exc:
            result.update(status=RUNTIME_ERROR, error=_message(exc))
        conn.send(("result", result))


def _message(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 2000 else text[:2000] + "…"


class WorkerError(RuntimeError):
    """The default config itself could not be compiled or run: nothing can be measured."""


class IsolatedMeasurer:
    """Parent-side handle: one live worker per graph, restarted after a crash or timeout."""

    def __init__(self, spec: SessionSpec, timeout_s: float = 120.0) -> None:
        self.spec = spec
        self.timeout_s = timeout_s
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Any = None
        self.default_info: dict[str, Any] = {}
        self.restarts = 0

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker_main, args=(child, self.spec), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        if not parent.poll(self.timeout_s * 2 + 60):
            self._kill()
            raise WorkerError("worker did not finish compiling the default config in time")
        try:
            kind, payload = parent.recv()
        except EOFError:
            code = self._proc.exitcode
            self._kill()
            raise WorkerError(f"worker died while compiling the default config "
                              f"(exit {code})") from None
        if kind != "ready":
            self._kill()
            raise WorkerError(f"default config failed: {payload}")
        self.default_info = payload

    def _kill(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
        if self._proc is not None:
            self._proc.join(5)
        self._proc = None
        self._conn = None

    def start(self) -> dict[str, Any]:
        if self._proc is None:
            self._start()
        return self.default_info

    def measure(self, job: Job) -> dict[str, Any]:
        if self._proc is None:
            self.restarts += 1
            self._start()
        self._conn.send(job)
        if not self._conn.poll(self.timeout_s):
            self._kill()
            return {"index": job.index, "status": TIMEOUT,
                    "error": f"no result within {self.timeout_s:.0f} s; worker killed"}
        try:
            _kind, payload = self._conn.recv()
        except (EOFError, ConnectionError):
            self._proc.join(5)
            code = self._proc.exitcode
            self._kill()
            sig = f" (signal {signal.Signals(-code).name})" if code and code < 0 else ""
            return {"index": job.index, "status": CRASH,
                    "error": f"worker process died with exit code {code}{sig}"}
        return payload

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(None)
        if self._proc is not None:
            self._proc.join(10)
        self._kill()

    def __enter__(self) -> IsolatedMeasurer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
