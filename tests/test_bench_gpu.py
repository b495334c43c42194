"""The prepared device check (bench/gpu/run_gpu.sh): its plan for a GPU, its dependency check,
its report, and its ``--dry-run``, which runs the same code path end to end on CPU."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
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


def test_gpu_plan_covers_the_reference_set_in_order_of_importance() -> None:
    out = subprocess.run([sys.executable, str(BENCH / "run_gpu.py"), "--plan-only", "--out",
                          "/tmp/x"], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    lines = out.strip().splitlines()
    names = [line.split(",")[0].strip("[") for line in lines]
    assert names[:3] == ["probe", "tile", "validate_tile"]
    tile = lines[1]
    assert "--program gpt --max-kernels 6 --configs 10" in tile and "--backend gpu" in tile
    assert "--dtype bfloat16" in tile
    layout = next(line for line in lines if line.startswith("[layout,"))
    for program in ("gpt", "bert", "resnet18", "unet"):  # ≥ 4: transformers and convnets
        assert f"--program {program}" in layout
    assert any("--strategy random" in line for line in lines)
    assert any("--timer device" in line for line in lines)
    assert names[-1] == "baseline"
    assert all(f"validate_{n}" in names for n in names
               if not n.startswith(("validate", "probe", "baseline")))


def test_dependency_check_names_what_is_missing() -> None:
    run_gpu = _load()
    assert run_gpu.missing_packages() == []  # this environment has everything
    missing = run_gpu.missing_packages(("numpy", "tgt_no_such_package"))
    assert len(missing) == 1 and missing[0].startswith("tgt_no_such_package (ModuleNotFound")


def _dry_run(tmp_path: Path, *args: str) -> tuple[int, Path, str]:
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "TGT_WHEELS": str(tmp_path / "none")}
    proc = subprocess.run([str(BENCH / "run_gpu.sh"), str(out), "--dry-run", *args], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    return proc.returncode, out, proc.stdout + proc.stderr


def test_dry_run_collects_validates_and_reports_on_cpu(tmp_path: Path) -> None:
    """A short budget: the probe, the first tile collection and its validation run; the
    rest is skipped and says so. The report, the archive and the log are there."""
    rc, out, log = _dry_run(tmp_path, "--budget-s", "70")
    assert rc == 0, log[-3000:]
    files = sorted(p.name for p in out.iterdir())
    assert files == ["datasets.tar.gz", "results.json", "results.md", "run.log"]
    results = json.loads((out / "results.json").read_text())
    assert results["steps"]["tile"]["exit"] == 0
    assert results["steps"]["validate_tile"]["exit"] == 0
    assert any("skipped" in s for s in results["steps"].values())
    tile = results["facts"]["datasets"]["tile"]
    assert tile["timers"] == {"host": tile["ok_labels"] + 1}  # CPU: no device timer
    assert tile["kernels_spread_beyond_noise"].endswith("/1")
    probe = results["facts"]["probe"]
    assert probe["backend"] == "cpu" and "error" in probe["timers"][0]["cupti"]
    text = (out / "results.md").read_text()
    for needed in ("timer used for tile labels", "default kernels' time per run",
                   "spread beyond the A/A noise floor", "claimed orders kept in the rerun",
                   "labels per minute", "wall time"):
        assert needed in text


@pytest.mark.slow
def test_full_dry_run_reaches_every_step(tmp_path: Path) -> None:
    rc, out, log = _dry_run(tmp_path)
    assert rc == 0, log[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert not [k for k, v in results["steps"].items() if "skipped" in v]
    facts = results["facts"]
    assert isinstance(facts["rerun_layout_kept"], dict)
    assert isinstance(facts["layout_host_vs_device"], dict)
    assert results["steps"]["baseline"]["exit"] in (0, 1)  # 1: too little data to score
