"""Child-process bodies of the pipelined engine: a compile worker and a measurement worker.

Both exit quietly when the parent goes away (pipe closed or PR_SET_PDEATHSIG), never leaving a
collection's CPU time to orphans.

Test-only fault injection: the environment variable ``TGT_TEST_FAULTS`` (JSON, config index →
``crash`` | ``hang`` | ``raise`` | ``crash_run``) is read here, by the worker entry points only,
and stands in for real compiler crashes and hangs. No product type carries a fault.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import random
import signal
import time
from collections.abc import Callable
from typing import Any

from tpugraphs_tools import _xla_compat as X
from tpugraphs_tools.measure.processes import die_with_parent, pin, signal_all
from tpugraphs_tools.measure.timing import Timing
from tpugraphs_tools.measure.worker import (
    COMPILE_ERROR,
    CONTROL,
    OK,
    REPEAT,
    RUNTIME_ERROR,
    WRONG_RESULT,
    Batch,
    Compiled,
    ConfigResult,
    DefaultInfo,
    Job,
    SessionSpec,
)


def _message(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 2000 else text[:2000] + "…"


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


def compile_and_read(text: str, signature: Any, options: dict[str, Any] | None,
                     spec: SessionSpec, slots: list[dict[str, Any]]
                     ) -> tuple[Any, dict[str, Any], str, str]:
    """Compile, read the optimized module back: (executable, realized, dedupe key, HLO text).

    The key is (optimized fingerprint, options), or with ``spec.dedupe_on_code`` (optimized
    fingerprint, generated machine code): then an option that changes nothing is a no-op.
    """
    from tpugraphs_tools.hlo import parse_hlo_text
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

    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.measure.compile import entry_signature

    signature = entry_signature(parse_hlo_text(spec.base_text, source="default config"))
    device = jax.devices(spec.backend)[0]
    faults = _test_faults()
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


def paired_labels(reference: list[Any], runs: list[list[Any]], spec: SessionSpec, k: int,
                  context: list[tuple[float, float]], placement: Any, waiting: list[int],
                  results: list[ConfigResult], seed: int | None = None) -> None:
    """Time ``runs`` against ``reference`` in paired rounds and label ``results`` (one per
    run); each run is a list of loaded copies of one program (``spec.stop.copies``).
    ``waiting`` (the A/A control, a repeated config) are timed as long as the batch runs and
    never stop it."""
    from tpugraphs_tools.measure.paired import time_paired, timed_sample

    def sample(i: int, copy: int) -> tuple[float, float]:
        copies = reference if i < 0 else runs[i]
        return timed_sample(copies[copy % len(copies)], k)

    # Fewer copies than asked when loading ran out of memory (load_copies).
    rule = dataclasses.replace(spec.stop, copies=min(len(c) for c in [reference, *runs]))
    batch = time_paired(sample, len(runs), rule, [(a, b) for a, b in context],
                        control=waiting, adaptive=spec.adaptive, placement=placement,
                        seed=seed)
    default = Timing.of([round(x) for x in batch.default_ns])
    default_ns = [round(x) for x in batch.default_ns]
    for i, result in enumerate(results):
        ratio = batch.ratio(i, spec.stop.confidence)
        samples = [round(x) for x in batch.config_ns[i]]
        result.timing = Timing.of(samples)
        result.default_timing = default
        result.config_samples_ns, result.default_samples_ns = samples, default_ns
        center, se2, place, df = batch.parts(i)
        result.log_center, result.log_se, result.df = center, math.sqrt(se2 + place), df
        result.relative_to_default = ratio.ratio
        result.relative_ci_low, result.relative_ci_high = ratio.low, ratio.high
        result.rounds, result.stop_reason = ratio.rounds, batch.stop_reason[i]
        result.runs_per_sample, result.timed_seconds = k, batch.seconds[i]


def _maps_in_use() -> int | None:
    """Memory mappings of this process (Linux), None where unknown."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return None


def _max_maps() -> int | None:
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def load_copies(default_blob: bytes, blobs: list[bytes], loaded: list[list[Any]], copies: int,
                device: Any, seed: int = 0) -> list[Any]:
    """Load up to ``copies`` copies of the default and of every timed program; returns the
    default's copies and fills ``loaded[i]`` (replacing the executable the numerics check ran).

    Copy j of every program is loaded together, in a shuffled order per j: neither the moment
    nor the position of a load sets the default apart from its A/A copy. Each loaded
    executable maps its code, and a process past
    ``vm.max_map_count`` dies inside LLVM (8 copies of 26 programs did): so the first group's
    cost sets how many groups fit in half the limit, and fewer copies are loaded (every program
    the same number; the CIs' placement term divides by the copies used).
    """
    shuffle = random.Random(seed)
    programs = [default_blob, *blobs]
    groups: list[list[Any]] = [[] for _ in programs]
    for lst in loaded:
        lst.clear()
    target = max(1, copies)
    before, limit = _maps_in_use(), _max_maps()
    j = 0
    while j < target:
        picks = list(range(len(programs)))
        shuffle.shuffle(picks)
        for p in picks:
            groups[p].append(X.deserialize_executable(programs[p], device))
        j += 1
        now = _maps_in_use()
        if j == 1 and before is not None and now is not None and limit:
            per_group = max(1, now - before)
            target = min(target, 1 + max(0, (limit // 2 - now) // per_group))
    for lst, group in zip(loaded, groups[1:], strict=True):
        lst.extend(group)
    return groups[0]


def warm_up_shuffled(runs: list[Any], passes: int, shuffle: random.Random) -> None:
    """Run every loaded copy ``passes`` times, each pass in a fresh random order.

    A copy's first runs are cold (its temporary buffers are allocated then). The first
    version ran the default's copies first in every pass, the one step that set them apart
    from the A/A control's copies; meanwhile the control read below 1 in 14 of 16 batches of
    the baseline plan (docs/design/label-engine.md)."""
    for _ in range(passes):
        order = list(runs)
        shuffle.shuffle(order)
        for fn in order:
            fn()


# Memory for the extra argument sets of the loaded copies (bind_copies), beyond the first.
INPUT_SETS_BUDGET = 512 * 2 ** 20


def input_sets_that_fit(count: int, set_bytes: int, budget: int = INPUT_SETS_BUDGET) -> int:
    """How many argument sets the copies get: one each, as far as ``budget`` holds the
    extra ones (at least one: the set the numerics check used)."""
    if set_bytes <= 0:
        return max(1, count)
    return max(1, min(count, 1 + budget // set_bytes))


def bind_copies(exes: list[Any], sets: list[list[Any]], run: Callable[[Any, list[Any]], object]
                ) -> list[Callable[[], object]]:
    """Copy j of a program runs on argument set j mod ``len(sets)``.

    Where the arguments sit in memory is one draw per set, and it changes some configs'
    speed: with one set per process, resnet18 configs read bimodal between processes (+0.4%
    or +3.3% for the same config) while their copies agreed inside each process. With a set
    per copy that draw varies between copies, so the copies' spread measures it and their
    mean averages it (docs/design/label-engine.md, step 3). Copy j of the default and of
    every config share set j, as they share a round."""
    return [functools.partial(run, exe, sets[j % len(sets)]) for j, exe in enumerate(exes)]


def measure_main(conn: Any, spec: SessionSpec, cpus: set[int] | None) -> None:
    """Hold the inputs and the default config; check and time batches of executables."""
    die_with_parent()
    pin(cpus)
    import jax
    import numpy as np

    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.measure import compile as C
    from tpugraphs_tools.measure.paired import Placement, calibrate
    from tpugraphs_tools.measure.timing import time_alone, time_batch

    base_blob = b""
    runs_per_sample = None
    crash_runs = {i for i, fault in _test_faults().items() if fault == "crash_run"}
    placement = Placement()

    try:
        module = parse_hlo_text(spec.base_text, source="default config")
        signature = C.entry_signature(module)
        inputs = C.make_inputs(signature, spec.seed, spec.backend)
        input_sets = [inputs]  # one per loaded copy (bind_copies), grown by the first batch
        start = time.perf_counter()
        base, realized, key, optimized_text = compile_and_read(spec.base_text, signature,
                                                               spec.options, spec, [])
        base_compile = time.perf_counter() - start
        reference = [np.asarray(o) for o in C.run(base, inputs)]
        ready = DefaultInfo(base_compile, realized, key)
        if spec.engine == "paired":
            # No solo timing here (compile workers are starting up): the sample size k is
            # calibrated in the first batch's quiet window. The default's timed copies and the
            # A/A control are loaded per batch, interleaved with the configs' copies, from the
            # same serialized form: no label carries a load-path or load-order difference.
            first = jax.devices(spec.backend)[0]
            base_blob = X.serialize_executable(base, first)
            bases: list[Any] = []
        else:
            bases = [base]
            ready.timing = time_alone(lambda: C.run(base, inputs), spec.warmup, spec.repeats)
        if spec.return_optimized:
            ready.optimized_text = optimized_text
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
            message: Batch | None = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        pause = message.pause
        results: list[ConfigResult] = []
        timed: list[tuple[ConfigResult, list[Any]]] = []
        blobs: list[bytes] = []
        batch_start = time.perf_counter()
        for item in message.items:
            result = ConfigResult.of(item, OK)
            results.append(result)
            if item.index in crash_runs and item.repeat_of is None:
                os.kill(os.getpid(), signal.SIGSEGV)
            try:
                exe = X.deserialize_executable(item.executable, device)
                error = check(exe)
            except Exception as exc:
                result.status, result.error = RUNTIME_ERROR, _message(exc)
                continue
            result.max_abs_error = error
            if not np.isfinite(error) or error > tolerance:
                result.status = WRONG_RESULT
                result.error = (f"max abs error {error:.3g} vs default (tolerance "
                                f"{tolerance:.3g})")
                continue
            timed.append((result, [exe]))
            blobs.append(item.executable)
        paused = 0.0
        if spec.engine == "paired":
            timed.append((ConfigResult(None, CONTROL), []))
            blobs.append(base_blob)
            results.append(timed[-1][0])
            # A fresh draw per batch, not the config seed: a process given the same load
            # order places its copies the same way, so every rerun would repeat one placement
            # (mlp_mixer's control read below 1 in 7 of 7 runs with a fixed order).
            order_seed = random.SystemRandom().randrange(2 ** 32)
            bases = load_copies(base_blob, blobs, [exes for _, exes in timed],
                                spec.stop.copies, device, seed=order_seed)
        if timed:
            if spec.engine == "paired":
                want = input_sets_that_fit(len(bases), C.input_bytes(signature))
                input_sets += [C.make_inputs(signature, spec.seed, spec.backend)
                               for _ in range(want - len(input_sets))]
            sets = input_sets if spec.engine == "paired" else [inputs]
            copies = [bind_copies(exes, sets, C.run) for _, exes in timed]
            defaults = bind_copies(bases, sets, C.run)
            runs = [c[0] for c in copies]
            if spec.engine == "paired":
                warm_up_shuffled([*defaults, *(f for c in copies for f in c)],
                                 max(1, spec.warmup), random.Random(order_seed + 1))
            else:
                for _ in range(max(0, spec.warmup - 1)):  # compile workers keep running here
                    for fn in [*defaults, *runs]:
                        fn()
            stop = time.perf_counter()
            signal_all(pause, signal.SIGSTOP)
            try:
                if spec.engine == "paired":
                    if message.runs_per_sample is not None:  # another process calibrated
                        runs_per_sample = message.runs_per_sample
                    elif runs_per_sample is None:  # once per graph, compile workers stopped
                        runs_per_sample = calibrate(lambda: C.run(base, inputs),
                                                    spec.min_sample_ms * 1e6)
                    waiting = [i for i, (r, _) in enumerate(timed)
                               if r.status == CONTROL or r.repeat_of is not None]
                    paired_labels(defaults, copies, spec, runs_per_sample, message.context,
                                  placement, waiting, [r for r, _ in timed], seed=order_seed)
                else:
                    ref, cands = time_batch(lambda: C.run(base, inputs), runs, 0, spec.repeats)
                    for (result, _), timing in zip(timed, cands, strict=True):
                        result.timing, result.default_timing = timing, ref
            finally:
                signal_all(pause, signal.SIGCONT)
                paused = time.perf_counter() - stop if pause else 0.0
            for result, _ in timed:
                if result.repeat_of is not None:
                    result.status = REPEAT
        busy = time.perf_counter() - batch_start
        for result in results:  # the measurement worker's busy time, shared by the batch
            result.measure_seconds = busy / len(results)
            result.paused_seconds = paused
        try:
            conn.send(("results", results))
        except (BrokenPipeError, OSError):
            return
