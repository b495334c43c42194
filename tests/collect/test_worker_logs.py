"""Worker output (XLA's native logging included) goes to the dataset's log, not the terminal;
a failed row keeps the first line that says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import polars as pl
import pytest

from tests.hlo_samples import DOT_RESHAPE_HLO
from tpugraphs_tools.measure import first_reason
from tpugraphs_tools.measure.workers.faults import FAULTS_ENV
from tpugraphs_tools.store import Dataset

NATIVE = "All configs failed during profiling (injected detail line)"


def _collect(tmp_path, faults: dict[int, str], *flags: str) -> subprocess.CompletedProcess:
    hlo = tmp_path / "small.hlo"
    hlo.write_text(DOT_RESHAPE_HLO)
    command = [sys.executable, "-m", "tpugraphs_tools.cli", "collect", "--hlo", str(hlo),
               "--out", str(tmp_path / "data"), "--configs", "3", "--seed", "3", "--warmup",
               "0", "--isolation", "none", "--min-sample-ms", "1", "--max-rounds", "8",
               "--measure-processes", "1", "--loaded-copies", "1", *flags]
    env = {**os.environ, FAULTS_ENV: json.dumps(faults)}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def _rows(tmp_path) -> dict[int, dict]:
    configs = Dataset.open(tmp_path / "data").configs()
    return {r["config_index"]: r for r in configs.filter(
        ~pl.col("status").is_in(["control", "repeat"])).to_dicts()}


def test_native_output_of_failing_compile_workers_goes_to_the_log(tmp_path):
    # config 1: the worker writes to fd 2 and exits 1; config 2: it writes, then raises
    done = _collect(tmp_path, {1: "native_exit", 2: "native_raise"})
    assert done.returncode == 0, done.stderr
    terminal = done.stdout + done.stderr
    # the raw native lines and the rest of the error text stay off the terminal
    assert NATIVE not in terminal and "config_assigner" not in terminal
    assert "injected second line" not in terminal
    rows = _rows(tmp_path)
    assert rows[1]["status"] == "crash"
    assert rows[1]["error_message"] == ("worker process died with exit code 1: Could not get "
                                        "config for HLO: injected native failure")
    assert rows[2]["status"] == "compile_error"
    assert rows[2]["error_message"] == "RuntimeError: INTERNAL: injected status line"
    log = (tmp_path / "data" / ".tgt-logs" / "collect.log").read_text()
    assert log.count(NATIVE) == 2 and "injected second line" in log
    assert "compile_main pid" in log
    assert not list((tmp_path / "data" / ".tgt-logs").glob("worker-*"))  # all settled
    # the summary counts failures by reason
    assert "failures by reason" in done.stdout and "injected status line" in done.stdout


def test_verbose_shows_raw_worker_output(tmp_path):
    done = _collect(tmp_path, {1: "native_raise"}, "--verbose")
    assert done.returncode == 0, done.stderr
    assert NATIVE in done.stderr
    assert not (tmp_path / "data" / ".tgt-logs").exists()


@pytest.mark.parametrize(("text", "reason"), [
    ("E1205 10:00:00.000001  77 autotuner.cc:9] Could not get config\nmore", "Could not get config"),
    ("\n\n  INTERNAL: status\n detail", "INTERNAL: status"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\n    f()\nValueError: bad",
     "ValueError: bad"),
    ("WARNING: All log messages before absl::InitializeLog() are written to STDERR\nreal one",
     "real one"),
    ("\n----\n", None),
])
def test_first_reason(text, reason):
    assert first_reason(text) == reason
