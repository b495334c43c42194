"""The prepared device check (bench/gpu/run_gpu.sh): its plan for a GPU in the order a first
window must answer, its dependency check, results that survive a cut (a step budget, a
SIGTERM, a SIGKILL part way), and its ``--dry-run``, the same code path end to end on CPU."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "gpu"


def _load():
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("run_gpu", BENCH / "run_gpu.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_gpu"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _plan(*args: str) -> list[tuple[str, str, str]]:
    out = subprocess.run([sys.executable, str(BENCH / "run_gpu.py"), "--plan-only", *args],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    steps = []
    for line in out.strip().splitlines():
        head, command = line.split("] tgt ", 1)
        name, stage, _limit = head.strip("[").split(", ")
        steps.append((name, stage, command))
    return steps


def test_gpu_plan_asks_the_first_window_questions_first():
    steps = _plan()
    names = [n for n, _, _ in steps]
    commands = dict((n, c) for n, _, c in steps)
    # (a) the probe, (b) the device-vs-host tile pair, (c) its rerun, before any breadth
    assert names[:7] == ["probe", "tile_device", "validate_tile_device", "tile_host",
                         "validate_tile_host", "rerun_tile_device",
                         "validate_rerun_tile_device"]
    stages = [s for _, s, _ in steps]
    assert stages == sorted(stages)  # a, b, c, d, then e (breadth) only in the time left
    assert names.index("layout_host") < names.index("layout_device") < names.index("tile_more")
    device, host = commands["tile_device"], commands["tile_host"]
    assert device.replace("--timer device", "--timer host").replace(
        "tile_device", "tile_host") == host  # same kernels, configs and budgets
    for needed in ("--program gpt --max-kernels 2", "--backend gpu", "--dtype bfloat16",
                   "--budget-seconds 4", "--max-seconds-per-config 1"):
        assert needed in device
    assert commands["rerun_tile_device"].replace("rerun_tile_device", "tile_device") == device
    assert "--timer device" in commands["layout_device"]
    assert names[-1] == "baseline"
    assert all(f"validate_{n}" in names for n, _, c in steps if c.startswith("collect"))


def test_dependency_check_names_what_is_missing() -> None:
    run_gpu = _load()
    assert run_gpu.missing_packages() == []  # this environment has everything
    missing = run_gpu.missing_packages(("numpy", "tgt_no_such_package"))
    assert len(missing) == 1 and missing[0].startswith("tgt_no_such_package (ModuleNotFound")


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "TGT_WHEELS": str(tmp_path / "none"),
           "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([str(BENCH / "run_gpu.sh"), str(out), "--dry-run", *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    return proc, out


def _archived(out: Path) -> set[str]:
    with tarfile.open(out / "datasets.tar.gz") as tar:
        return {n.split("/")[1] for n in tar.getnames() if n.endswith("manifest.json")}


def test_dry_run_of_the_first_steps_collects_validates_reports_and_packs(tmp_path: Path
                                                                       ) -> None:
    """``--max-steps 3``: the probe, the device tile step and its validation run (the CPU has
    no device timer: the labels are host time and say why); every later step is skipped and
    says so; the report, the archive of the finished dataset and the log are there."""
    proc, out = _start(tmp_path, "--max-steps", "3")
    log, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, log[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["datasets.tar.gz", "results.json",
                                                     "results.md", "run.log"]
    results = json.loads((out / "results.json").read_text())
    assert results["state"] == "finished"
    steps = results["steps"]
    assert steps["tile_device"]["exit"] == 0 and steps["validate_tile_device"]["exit"] == 0
    assert steps["tile_host"] == {"skipped": "--max-steps 3"}
    tile = steps["tile_device"]["figures"]
    assert tile["timers"] == {"host": tile["ok_labels"] + 1}  # CPU: no device timer...
    assert tile["timer_fallback"][0].startswith("no device timer: cupti")  # ...and why
    assert tile["kernels_spread_beyond_noise"].endswith("/1")
    probe = steps["probe"]["figures"]
    assert probe["backend"] == "cpu" and "error" in probe["timers"][0]["cupti"]
    assert probe["done"][:2] == ["environment", "timers"]
    assert "cuda_versions" in probe["environment"]
    assert _archived(out) == {"tile_device"}
    text = (out / "results.md").read_text()
    for needed in ("a. timers", "CUDA runtime / driver / CUPTI", "default kernels' time per "
                   "run", "spread beyond the A/A noise floor", "kept in the device rerun",
                   "labels per minute", "wall time"):
        assert needed in text


def _runner(run_gpu, tmp_path: Path, monkeypatch, marker: str, budget_s: float):
    """A Runner of the dry plan whose every step is a 60 s sleep (``marker`` in its line)."""
    monkeypatch.setattr(run_gpu, "_command", lambda step, data, dry: [
        sys.executable, "-c", f"import time; time.sleep(60)  # {marker}"])
    out, data = tmp_path / "out", tmp_path / "data"
    out.mkdir()
    data.mkdir()
    return run_gpu.Runner(out, data, run_gpu.DRY, budget_s, True,
                          {"mode": "test", "device": "cpu", "jax": "-", "python": "-"}), out


def test_each_step_is_cut_to_what_is_left_and_the_run_stops_in_its_budget(tmp_path: Path,
                                                                          monkeypatch):
    run_gpu = _load()
    marker = f"tgt-budget-test-{os.getpid()}"
    runner, out = _runner(run_gpu, tmp_path, monkeypatch, marker, budget_s=14.0)
    started = time.monotonic()
    runner.run_and_pack()
    assert time.monotonic() - started < 14.0 + run_gpu.KILL_GRACE_S
    results = json.loads((out / "results.json").read_text())
    probe = results["steps"]["probe"]
    assert probe["exit"] == 124 and probe["limit_s"] == 9  # 14 s less the 5 s kept to pack
    assert all("skipped" in s for n, s in results["steps"].items() if n != "probe")
    assert results["state"] == "finished" and _processes_with(marker) == []


def _processes_with(text: str) -> list[int]:
    """Ids of this machine's processes whose command line holds ``text``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text in (proc / "cmdline").read_text(errors="replace"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _kill_leftovers(tmp_path: Path) -> None:
    """End the steps a SIGKILL of the runner left behind (each runs in a session of its own),
    found by the TMPDIR in their command lines: only processes this test started."""
    for pid in _processes_with(str(tmp_path)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


def test_a_run_killed_part_way_leaves_every_finished_step(tmp_path: Path) -> None:
    """SIGKILL of the whole run 2 s after the device tile step's validation (a clock the test
    reads from results.json), inside the host tile step: results.json still holds every
    finished step's figures and the archive every finished dataset; nothing is half-written."""
    proc, out = _start(tmp_path)
    deadline = time.monotonic() + 500
    finished: list[str] = []
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            try:
                steps = json.loads((out / "results.json").read_text())["steps"]
            except (OSError, ValueError):
                continue
            finished = [n for n, s in steps.items() if "exit" in s]
            if "validate_tile_device" in finished:
                break
        time.sleep(2)  # into the next step
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        _kill_leftovers(tmp_path)
    assert "validate_tile_device" in finished, finished
    results = json.loads((out / "results.json").read_text())
    assert results["state"] == "running"  # it never got to say otherwise
    done = {n: s for n, s in results["steps"].items() if "exit" in s}
    assert {"probe", "tile_device", "validate_tile_device"} <= set(done)
    assert done["tile_device"]["exit"] == 0
    assert done["tile_device"]["figures"]["ok_labels"] >= 1
    assert done["probe"]["figures"]["done"][0] == "environment"
    assert results["answers"]["tile_default_us_per_run"]["tile_device"]
    collected = {n for n, s in done.items() if "figures" in s and n != "probe"}
    assert "tile_device" in collected and collected <= _archived(out)
    files = [p.name for p in out.iterdir()]
    assert len(files) <= 6 and {f.removesuffix(".tmp") for f in files} <= {
        "results.json", "results.md", "run.log", "datasets.tar.gz"}, files


def test_sigterm_stops_the_running_step_and_packs(tmp_path: Path, monkeypatch) -> None:
    """A SIGTERM (the shell's timeout) while a step runs: the step's process group is ended,
    it is recorded as stopped, results and archive are written."""
    run_gpu = _load()
    marker = f"tgt-sigterm-test-{os.getpid()}"
    runner, out = _runner(run_gpu, tmp_path, monkeypatch, marker, budget_s=300.0)
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    runner.run_and_pack()
    results = json.loads((out / "results.json").read_text())
    assert results["state"] == "stopped: SIGTERM"
    assert results["steps"]["probe"]["stopped"] == "SIGTERM"
    assert results["steps"]["probe"]["exit"] == 143
    assert (out / "datasets.tar.gz").exists() and not (tmp_path / "data").exists()
    assert _processes_with(marker) == []


@pytest.mark.slow
def test_full_dry_run_reaches_every_step(tmp_path: Path) -> None:
    proc, out = _start(tmp_path)
    log, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, log[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert not [k for k, v in results["steps"].items() if "skipped" in v]
    answers = results["answers"]
    for name in ("tile_device_vs_host", "tile_rerun_kept", "layout_device_vs_host"):
        assert isinstance(answers[name], dict), name
    assert results["steps"]["baseline"]["exit"] in (0, 1)  # 1: too little data to score
