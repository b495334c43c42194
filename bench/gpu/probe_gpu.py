"""Device-check probe (the first step of run_gpu.py, in a process of its own): what a first GPU
window must know before any label is trusted. Each part is written to OUT/probe.json as soon
as it is done (flushed), so a probe cut at its time limit keeps every part it finished.

1. environment: jax/jaxlib, the device, the CUDA runtime, driver and CUPTI versions jax's
   plugin reads (both device timers load one libcupti: a CUPTI newer than the driver fails
   both), the device's tile limits (registers, shared memory: configs/tile_gpu_limits.py);
2. timers: a 256×512×2048 and a 4096³ bf16 GEMM (a tiny one on CPU) timed by the host clock
   and by CUPTI: ns per run, the wall time of one sample, kernels per run and their names, or
   why the timer failed;
3. gpt_kernels: gpt (``--preset``) compiled whole: CUPTI's kernels per run and their names
   against the kernel launches its optimized entry holds (kernels of a CUDA graph built
   before CUPTI subscribed would go missing here), device vs host time per run;
4. cold_first_run: after a run of another program, the first of 8 back-to-back runs of the
   small GEMM against the other 7 (the L2 effect the untimed run before each device sample
   takes out);
5. profiler: the same GEMMs timed by the profiler timer (after every CUPTI part: it holds
   CUPTI's one subscriber slot while it traces), with its cost per sample and how many paired
   rounds fit the 1 s per-config budget (the figure that decides whether it may join
   ``--timer device``: docs/gpu.md);
6. libraries: the CUDA libraries this process loaded (which libcupti ran);
7. layout_slots: gpt's first constrained layout configs compiled as a collection compiles
   them; optimized modules and slot lists written under OUT/, slots located counted;
8. gpt_kernels_no_command_buffer (GPU): part 3 again in a child process with XLA's command
   buffers off (``--xla_gpu_enable_command_buffer=``): more kernels a run there means CUPTI
   misses the kernels of CUDA graphs in the default build.

    python bench/gpu/probe_gpu.py OUT [--dry-run]     # OUT/probe.json; prints it at the end
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

Run = Callable[[], None]
BUDGET_PER_CONFIG_S = 1.0  # measure/sessions.py GPU_TILE_DEFAULTS["max_seconds_per_config"]
# Entry instructions that launch nothing on XLA:GPU (the rest: one kernel or more each).
_NO_LAUNCH = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}


def _error(exc: BaseException) -> dict[str, str]:
    return {"error": f"{type(exc).__name__}: {exc}"[:300]}


def _environment() -> dict[str, Any]:
    import jax
    import jaxlib

    from tpugraphs_tools import _xla_compat as X
    from tpugraphs_tools.configs import tile_gpu_limits as L

    device = jax.devices()[0]
    read = L.read_device_limits()
    return {"python": sys.version.split()[0], "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "platform": device.platform,
            "device_kind": device.device_kind, "xla_flags": os.environ.get("XLA_FLAGS"),
            "cuda_versions": X.cuda_versions(),
            "tile_limits": None if read is None else vars(read),
            "tile_limits_used": vars(L.device_limits(device.device_kind))}


def _gemm(m: int, k: int, n: int) -> Run:
    import jax
    import jax.numpy as jnp

    a, b = jnp.ones((m, k), jnp.bfloat16), jnp.ones((k, n), jnp.bfloat16)
    fn = jax.jit(lambda a, b: jnp.tanh(a @ b))

    def run() -> None:
        fn(a, b).block_until_ready()

    run()
    return run


def _kernel_records(records: Any, run: Run, runs: int) -> list[tuple[str, float]]:
    """(name, ns) of every kernel ``runs`` back-to-back runs launched, after one untimed."""
    run()
    records.start()
    try:
        for _ in range(runs):
            run()
    finally:
        kernels = records.stop()
    return kernels


def _timer_case(name: str, run: Run, k: int, samples: int, host_ns: float | None
                ) -> dict[str, Any]:
    from tpugraphs_tools.measure.engines.device_timer import open_timer

    timer = open_timer(name)
    reads = [timer.sample(run, k) for _ in range(samples)]
    case: dict[str, Any] = {
        "ns_per_run": round(statistics.median(r[0] for r in reads)),
        "sample_seconds": round(statistics.median(r[1] for r in reads), 5),
        "k": k}
    if timer.last_kernels is not None:
        case["kernels_per_run"] = timer.last_kernels / k
        records = timer.records  # a KernelRecordTimer's source
        case["kernels"] = dict(Counter(n for n, _ in _kernel_records(records, run, 1))
                               .most_common(8))
    if name == "profiler" and host_ns:
        per_sample = case["sample_seconds"]
        case["overhead_seconds_per_sample"] = round(per_sample - k * host_ns / 1e9, 5)
        # a paired round samples the config and the default once each
        case["paired_rounds_in_budget"] = int(BUDGET_PER_CONFIG_S / (2 * per_sample))
    return case


def _shapes(dry_run: bool) -> list[tuple[int, int, int]]:
    return [(16, 32, 64)] if dry_run else [(256, 512, 2048), (4096, 4096, 4096)]


def _timers(dry_run: bool, names: tuple[str, ...],
            host: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Each probe GEMM timed by each of ``names``; ``host``: an earlier call's cases, whose
    host time per run the profiler's overhead is read against."""
    out = []
    for i, (m, k, n) in enumerate(_shapes(dry_run)):
        run = _gemm(m, k, n)
        case: dict[str, Any] = {"gemm": f"{m}x{k}x{n}"}
        before = (host[i] if host and i < len(host) else case).get("host") or {}
        for name in names:
            try:
                case[name] = _timer_case(name, run, 20, 1 if dry_run else 3,
                                         (case.get("host") or before).get("ns_per_run"))
            except Exception as exc:  # a probe reports, never stops
                case[name] = _error(exc)
        out.append(case)
    return out


def _launches(optimized: str) -> dict[str, int]:
    """Entry instructions of an optimized module by opcode, those that launch work only."""
    from tpugraphs_tools.hlo import parse_hlo_text

    entry = parse_hlo_text(optimized, source="optimized").entry
    return dict(Counter(i.opcode for i in entry.instructions if i.opcode not in _NO_LAUNCH))


def _gpt_kernels(preset: str, backend: str) -> dict[str, Any]:
    from tpugraphs_tools import _xla_compat as X
    from tpugraphs_tools.compiler import compile as C
    from tpugraphs_tools.hlo.sources import from_lowered
    from tpugraphs_tools.measure import device_env
    from tpugraphs_tools.measure.engines.device_timer import HostTimer
    from tpugraphs_tools.programs.registry import default_args, get_program, lower

    program = get_program("gpt")
    src = from_lowered(lower(program, default_args(program, preset, dtype="bfloat16")), "gpt")
    signature = C.entry_signature(src.module)
    # compiled as a layout collection compiles it (autotuning off on a GPU)
    exe = C.compile_text(src.text, signature, device_env.layout_compile_options(backend),
                         backend)
    inputs = C.make_inputs(signature, 0, backend)

    def run() -> None:
        C.run(exe, inputs)

    run()
    launches = _launches(X.executable_hlo_text(exe))
    out: dict[str, Any] = {"entry_launches": sum(launches.values()),
                           "entry_launches_by_opcode": launches,
                           "host_ns_per_run": round(HostTimer().sample(run, 5)[0])}
    try:
        records = X.cupti_kernel_records()
        first = _kernel_records(records, run, 3)
        later = _kernel_records(records, run, 3)
        out.update(cupti_kernels_per_run=[len(first) / 3, len(later) / 3],
                   cupti_ns_per_run=round(sum(ns for _, ns in later) / 3),
                   kernels=dict(Counter(n for n, _ in later).most_common(12)))
    except Exception as exc:
        out["cupti"] = _error(exc)
    return out


def _cold_first_run(dry_run: bool) -> dict[str, Any]:
    """Device time of run 1 of 8 after another program's run, against runs 2–8."""
    from tpugraphs_tools import _xla_compat as X

    records = X.cupti_kernel_records()  # first: no GEMM is built where CUPTI is missing
    small = _gemm(16, 32, 64) if dry_run else _gemm(256, 512, 2048)
    other = _gemm(32, 32, 32) if dry_run else _gemm(4096, 4096, 4096)
    per_run = len(_kernel_records(records, small, 1))
    ratios = []
    for _ in range(5):
        other()
        records.start()
        for _ in range(8):
            small()
        kernels = records.stop()
        runs = [sum(ns for _, ns in kernels[i:i + per_run])
                for i in range(0, len(kernels), per_run)]
        ratios.append(runs[0] / statistics.median(runs[1:]))
    return {"kernels_per_run": per_run, "first_over_rest": [round(r, 3) for r in ratios]}


def _loaded_libraries() -> list[str]:
    """CUDA libraries mapped into this process (Linux /proc/self/maps), by file."""
    try:
        text = Path("/proc/self/maps").read_text()
    except OSError as exc:
        return [f"unreadable: {exc}"]
    keys = ("libcuda.so", "libcudart", "libcupti", "libnvidia-ml", "libcublas", "libnvrtc")
    paths = {line.split()[-1] for line in text.splitlines() if any(k in line for k in keys)}
    return sorted(paths)


def _layout_slots(out: Path, preset: str, configs: int, backend: str) -> dict[str, Any]:
    from tpugraphs_tools import _xla_compat as X
    from tpugraphs_tools.compiler import apply_layout_config, constraint_slots
    from tpugraphs_tools.compiler.compile import compile_text, entry_signature
    from tpugraphs_tools.compiler.realized import check_slots
    from tpugraphs_tools.configs import generate_configs, layout_space
    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.hlo.sources import from_lowered
    from tpugraphs_tools.measure import device_env
    from tpugraphs_tools.programs.registry import default_args, get_program, lower

    program = get_program("gpt")
    src = from_lowered(lower(program, default_args(program, preset, dtype="bfloat16")), "gpt")
    space = layout_space(src.module)
    located = total = 0
    options = device_env.layout_compile_options(backend)
    for i, config in enumerate(generate_configs(space, configs + 1, "default", 0)[1:], 1):
        slots = constraint_slots(src.module, space, config)
        text = apply_layout_config(src.text, space, config)
        exe = compile_text(text, entry_signature(src.module), options, backend)
        optimized = X.executable_hlo_text(exe)
        (out / f"gpt_layout_config{i}.optimized.hlo").write_text(optimized)
        (out / f"gpt_layout_config{i}.slots.json").write_text(json.dumps(slots, indent=1))
        records = check_slots(parse_hlo_text(optimized, source="optimized"), slots)
        located += sum(r["honoured"] is not None for r in records)
        total += len(records)
    return {"configs": configs, "slots": total, "located": located}


def _without_command_buffers(out: Path, dry_run: bool) -> dict[str, Any]:
    """gpt_kernels again in a child process with XLA's command buffers (CUDA graphs) off: if
    CUPTI counts more kernels a run there, it misses kernels of graphs in the default build."""
    import subprocess

    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_gpu_enable_command_buffer=".strip()
    proc = subprocess.run([sys.executable, __file__, str(out), "--gpt-kernels",
                           *(["--dry-run"] if dry_run else [])], capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "XLA_FLAGS": flags})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode or not lines:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"}
    return {"xla_flags": flags, **json.loads(lines[-1])}


def _save(path: Path, result: dict[str, Any]) -> None:
    """Atomically, flushed to disk: a probe killed a moment later keeps this."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as f:
        json.dump(result, f, indent=1, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    dry_run = "--dry-run" in argv
    preset = "tiny" if dry_run else "small"
    if "--gpt-kernels" in argv:  # the child of _without_command_buffers
        import jax

        print(json.dumps(_gpt_kernels(preset, jax.devices()[0].platform)))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    path = out / "probe.json"
    start = time.monotonic()
    result: dict[str, Any] = {"done": []}
    backend = "cpu"

    def part(name: str, fn: Callable[[], Any]) -> None:
        t0 = time.monotonic()
        try:
            result[name] = fn()
        except Exception as exc:  # a probe reports, never stops
            result[name] = _error(exc)
        result["done"].append(name)
        result[f"{name}_seconds"] = round(time.monotonic() - t0, 1)
        result["seconds"] = round(time.monotonic() - start, 1)
        _save(path, result)

    part("environment", _environment)
    backend = str(result["environment"].get("platform", "cpu"))
    result["backend"] = backend
    # every CUPTI part before the profiler's: its trace session must not be what a later
    # CUPTI start finds
    part("timers", lambda: _timers(dry_run, ("host", "cupti")))
    part("gpt_kernels", lambda: _gpt_kernels(preset, backend))
    part("cold_first_run", lambda: _cold_first_run(dry_run))
    part("profiler", lambda: _timers(dry_run, ("profiler",), result.get("timers")))
    part("libraries", _loaded_libraries)
    part("layout_slots", lambda: _layout_slots(out, preset, 1 if dry_run else 3, backend))
    if backend == "gpu":  # the flag is XLA:GPU's: XLA:CPU would refuse it
        part("gpt_kernels_no_command_buffer", lambda: _without_command_buffers(out, dry_run))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
