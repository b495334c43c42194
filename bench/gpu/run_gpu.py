"""First real GPU collection: a layout and a tile dataset of two zoo programs, validated, summarised.

Runs tgt from this source tree (no install: ``PYTHONPATH`` = repo root) on a machine that already
has jax with CUDA, and checks every package tgt imports before starting. Steps, each a real
``tgt`` command with its own time limit inside ``--budget-s``:

1. ``tgt collect`` layout configs of each program on the GPU, then ``tgt validate``;
2. ``tgt collect --collection tile`` (Triton GEMM tiles forced per kernel), then ``tgt validate``;
3. ``results.json`` + ``results.md``: configs tried / ok / noop per status, realized-vs-requested
   agreement, effect sizes (runtime ÷ default, in units of CV), the A/A control's CI if the
   dataset has one, versions and device.

``--dry-run`` does the same on CPU with tiny settings (what CI-less machines can check);
``--plan-only`` prints the commands and exits. Exit 0 when both datasets validate.

    bench/gpu/run_gpu.sh OUT            # on the GPU machine
    python bench/gpu/run_gpu.py --dry-run --out /tmp/tgt-gpu-dry
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# Every third-party package the collect / validate path imports (pyproject dependencies).
NEEDED = ("jax", "jaxlib", "numpy", "pyarrow", "polars", "pymetis", "click", "rich", "jsonschema",
          "flax", "optax", "scipy", "yaml", "ml_dtypes")
PROGRAMS = ("resnet18", "gpt")


def missing_packages(names: tuple[str, ...] = NEEDED) -> list[str]:
    out = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a broken install is as missing as an absent one
            out.append(f"{name} ({type(exc).__name__}: {exc})"[:200])
    return out


def collect_supports(flag: str) -> bool:
    """Whether this tree's ``tgt collect`` has ``flag`` (e.g. ``--min-sample-ms``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "tpugraphs_tools.cli", "collect", "--help"],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    return flag in proc.stdout


def plan(args: argparse.Namespace, extra: tuple[str, ...] = ()) -> list[tuple[str, list[str]]]:
    """(dataset name, tgt arguments) per step, in order."""
    out = Path(args.out)
    backend = "cpu" if args.dry_run else "gpu"
    common = ["--backend", backend, "--preset", "tiny", "--batch-size", "1", "--seed", "0",
              "--dtype", args.dtype, "--fixed-rounds", str(args.repeats), "--timeout",
              str(args.config_timeout), *extra]
    programs = [a for p in PROGRAMS for a in ("--program", p)]
    layout = ["collect", *programs, *common, "--configs", str(args.layout_configs),
              "--workers", str(args.workers), "--out", str(out / "layout")]
    tile = ["collect", "--collection", "tile", *programs, *common, "--configs",
            str(args.tile_configs), "--max-kernels", str(args.max_kernels),
            "--out", str(out / "tile")]
    return [("layout", layout), ("layout", ["validate", str(out / "layout")]),
            ("tile", tile), ("tile", ["validate", str(out / "tile")])]


def run_tgt(argv: list[str], log: Path, limit_s: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    start = time.monotonic()
    cmd = [sys.executable, "-m", "tpugraphs_tools.cli", *argv]
    with log.open("a") as f:
        f.write(f"\n$ tgt {' '.join(argv)}\n")
        f.flush()
        try:
            rc = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT,
                                timeout=max(1.0, limit_s), check=False).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return {"command": "tgt " + " ".join(argv), "exit": rc,
            "seconds": round(time.monotonic() - start, 1)}


def _float(x: Any) -> float | None:
    return None if x is None else float(x)


def summarize(path: Path) -> dict[str, Any]:
    """Statuses, agreement, effect sizes and control CI of one dataset directory."""
    sys.path.insert(0, str(ROOT))
    from tpugraphs_tools.store import Dataset

    ds = Dataset.open(path)
    rows = ds.configs().to_dicts()
    status: dict[str, int] = {}
    for r in rows:
        status[r["status"]] = status.get(r["status"], 0) + 1
    agreement = {"true": 0, "false": 0, "unobserved": 0, "not_recorded": 0}
    effects, controls = [], []
    for r in rows:
        real = json.loads(r.get("realized") or "{}")
        if r.get("is_control") or r.get("strategy") == "control":
            controls.append({k: v for k, v in r.items() if "ci" in k.lower() or k in (
                "relative_to_default", "config_index", "graph_id")})
        if r["status"] != "ok" or r.get("is_default"):
            continue
        key = next((k for k in ("matches_request", "honoured") if k in real), None)
        match = real.get(key) if key else None
        agreement["not_recorded" if key is None else "true" if match is True
                  else "false" if match is False else "unobserved"] += 1
        ratio = (r["runtime_min_ns"] / r["default_runtime_ns"]
                 if r.get("runtime_min_ns") and r.get("default_runtime_ns") else None)
        cv = max(_float(r.get("runtime_cv")) or 0.0, _float(real.get("default_cv")) or 0.0)
        if ratio is not None:
            effects.append({"ratio": ratio, "effect_cv": abs(ratio - 1) / cv if cv else None})
    ratios = sorted(e["ratio"] for e in effects)
    return {
        "graphs": ds.graphs().height, "configs_tried": len(rows), "status": status,
        "ok": status.get("ok", 0), "noop": status.get("noop", 0),
        "realized_vs_requested": agreement,
        "ratio_min": round(ratios[0], 4) if ratios else None,
        "ratio_median": round(ratios[len(ratios) // 2], 4) if ratios else None,
        "ratio_max": round(ratios[-1], 4) if ratios else None,
        "effects_over_3cv": sum(1 for e in effects if (e["effect_cv"] or 0) > 3),
        "control": controls or None,
    }


def write_results(out: Path, results: dict[str, Any]) -> None:
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str))
    lines = [f"# tgt GPU run ({results['mode']})", "",
             f"- device: {results['device']}; jax {results['jax']}, jaxlib {results['jaxlib']}",
             f"- wall time: {results['seconds']} s", ""]
    for step in results["steps"]:
        lines.append(f"- `{step['command']}` → exit {step['exit']} ({step['seconds']} s)")
    for name in ("layout", "tile"):
        s = results.get(name)
        if not isinstance(s, dict):
            continue
        lines += ["", f"## {name}", "",
                  f"- graphs {s['graphs']}, configs tried {s['configs_tried']}, ok {s['ok']}, "
                  f"noop {s['noop']}; statuses {s['status']}",
                  f"- realized vs requested (ok, non-default): {s['realized_vs_requested']}",
                  f"- runtime ÷ default: min {s['ratio_min']}, median {s['ratio_median']}, "
                  f"max {s['ratio_max']}; beyond 3×CV: {s['effects_over_3cv']}",
                  f"- control: {s['control'] or 'none in this dataset'}"]
    (out / "results.md").write_text("\n".join(lines) + "\n")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="/tmp/tgt-gpu")
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny settings")
    p.add_argument("--plan-only", action="store_true", help="print the commands and exit")
    p.add_argument("--budget-s", type=float, default=540.0)
    p.add_argument("--dtype", default=None, help="default: bfloat16 on GPU, float32 dry run")
    p.add_argument("--layout-configs", type=int, default=None)
    p.add_argument("--tile-configs", type=int, default=None)
    p.add_argument("--max-kernels", type=int, default=None)
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--config-timeout", type=float, default=60.0)
    p.add_argument("--min-sample-ms", type=float, default=None,
                   help="passed to tgt collect when it has that option (default 5 on GPU)")
    a = p.parse_args(argv)
    small = a.dry_run
    a.dtype = a.dtype or ("float32" if small else "bfloat16")
    a.layout_configs = a.layout_configs or (3 if small else 8)
    a.tile_configs = a.tile_configs or (2 if small else 4)
    a.max_kernels = a.max_kernels or (1 if small else 3)
    a.repeats = a.repeats or (3 if small else 10)
    a.min_sample_ms = a.min_sample_ms or (1.0 if small else 5.0)
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    out = Path(a.out)
    # GPU kernels run in microseconds: host timers need samples of many runs (docs/gpu.md).
    extra = (("--min-sample-ms", str(a.min_sample_ms))
             if not a.plan_only and collect_supports("--min-sample-ms") else ())
    steps = plan(a, extra)
    if a.plan_only:
        for name, cmd in steps:
            print(f"[{name}] tgt {' '.join(cmd)}")
        return 0
    missing = missing_packages()
    if missing:
        print("cannot run: packages tgt needs are not importable here:\n  "
              + "\n  ".join(missing), file=sys.stderr)
        return 3
    import jax
    import jaxlib

    device = jax.devices()[0]
    if not a.dry_run and device.platform != "gpu":
        print(f"no GPU: jax's default device is {device.platform} (use --dry-run)",
              file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    log = out / "run.log"
    start = time.monotonic()
    results: dict[str, Any] = {"mode": "dry-run (cpu)" if a.dry_run else "gpu",
                               "device": f"{device.platform} {device.device_kind}",
                               "jax": jax.__version__, "jaxlib": jaxlib.__version__,
                               "python": sys.version.split()[0], "steps": []}
    ok = True
    for name, cmd in steps:
        left = a.budget_s - (time.monotonic() - start)
        step = run_tgt(cmd, log, left)
        results["steps"].append(step)
        print(f"{step['command']} → exit {step['exit']} ({step['seconds']} s)", flush=True)
        if cmd[0] == "validate":
            ok &= step["exit"] == 0
            try:
                results[name] = summarize(out / name)
            except Exception as exc:  # a half-written dataset is a finding, not a crash
                results[name] = f"no summary: {type(exc).__name__}: {exc}"
                ok = False
    results["seconds"] = round(time.monotonic() - start, 1)
    write_results(out, results)
    print((out / "results.md").read_text())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
