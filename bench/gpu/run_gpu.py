"""The prepared device check: what one short GPU window must answer, in that order, with
results that survive a cut.

Run by ``bench/gpu/run_gpu.sh OUT`` (which installs the carried wheels first and gives this
script what is left of the window as ``--budget-s``), from the source tree (no install). The
plan (gpu_plan.py) puts the probe first, the device-vs-host tile pair second and its rerun
before any breadth step; every step is a real ``tgt`` command (or the probe) in a process
group of its own, with its own limit cut to what is left of the budget less :data:`RESERVE_S`
(kept to pack OUT; 20 s on a GPU); a step that no longer fits is skipped and says so.

Results survive a cut: after every step (and before the first) ``results.json`` and
``results.md`` are rewritten (each step's exit, wall time, limit and figures, the comparisons
and the headline answers) and ``datasets.tar.gz`` is rebuilt from every dataset finished so
far, each written to a temporary file and renamed. A SIGTERM (the shell's ``timeout``, a
person) stops the running step's process group, writes both and exits; a SIGKILL leaves what
the last finished step wrote. The datasets are collected outside OUT ($TMPDIR), so OUT holds at
most 6 files: results.md, results.json, datasets.tar.gz, run.log, nvidia-smi.txt (from
run_gpu.sh) and, mid-write, one temporary file.

``--dry-run`` runs the same code path on CPU with tiny programs (the test suite does);
``--plan-only`` prints the steps.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_figures import answers, comparisons, summarize  # noqa: E402
from gpu_plan import DRY, GPU, Settings, Step, plan  # noqa: E402
from gpu_report import write_report  # noqa: E402

# Every third-party package the collect / validate / baseline path imports.
NEEDED = ("jax", "jaxlib", "numpy", "pyarrow", "polars", "pymetis", "click", "rich", "jsonschema",
          "flax", "optax", "scipy", "yaml", "ml_dtypes")
RESERVE_S = {"gpu": 20.0, "cpu": 5.0}   # kept to pack OUT after the last step
MIN_STEP_S = {"gpu": 20.0, "cpu": 8.0}  # a step given less than this is skipped
KILL_GRACE_S = 5.0     # SIGTERM to SIGKILL of a step's process group
LOG_KEEP = 12 * 2**20  # run.log is cut to this (the device tool returns files ≤ 16 MiB)


class Stopped(Exception):
    """SIGTERM arrived: stop the running step, write what is there, exit."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Stopped(signal.Signals(signum).name)


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


def _device_info() -> tuple[str, str, str]:
    """(platform, device kind, jax version), read in a child process: the runner itself never
    holds a CUDA context (nor the memory jax preallocates) while the steps use the GPU."""
    code = ("import jax; d = jax.devices()[0]; "
            "print(d.platform, d.device_kind, jax.__version__, sep='|')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=180, check=False,
                          env={**_env(), "XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines or lines[-1].count("|") != 2:
        return "none", f"(jax failed: {proc.stderr.strip()[-300:]})", "?"
    platform, kind, version = lines[-1].split("|")
    return platform, kind, version


def _command(step: Step, data: Path, dry_run: bool) -> list[str]:
    if step.kind == "probe":
        return [sys.executable, str(ROOT / "bench" / "gpu" / "probe_gpu.py"),
                str(data / "probes"), *(["--dry-run"] if dry_run else [])]
    return [sys.executable, "-m", "tpugraphs_tools.cli", *step.argv]


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the step's process group (its workers too), SIGKILL what outlives the grace."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class Runner:
    """One run of the plan: its clock, its OUT files and its results."""

    def __init__(self, out: Path, data: Path, settings: Settings, budget_s: float,
                 dry_run: bool, header: dict[str, Any], max_steps: int | None = None) -> None:
        self.out, self.data, self.settings, self.dry_run = out, data, settings, dry_run
        self.budget_s, self.max_steps = budget_s, max_steps
        self.start = time.monotonic()
        self.steps = plan(settings, data)
        self.datasets: dict[str, Any] = {}
        self.results: dict[str, Any] = {**header, "budget_s": budget_s, "state": "running",
                                        "plan": [f"{s.stage}: {s.name}" for s in self.steps],
                                        "steps": {}}

    def run_and_pack(self) -> None:
        """Every step that fits, then OUT packed; a SIGTERM stops the running step first."""
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            self.run()
        except Stopped as stop:
            self.results["state"] = f"stopped: {stop}"
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # packing is short: let it finish
        self.checkpoint(archive=True)
        signal.signal(signal.SIGTERM, previous)
        _cut_log(self.out / "run.log")
        shutil.rmtree(self.data, ignore_errors=True)

    def left(self) -> float:
        return (self.budget_s - (time.monotonic() - self.start)
                - RESERVE_S[self.settings.backend])

    def run(self) -> None:
        self.checkpoint()
        for i, step in enumerate(self.steps):
            if self.max_steps is not None and i >= self.max_steps:
                step.result = {"skipped": f"--max-steps {self.max_steps}"}
            elif step.kind in ("validate", "baseline") and not (
                    self.data / str(step.dataset) / "manifest.json").exists():
                step.result = {"skipped": f"no {step.dataset} dataset"}
            elif self.left() < MIN_STEP_S[self.settings.backend]:
                step.result = {"skipped": f"{max(0.0, self.left()):.0f} s left"}
            else:
                self.run_step(step, min(step.limit_s, self.left()))
                print(f"{step.name}: exit {step.result['exit']} ({step.result['seconds']} s)",
                      flush=True)
            self.results["steps"][step.name] = step.result
            self.checkpoint(archive=step.kind in ("collect", "probe") and "exit" in step.result)
        self.results["state"] = "finished"

    def run_step(self, step: Step, limit_s: float) -> None:
        cmd = _command(step, self.data, self.dry_run)
        self.results["steps"][step.name] = {"running": True, "limit_s": round(limit_s)}
        started = time.monotonic()
        with (self.out / "run.log").open("ab") as log:
            log.write(f"\n=== {step.name}: {' '.join(cmd[1:])} (limit {limit_s:.0f} s)\n"
                      .encode())
            log.flush()
            proc = subprocess.Popen(cmd, env=_env(), stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                rc = proc.wait(timeout=limit_s)
            except subprocess.TimeoutExpired:
                _stop_group(proc)
                rc = 124
            except Stopped:
                _stop_group(proc)
                step.result = {"exit": 143, "seconds": round(time.monotonic() - started, 1),
                               "limit_s": round(limit_s), "stopped": "SIGTERM"}
                self.results["steps"][step.name] = step.result
                raise
        step.result = {"exit": rc, "seconds": round(time.monotonic() - started, 1),
                       "limit_s": round(limit_s)}
        self.figures(step)

    def figures(self, step: Step) -> None:
        """The step's own figures (a damaged dataset is a finding, not a crash)."""
        target = self.data / str(step.dataset)
        if step.kind == "probe":
            path = target / "probe.json"  # written part by part: a cut probe keeps its parts
            step.result["figures"] = json.loads(path.read_text()) if path.exists() else None
        elif step.kind == "collect" and (target / "manifest.json").exists():
            try:
                figures = summarize(target, step.result["seconds"])
            except Exception as exc:
                figures = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            step.result["figures"] = self.datasets[str(step.dataset)] = figures

    def checkpoint(self, archive: bool = False) -> None:
        """results.json and results.md as of now; the datasets archive rebuilt if asked."""
        probe = self.results["steps"].get("probe", {}).get("figures")
        compared = comparisons(self.data)
        self.results.update(seconds=round(time.monotonic() - self.start, 1),
                            answers=answers(self.datasets, compared, probe))
        _atomic(self.out / "results.json", json.dumps(self.results, indent=1, default=str))
        _atomic(self.out / "results.md", write_report(self.results))
        if archive:
            tmp = self.out / "datasets.tar.gz.tmp"
            with tarfile.open(tmp, "w:gz") as tar:
                tar.add(self.data, arcname="data")
            os.replace(tmp, self.out / "datasets.tar.gz")


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _cut_log(path: Path) -> None:
    """Keep run.log under the device tool's file limit: its head and its tail."""
    if path.exists() and path.stat().st_size > LOG_KEEP:
        data = path.read_bytes()
        path.write_bytes(data[:2**20] + b"\n[... cut ...]\n" + data[-(LOG_KEEP - 2**20):])


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="where results go (required unless --plan-only)")
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny programs")
    p.add_argument("--plan-only", action="store_true", help="print the steps and exit")
    p.add_argument("--budget-s", type=float, default=None,
                   help="wall time for the steps and packing (run_gpu.sh gives what is left "
                        "of its window; default 500 on a GPU, 300 dry run)")
    p.add_argument("--max-steps", type=int, default=None,
                   help="run the plan's first N steps only (--max-steps 1: the probe alone)")
    a = p.parse_args(argv)
    if a.out is None and not a.plan_only:
        p.error("--out is required")
    a.budget_s = a.budget_s or (300.0 if a.dry_run else 500.0)
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    out = Path(a.out or ".")
    settings = DRY if a.dry_run else GPU
    if a.plan_only:
        print("DATA: a fresh folder under $TMPDIR; OUT gets results and datasets.tar.gz",
              file=sys.stderr)
        for step in plan(settings, Path("DATA")):
            print(f"[{step.name}, {step.stage}, ≤{step.limit_s:.0f} s] tgt {' '.join(step.argv)}")
        return 0
    missing = missing_packages()
    if missing:
        print("cannot run: packages tgt needs are not importable here (carry them as wheels, "
              "bench/gpu/README.md):\n  " + "\n  ".join(missing), file=sys.stderr)
        return 3
    platform, kind, jax_version = _device_info()
    if not a.dry_run and platform != "gpu":
        print(f"no GPU: jax's default device is {platform} {kind} (use --dry-run)",
              file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="tgt-gpu-data-"))
    header = {"mode": "dry-run (cpu)" if a.dry_run else "gpu", "device": f"{platform} {kind}",
              "jax": jax_version, "python": sys.version.split()[0], "data": str(data)}
    runner = Runner(out, data, settings, a.budget_s, a.dry_run, header, a.max_steps)
    runner.run_and_pack()
    print((out / "results.md").read_text())
    done = [s for s in runner.steps if "exit" in s.result]
    valid = [s for s in done if s.kind == "validate"]
    return 0 if any(s.kind == "collect" for s in done) and all(
        s.result["exit"] == 0 for s in valid) else 1


if __name__ == "__main__":
    sys.exit(main())
