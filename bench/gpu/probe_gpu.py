"""Device-check probes (run by run_gpu.py in a process of their own): which sample timer works
on this GPU and what it reads, and the optimized GPU modules of constrained layout configs.

1. Timers: a 256×512×2048 and a 4096³ bf16 GEMM (tiny ones on CPU), each timed per call by the
   host clock and by every device timer tgt has (measure/device_timer.py): ns per run, the
   wall time of one sample, or why the timer failed.
2. Layout slots: gpt (``--preset``) with the first configs of the default strategy applied,
   compiled the way a layout collection compiles them; the optimized modules and the constraint
   slots are written under OUT/ (so the locator can be checked offline) and how many constrained
   slots ``check_slots`` located is reported.

    python bench/gpu/probe_gpu.py OUT [--dry-run]     # prints one JSON object
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def _timers(dry_run: bool) -> list[dict[str, Any]]:
    import jax
    import jax.numpy as jnp

    from tpugraphs_tools.measure.device_timer import TIMERS, DeviceTimerError, open_timer

    shapes = [(16, 32, 64)] if dry_run else [(256, 512, 2048), (4096, 4096, 4096)]
    out = []
    for m, k, n in shapes:
        a = jnp.ones((m, k), jnp.bfloat16)
        b = jnp.ones((k, n), jnp.bfloat16)
        fn = jax.jit(lambda a, b: jnp.tanh(a @ b))

        def run(fn: Any = fn, a: Any = a, b: Any = b) -> None:
            fn(a, b).block_until_ready()

        run()
        case: dict[str, Any] = {"gemm": f"{m}x{k}x{n}"}
        for name in TIMERS:
            try:
                timer = open_timer(name)
                reads = [timer.sample(run, 20) for _ in range(1 if dry_run else 3)]
                case[name] = {"ns_per_run": round(statistics.median(r[0] for r in reads)),
                              "sample_seconds": round(statistics.median(r[1] for r in reads), 5)}
            except (DeviceTimerError, Exception) as exc:  # a probe reports, never stops
                case[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        out.append(case)
    return out


def _layout_slots(out: Path, preset: str, configs: int, backend: str) -> dict[str, Any]:
    from tpugraphs_tools import _xla_compat as X
    from tpugraphs_tools.configs import generate_configs, layout_space
    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.hlo.sources import from_lowered
    from tpugraphs_tools.measure import apply_layout_config, constraint_slots, device_env
    from tpugraphs_tools.measure.compile import compile_text, entry_signature
    from tpugraphs_tools.measure.realized import check_slots
    from tpugraphs_tools.programs.registry import default_args, get_program, lower

    program = get_program("gpt")
    src = from_lowered(lower(program, default_args(program, preset, dtype="bfloat16")), "gpt")
    space = layout_space(src.module)
    located = total = 0
    out.mkdir(parents=True, exist_ok=True)
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


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    dry_run = "--dry-run" in argv
    import jax

    backend = jax.devices()[0].platform
    start = time.monotonic()
    result: dict[str, Any] = {"backend": backend}
    try:
        result["timers"] = _timers(dry_run)
    except Exception as exc:
        result["timers"] = f"{type(exc).__name__}: {exc}"[:300]
    try:
        result["layout_slots"] = _layout_slots(out, "tiny" if dry_run else "small",
                                               1 if dry_run else 3, backend)
    except Exception as exc:
        result["layout_slots"] = f"{type(exc).__name__}: {exc}"[:300]
    result["seconds"] = round(time.monotonic() - start, 1)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
