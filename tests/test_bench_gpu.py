"""The prepared GPU device script imports, plans and reports without a GPU (its real run needs
one; ``--dry-run`` runs it end to end on CPU, docs/gpu.md)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "gpu" / "run_gpu.py"


def _load():
    spec = importlib.util.spec_from_file_location("run_gpu", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plan_only_prints_layout_and_tile_steps_for_the_gpu() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--plan-only", "--out", "/tmp/x"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    lines = out.strip().splitlines()
    assert len(lines) == 4
    assert "--backend gpu" in lines[0] and "--program resnet18 --program gpt" in lines[0]
    assert lines[1].endswith("validate /tmp/x/layout")
    assert "--collection tile" in lines[2] and "--dtype bfloat16" in lines[2]


def test_dependency_check_names_what_is_missing() -> None:
    run_gpu = _load()
    assert run_gpu.missing_packages() == []  # this environment has everything
    missing = run_gpu.missing_packages(("numpy", "tgt_no_such_package"))
    assert len(missing) == 1 and missing[0].startswith("tgt_no_such_package (ModuleNotFound")


def test_results_file_reports_every_section(tmp_path: Path) -> None:
    run_gpu = _load()
    summary = {"graphs": 2, "configs_tried": 7, "status": {"ok": 5, "noop": 2}, "ok": 5,
               "noop": 2, "realized_vs_requested": {"true": 3, "false": 1, "unobserved": 0,
                                                    "not_recorded": 0},
               "ratio_min": 0.8, "ratio_median": 1.0, "ratio_max": 1.3, "effects_over_3cv": 2,
               "control": None}
    results = {"mode": "gpu", "device": "gpu H200", "jax": "0.11.0", "jaxlib": "0.11.0",
               "seconds": 300.0, "steps": [{"command": "tgt validate x", "exit": 0,
                                            "seconds": 3.0}],
               "layout": summary, "tile": "no summary: DatasetError: gone"}
    run_gpu.write_results(tmp_path, results)
    text = (tmp_path / "results.md").read_text()
    assert "## layout" in text and "'true': 3" in text and "none in this dataset" in text
    assert "## tile" not in text  # a failed summary is in results.json, not invented here
    assert "gone" in (tmp_path / "results.json").read_text()
