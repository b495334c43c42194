"""The prepared device check: a GPU reference set from one short device window, summarised.

Run by ``bench/gpu/run_gpu.sh OUT`` (which installs the carried wheels first), from the source
tree (no install). Every step is a real ``tgt`` command (or the probe) with its own time limit,
cut to what is left of ``--budget-s`` so a slow step cannot eat the window; steps that no
longer fit are skipped and say so. In order of importance:

1. probe: which sample timer works here (probe_gpu.py), optimized GPU modules of constrained
   layout configs of gpt small, slots located in them;
2. tile, gpt small, ``--max-kernels 6 --configs 10`` at the GPU defaults (the ≤ 60 s check);
3. layout (``default`` strategy) of gpt, bert (transformers), resnet18, unet (convnets), bf16;
4. layout, ``random`` strategy, gpt and resnet18;
5. rerun of gpt's layout and tile collections: claimed orders kept;
6. tile of bert, resnet18, unet;
7. gpt's layout timed by the device timer (``--timer device``) next to step 3's host labels;
8. ``tgt validate`` after every collection, ``tgt baseline`` on the layout dataset.

OUT gets at most 8 files: results.md, results.json, datasets.tar.gz (every dataset and the
probe's modules), run.log (every command's output), nvidia-smi.txt (from run_gpu.sh).
``--dry-run`` runs the same code path on CPU with tiny programs in seconds (the test suite
does); ``--plan-only`` prints the commands.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from _label_claims import claimed_pairs, concordance, controls  # noqa: E402

# Every third-party package the collect / validate / baseline path imports.
NEEDED = ("jax", "jaxlib", "numpy", "pyarrow", "polars", "pymetis", "click", "rich", "jsonschema",
          "flax", "optax", "scipy", "yaml", "ml_dtypes")
RESERVE_S = 25.0   # kept for the summary and the archive
MIN_STEP_S = 8.0   # a step with less time than this is skipped


@dataclass
class Step:
    name: str
    argv: list[str]                 # tgt arguments, or ["probe"]
    limit_s: float
    dataset: str | None = None      # data/<dataset> the step writes
    kind: str = "collect"           # collect | validate | baseline | probe
    result: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    """Programs and sizes of a GPU run, or of the CPU dry run."""

    backend: str
    dtype: str
    preset: str
    transformers: tuple[str, ...]
    convnets: tuple[str, ...]
    tile_kernels: int
    tile_configs: int
    other_kernels: int
    layout_configs: int
    random_configs: int
    workers: int
    extra: tuple[str, ...] = ()

    @property
    def programs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.transformers, *self.convnets)))


GPU = Settings("gpu", "bfloat16", "small", ("gpt", "bert"), ("resnet18", "unet"),
               tile_kernels=6, tile_configs=10, other_kernels=3, layout_configs=8,
               random_configs=6, workers=6)
DRY = Settings("cpu", "float32", "tiny", ("mlp",), ("mlp",), tile_kernels=1, tile_configs=2,
               other_kernels=1, layout_configs=6, random_configs=2, workers=1,
               extra=("--measure-processes", "1", "--loaded-copies", "2", "--max-rounds", "12",
                      "--min-sample-ms", "0.2"))


def _programs(names: tuple[str, ...]) -> list[str]:
    return [a for p in dict.fromkeys(names) for a in ("--program", p)]


def plan(s: Settings, data: Path) -> list[Step]:
    """Every step, in order of importance (later steps are skipped first)."""
    common = ["--backend", s.backend, "--preset", s.preset, "--dtype", s.dtype, "--batch-size",
              "1", "--seed", "0", "--timeout", "60", "--workers", str(s.workers), *s.extra]
    first = s.transformers[0]
    tile = ["collect", "--collection", "tile", *common]
    layout = ["collect", *common]
    steps = [
        Step("probe", ["probe"], 45, "probes", kind="probe"),
        Step("tile", [*tile, "--program", first, "--max-kernels", str(s.tile_kernels),
                      "--configs", str(s.tile_configs)], 100, "tile"),
        Step("layout", [*layout, *_programs(s.programs), "--configs", str(s.layout_configs)],
             130, "layout"),
        Step("layout_random", [*layout, *_programs((first, s.convnets[0])),
                               "--strategy", "random", "--configs", str(s.random_configs)],
             50, "layout_random"),
        Step("rerun_layout", [*layout, "--program", first, "--configs", str(s.layout_configs)],
             40, "rerun_layout"),
        Step("rerun_tile", [*tile, "--program", first, "--max-kernels", "2", "--configs",
                            str(s.tile_configs)], 40, "rerun_tile"),
        Step("tile_more", [*tile, *_programs(s.programs[1:] or s.programs),
                           "--max-kernels", str(s.other_kernels), "--configs",
                           str(s.tile_configs)], 60, "tile_more"),
        Step("layout_device", [*layout, "--program", first, "--configs",
                               str(s.layout_configs), "--timer", "device"], 40, "layout_device"),
        Step("baseline", ["baseline", "layout", "--epochs", "3"], 60, "layout",
             kind="baseline"),
    ]
    out: list[Step] = []
    for step in steps:
        if step.kind == "collect":
            step.argv += ["--out", str(data / str(step.dataset))]
            out += [step, Step(f"validate_{step.dataset}", ["validate", str(data / str(
                step.dataset))], 20, step.dataset, kind="validate")]
        elif step.kind == "baseline":
            step.argv[1] = str(data / "layout")
            out.append(step)
        else:
            out.append(step)
    return out


def missing_packages(names: tuple[str, ...] = NEEDED) -> list[str]:
    out = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a broken install is as missing as an absent one
            out.append(f"{name} ({type(exc).__name__}: {exc})"[:200])
    return out


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT),
            "PYTHONUNBUFFERED": "1"}


def run_step(step: Step, log: Path, limit_s: float, data: Path, dry_run: bool) -> None:
    """Run one step within ``limit_s``; its output goes to ``log``."""
    if step.kind == "probe":
        cmd = [sys.executable, str(ROOT / "bench" / "gpu" / "probe_gpu.py"),
               str(data / "probes"), *(["--dry-run"] if dry_run else [])]
    else:
        cmd = [sys.executable, "-m", "tpugraphs_tools.cli", *step.argv]
    start = time.monotonic()
    with log.open("a") as f:
        f.write(f"\n=== {step.name}: {' '.join(cmd[1:])} (limit {limit_s:.0f} s)\n")
        f.flush()
        try:
            proc = subprocess.run(cmd, env=_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=limit_s,
                                  check=False)
            rc, output = proc.returncode, proc.stdout
        except subprocess.TimeoutExpired as exc:
            rc, output = 124, (exc.stdout or b"").decode(errors="replace") \
                if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        f.write(output)
    step.result = {"exit": rc, "seconds": round(time.monotonic() - start, 1)}
    if step.kind == "probe" and rc == 0:
        last = [line for line in output.splitlines() if line.startswith("{")]
        step.result["probe"] = json.loads(last[-1]) if last else None


def _rows(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from tpugraphs_tools.store import Dataset

    ds = Dataset.open(path)
    return ds.graphs().to_dicts(), ds.configs().to_dicts()


def _half(row: dict[str, Any]) -> float | None:
    low, high, mid = row.get("relative_ci_low"), row.get("relative_ci_high"), \
        row.get("relative_to_default")
    if low is None or high is None or not mid:
        return None
    return (high - low) / 2 / mid


def _apart(row: dict[str, Any]) -> bool:
    low, high = row.get("relative_ci_low"), row.get("relative_ci_high")
    return low is not None and high is not None and not low <= 1.0 <= high


def summarize(path: Path, wall_s: float) -> dict[str, Any]:
    """One dataset's figures: statuses, timers, CIs, A/A, located slots, tile facts."""
    graphs, rows = _rows(path)
    status: dict[str, int] = {}
    timers: dict[str, int] = {}
    for r in rows:
        status[r["status"]] = status.get(r["status"], 0) + 1
        if r.get("timer"):
            timers[r["timer"]] = timers.get(r["timer"], 0) + 1
    ok = [r for r in rows if r["status"] == "ok" and not r["is_default"]]
    halves = [h for r in ok if (h := _half(r)) is not None]
    flags = [v for r in rows if r.get("honoured")
             for slots in json.loads(r["honoured"]).values() for v in slots.values()]
    held, n_controls = controls(rows)
    out: dict[str, Any] = {
        "graphs": len(graphs), "configs": len(rows), "status": status, "timers": timers,
        "ok_labels": len(ok), "labels_per_minute": round(60 * len(ok) / wall_s, 1)
        if wall_s > 0 else None,
        "ci_half_width_median": round(statistics.median(halves), 4) if halves else None,
        "apart_from_default": sum(_apart(r) for r in ok),
        "controls_holding_1": f"{held}/{n_controls}",
        "slots_located": f"{sum(v is not None for v in flags)}/{len(flags)}" if flags else None,
    }
    if any(g.get("collection") == "tile" for g in graphs):
        out["not_as_requested"] = sum(
            json.loads(r.get("realized") or "{}").get("matches_request") is False for r in ok)
        out.update(_kernels(rows))
    return out


def _kernels(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kernel: the default's time per run, and whether a tile moved it beyond the A/A
    noise floor (a config whose CI excludes 1.0 by more than the control's CI half-width)."""
    by_graph: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_graph.setdefault(r["graph_id"], []).append(r)
    defaults_us, spread = [], 0
    for part in by_graph.values():
        ok = [r for r in part if r["status"] == "ok" and not r["is_default"]]
        if ok and ok[0].get("default_runtime_ns"):
            defaults_us.append(round(ok[0]["default_runtime_ns"] / 1e3, 2))
        floor = max([h for r in part if r["status"] == "control" and (h := _half(r))],
                    default=0.0)
        spread += any(_apart(r) and abs(r["relative_to_default"] - 1) > floor for r in ok)
    return {"kernels": len(by_graph), "default_us_per_run": defaults_us,
            "kernels_spread_beyond_noise": f"{spread}/{len(by_graph)}"}


def rerun_kept(first: Path, rerun: Path) -> dict[str, Any]:
    """Claimed orders of ``first`` kept by ``rerun``, over the graphs both hold."""
    _, a = _rows(first)
    _, b = _rows(rerun)
    ids = {r["graph_id"] for r in b}
    a = [r for r in a if r["graph_id"] in ids]
    pairs, claimed, kept = claimed_pairs(a, b, "ci")
    tau = concordance(a, b)
    return {"pairs": pairs, "claimed": claimed, "kept": kept,
            "kendall_tau": None if tau is None else round(tau, 3)}


def _facts(steps: list[Step], data: Path) -> dict[str, Any]:
    done = {s.name: s for s in steps}
    facts: dict[str, Any] = {"datasets": {}}
    for s in steps:
        if s.kind == "collect" and (data / str(s.dataset) / "manifest.json").exists():
            try:
                facts["datasets"][s.dataset] = summarize(data / str(s.dataset),
                                                         s.result.get("seconds", 0.0))
            except Exception as exc:  # a damaged dataset is a finding, not a crash
                facts["datasets"][s.dataset] = f"no summary: {type(exc).__name__}: {exc}"
    for name, first in (("rerun_layout", "layout"), ("rerun_tile", "tile")):
        pair = (data / first / "manifest.json", data / name / "manifest.json")
        if all(p.exists() for p in pair):
            try:
                facts[f"{name}_kept"] = rerun_kept(data / first, data / name)
            except Exception as exc:
                facts[f"{name}_kept"] = f"{type(exc).__name__}: {exc}"
    if "layout_device" in facts["datasets"] and "layout" in facts["datasets"]:
        try:
            facts["layout_host_vs_device"] = rerun_kept(data / "layout", data / "layout_device")
        except Exception as exc:
            facts["layout_host_vs_device"] = f"{type(exc).__name__}: {exc}"
    probe = done.get("probe")
    facts["probe"] = probe.result.get("probe") if probe else None
    return facts


def write_results(out: Path, results: dict[str, Any]) -> None:
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    f = results.get("facts", {})
    d = f.get("datasets", {})
    tile = d.get("tile") if isinstance(d.get("tile"), dict) else {}
    lines = [f"# tgt device check ({results['mode']})", "",
             f"- device: {results['device']}; jax {results['jax']}; python {results['python']}",
             f"- wall time: {results['seconds']} s (budget {results['budget_s']} s)",
             f"- timer used for tile labels: {tile.get('timers') or 'no tile labels'}",
             f"- first tile collection ({results['tile_plan']}, at the defaults): "
             f"{results['steps'].get('tile', {}).get('seconds')} s, "
             f"{tile.get('labels_per_minute')} labels per minute",
             f"- default kernels' time per run (µs): {tile.get('default_us_per_run')}",
             f"- kernels whose tile labels spread beyond the A/A noise floor: "
             f"{tile.get('kernels_spread_beyond_noise')}",
             f"- claimed orders kept in the rerun: layout {f.get('rerun_layout_kept')}, "
             f"tile {f.get('rerun_tile_kept')}",
             f"- layout, host vs device timer (gpt): {f.get('layout_host_vs_device')}",
             "", "## steps", "", "| step | exit | seconds |", "| --- | --- | --- |"]
    lines += [f"| {k} | {v.get('exit', 'skipped')} | {v.get('seconds', '-')} |"
              for k, v in results["steps"].items()]
    lines += ["", "## datasets", ""]
    for name, s in d.items():
        lines.append(f"- **{name}**: {json.dumps(s, default=str)}")
    lines += ["", "## probe", "", f"```\n{json.dumps(f.get('probe'), indent=1)}\n```"]
    (out / "results.md").write_text("\n".join(lines) + "\n")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny programs")
    p.add_argument("--plan-only", action="store_true", help="print the commands and exit")
    p.add_argument("--budget-s", type=float, default=None,
                   help="whole run (default 420 on a GPU, 300 dry run)")
    a = p.parse_args(argv)
    a.budget_s = a.budget_s or (300.0 if a.dry_run else 420.0)
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    out = Path(a.out)
    data = out / "data"
    settings = DRY if a.dry_run else GPU
    steps = plan(settings, data)
    if a.plan_only:
        for step in steps:
            print(f"[{step.name}, ≤{step.limit_s:.0f} s] tgt {' '.join(step.argv)}")
        return 0
    missing = missing_packages()
    if missing:
        print("cannot run: packages tgt needs are not importable here (carry them as wheels, "
              "bench/gpu/README.md):\n  " + "\n  ".join(missing), file=sys.stderr)
        return 3
    import jax

    device = jax.devices()[0]
    if not a.dry_run and device.platform != "gpu":
        print(f"no GPU: jax's default device is {device.platform} (use --dry-run)",
              file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(data, ignore_errors=True)
    log = out / "run.log"
    start = time.monotonic()
    for step in steps:
        left = a.budget_s - (time.monotonic() - start) - RESERVE_S
        if step.kind in ("validate", "baseline") and not (data / str(step.dataset)).exists():
            continue
        if left < MIN_STEP_S:
            step.result = {"skipped": f"{left:.0f} s left"}
            continue
        run_step(step, log, min(step.limit_s, left), data, a.dry_run)
        print(f"{step.name}: exit {step.result['exit']} ({step.result['seconds']} s)",
              flush=True)
    results = {"mode": "dry-run (cpu)" if a.dry_run else "gpu",
               "device": f"{device.platform} {device.device_kind}", "jax": jax.__version__,
               "python": sys.version.split()[0], "budget_s": a.budget_s,
               "tile_plan": f"{settings.transformers[0]} {settings.preset}, "
                            f"--max-kernels {settings.tile_kernels} "
                            f"--configs {settings.tile_configs}",
               "steps": {s.name: s.result for s in steps if s.result}}
    results["facts"] = _facts(steps, data)
    results["seconds"] = round(time.monotonic() - start, 1)
    write_results(out, results)
    with tarfile.open(out / "datasets.tar.gz", "w:gz") as tar:
        tar.add(data, arcname="data")
    shutil.rmtree(data, ignore_errors=True)
    print((out / "results.md").read_text())
    collected = [s for s in steps if s.kind == "collect" and s.result.get("exit") is not None]
    valid = [s for s in steps if s.kind == "validate" and s.result.get("exit") is not None]
    return 0 if collected and all(s.result["exit"] == 0 for s in valid) else 1


if __name__ == "__main__":
    sys.exit(main())
