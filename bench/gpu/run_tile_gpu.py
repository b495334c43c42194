"""Verify the ``gpu-triton-tiles`` space on a machine with an NVIDIA GPU (never run in CI).

Checks, for each forcing mechanism (``override_file``, ``backend_config``):

1. forcing: a few Triton tiles are compiled on one GEMM kernel and the tile the compiler used
   is read back from the optimized HLO — does it match the request?
2. collection: ``collect_tile`` over the program's GEMM kernels, written to a dataset and
   validated; the summary (statuses, largest effect in CV units) goes to the report.

Writes ``report.json`` (and the datasets) under ``--out``; exit 0 only when a mechanism forced
every requested tile and produced a valid dataset with a config beyond 3× CV of the default.

    bench/gpu/run_tile_gpu.sh /tmp/tgt-tile-gpu
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path


def gemm_program(m: int, n: int, k: int, dtype: str):
    """relu(x @ w + b) @ v: XLA:GPU makes Triton GEMM fusions of it (with cuBLAS fallback off
    in the parent compile, every dot is a Triton fusion)."""
    import jax
    import jax.numpy as jnp

    def f(x, w, b, v):
        return jax.nn.relu(x @ w + b) @ v

    dt = jnp.dtype(dtype)
    args = [jax.ShapeDtypeStruct(s, dt) for s in ((m, k), (k, n), (n,), (n, k))]
    return jax.jit(f).lower(*args)


def check_forcing(kernel, space, tiles) -> list[dict]:
    """Compile each tile in-process and read back what the compiler ran."""
    from tpugraphs_tools.collect.tile import _measure_text
    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.measure import compile as C

    text = _measure_text(kernel, space)
    sig = C.entry_signature(parse_hlo_text(text))
    out = []
    for config in tiles:
        entry = {"requested": json.loads(config.to_json())}
        try:
            start = time.perf_counter()
            exe = C.compile_text(space.apply(text, config), sig, space.compile_options(config))
            entry["compile_seconds"] = time.perf_counter() - start
            optimized = parse_hlo_text(exe.hlo_modules()[0].to_string())
            realized, facts = space.realized(optimized, config)
            entry.update(realized=json.loads(realized.to_json()), facts=facts)
        except Exception as exc:  # the point is to record what this jaxlib does
            entry["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        out.append(entry)
        print(json.dumps(entry)[:400], flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/tgt-tile-gpu")
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--configs", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--mechanisms", default="override_file,backend_config")
    a = parser.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    import jax

    from tpugraphs_tools.collect.graphs import write_graphs
    from tpugraphs_tools.collect.kernels import extract_kernels
    from tpugraphs_tools.collect.tile import TileOptions, collect_tile
    from tpugraphs_tools.configs.tile_gpu import GEMM_KINDS, TritonGemmTiles, tile
    from tpugraphs_tools.hlo import from_compiled
    from tpugraphs_tools.store import Dataset
    from tpugraphs_tools.validate import validate_path

    device = jax.devices()[0]
    report: dict = {"jax": jax.__version__, "device": str(device.device_kind),
                    "platform": device.platform, "mechanisms": {}}
    if device.platform != "gpu":
        print(f"no GPU: jax's default device is {device.platform}", file=sys.stderr)
        (out / "report.json").write_text(json.dumps(report, indent=2))
        return 2
    lowered = gemm_program(a.size, a.size, a.size, a.dtype)
    parent = lowered.compile(compiler_options={"xla_gpu_cublas_fallback": False})
    src = from_compiled(parent, "gemm_relu_gemm")
    kernels = extract_kernels(src.module).kernels
    report["kernels"] = [{"name": k.name, "label": k.label, "opcode": k.opcode} for k in kernels]
    (out / "parent_optimized.hlo").write_text(src.text)
    gemm = [k for k in kernels if k.label in GEMM_KINDS]
    if not gemm:
        print("no Triton GEMM fusion in the optimized module; see parent_optimized.hlo",
              file=sys.stderr)
        (out / "report.json").write_text(json.dumps(report, indent=2))
        return 3
    tiles = [tile(64, 64, 32, 1, 3, 4), tile(128, 128, 64, 1, 3, 8), tile(32, 64, 32, 4, 2, 4),
             tile(16, 16, 16, 1, 1, 2)]
    passed = False
    for mechanism in a.mechanisms.split(","):
        space = TritonGemmTiles(mechanism=mechanism, override_dir=out / "overrides")
        entry: dict = {}
        try:
            entry["forcing"] = check_forcing(gemm[0], space, tiles)
            opts = TileOptions(configs_per_kernel=a.configs, repeats=a.repeats, warmup=3,
                               space=space, backend="gpu", timeout_s=300)
            result = collect_tile(src, program="gemm_relu_gemm",
                                  program_args={"size": a.size, "dtype": a.dtype},
                                  parent_graph_id=None, opts=opts, progress=print)
            ds_root = out / f"ds-{mechanism}"
            write_graphs(Dataset.open(ds_root, create=True), [g for g, _ in result.graphs],
                         configs={g.graph_id: rows for g, rows in result.graphs})
            findings = validate_path(ds_root).findings
            entry.update(summary=result.summary, validate=[f.to_json() for f in findings])
            forced = all(f.get("facts", {}).get("matches_request") for f in entry["forcing"])
            entry["forced_every_tile"] = forced
            passed |= (forced and not findings and result.summary["effects_over_3cv"] > 0)
        except Exception:
            entry["error"] = traceback.format_exc()[-4000:]
        report["mechanisms"][mechanism] = entry
        print(json.dumps({mechanism: {k: v for k, v in entry.items() if k != "forcing"}},
                         default=str, indent=1)[:4000], flush=True)
    report["passed"] = passed
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
