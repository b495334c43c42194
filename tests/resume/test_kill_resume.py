"""SIGKILL a collection at random points, resume it, and compare with an uninterrupted run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

HLO = """
HloModule convnet
ENTRY main {
  x = f32[2,16,16,8]{3,2,1,0} parameter(0)
  w = f32[3,3,8,16]{3,2,1,0} parameter(1)
  c = f32[2,16,16,16]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  r = f32[2,4096]{1,0} reshape(c)
  m = f32[4096,8]{1,0} parameter(2)
  ROOT d = f32[2,8]{1,0} dot(r, m), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
CONFIGS = 8


def _command(hlo: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "tpugraphs_tools.cli", "collect", "--hlo", str(hlo),
            "--out", str(out), "--configs", str(CONFIGS), "--warmup", "0",
            "--seed", "1", "--isolation", "none", "--min-sample-ms", "1", "--max-rounds", "8",
            # The cheapest legal timing: the test is about resume, not label quality (four
            # processes x 16 copies per batch made each seed several collections long).
            "--measure-processes", "1", "--loaded-copies", "1"]


def _rows(out: Path) -> pl.DataFrame:
    return Dataset.open(out).configs().select("graph_id", "config_index", "status")


@pytest.fixture(scope="module")
def hlo_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hlo") / "convnet.hlo"
    path.write_text(HLO)
    return path


@pytest.fixture(scope="module")
def reference(hlo_file, tmp_path_factory) -> tuple[pl.DataFrame, float]:
    """Rows of an uninterrupted run, and how long it took (kill points are drawn within it).
    Timed on a second run: the first pays one-off costs (writing every module's bytecode in a
    fresh checkout, cold file caches) that the test's runs do not, so drawn from its duration
    every kill came after its run had ended."""
    warm = tmp_path_factory.mktemp("warm") / "data"
    subprocess.run(_command(hlo_file, warm), check=True, capture_output=True, timeout=600)
    out = tmp_path_factory.mktemp("ref") / "data"
    start = time.monotonic()
    subprocess.run(_command(hlo_file, out), check=True, capture_output=True, timeout=600)
    return _rows(out), time.monotonic() - start


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sigkill_then_resume_equals_uninterrupted(seed, hlo_file, reference, tmp_path):
    reference, duration = reference
    out = tmp_path / "data"
    rng = random.Random(seed)
    kills = 0
    for _ in range(3):  # kill up to three times at random moments, then let it finish
        proc = subprocess.Popen(_command(hlo_file, out), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.2, 0.8) * duration)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 1, "every run finished before its kill: the test exercised no resume"
    done = subprocess.run(_command(hlo_file, out), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    everything = _rows(out)
    # A/A control rows (one per timed batch) and repeat rows follow the configs; their number
    # depends on how the batches fell between the runs.
    extra = pl.col("status").is_in(["control", "repeat"])
    controls = everything.filter(extra)
    assert controls.height >= 1 and controls["config_index"].min() >= CONFIGS
    assert not everything.select("graph_id", "config_index").is_duplicated().any()
    rows = everything.filter(~extra)
    reference = reference.filter(~extra)
    assert rows.height == reference.height == CONFIGS
    assert rows.select("graph_id", "config_index").sort("config_index").equals(
        reference.select("graph_id", "config_index").sort("config_index"))
    assert not (out / ".tgt-work").exists() or not any((out / ".tgt-work").iterdir())
    report = validate_path(out)
    assert report.ok(), [f.message for f in report.findings]
