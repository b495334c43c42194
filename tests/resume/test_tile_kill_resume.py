"""SIGKILL a tile collection once its first kernel is committed, rerun it: the same rows as an
uninterrupted run, nothing measured twice, a clean dataset."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

EXTRA = ("control", "repeat")


def _command(out: Path) -> list[str]:
    # One compile worker (the default): which configs a kernel tries is then decided by
    # compile results alone, the same in a resumed run as in an uninterrupted one.
    return [sys.executable, "-m", "tpugraphs_tools.cli", "collect", "--collection", "tile",
            "--program", "resnet18", "--preset", "tiny", "--configs", "3", "--max-kernels", "3",
            "--seed", "1", "--out", str(out), "--warmup", "0", "--isolation", "none",
            "--min-sample-ms", "1", "--max-rounds", "8", "--measure-processes", "1",
            "--loaded-copies", "1", "--workers", "1"]


def _rows(out: Path) -> pl.DataFrame:
    return Dataset.open(out).configs()


def _journaled(out: Path) -> dict[tuple[str, int], dict]:
    """(graph id, config index) -> row of every journaled config row (headers skipped)."""
    rows = {}
    for path in (out / ".tgt-work").glob("*.jsonl"):
        for line in path.read_text().splitlines()[1:]:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # the line being written when the run was killed
            if row["status"] not in EXTRA:
                rows[(path.stem, row["config_index"])] = row
    return rows


def _differences(got: pl.DataFrame, want: pl.DataFrame, keys: list[str]) -> str:
    """The rows one run stored and the other did not (or stored otherwise): a failure says which."""
    only_got = got.join(want, on=got.columns, how="anti")
    only_want = want.join(got, on=want.columns, how="anti")
    return (f"resumed run only: {only_got.sort(keys).to_dicts()}; "
            f"uninterrupted run only: {only_want.sort(keys).to_dicts()}")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> pl.DataFrame:
    out = tmp_path_factory.mktemp("ref") / "data"
    subprocess.run(_command(out), check=True, capture_output=True, timeout=600)
    return _rows(out)


def test_tile_sigkill_after_first_kernel_then_rerun_equals_uninterrupted(reference, tmp_path):
    out = tmp_path / "data"
    proc = subprocess.Popen(_command(out), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    while proc.poll() is None and not (out / "manifest.json").exists():
        time.sleep(0.02)  # the manifest appears with the first committed kernel
    finished = proc.poll() is not None
    if not finished:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not finished, "the run ended before its first kernel was committed"
    committed = _rows(out)
    assert committed["graph_id"].n_unique() >= 1
    journaled = _journaled(out)
    assert (out / ".tgt-work").is_dir()  # the program's kernel record at least

    status = subprocess.run([sys.executable, "-m", "tpugraphs_tools.cli", "collect",
                             "--status", str(out)], capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    assert "committed" in status.stdout and "left" in status.stdout

    rerun = subprocess.run(_command(out), capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert "resumed resnet18" in rerun.stdout
    everything = _rows(out)
    assert not everything.select("graph_id", "config_index").is_duplicated().any()
    keys = ["graph_id", "config_index"]
    got = everything.filter(~pl.col("status").is_in(EXTRA)).select(*keys, "status", "config")
    want = reference.filter(~pl.col("status").is_in(EXTRA)).select(*keys, "status", "config")
    assert got.sort(keys).equals(want.sort(keys)), _differences(got, want, keys)
    # nothing measured twice: committed rows unchanged, journaled rows kept as measured
    assert everything.join(committed, on=keys, how="semi").sort(keys).equals(
        committed.sort(keys))
    final = {(r["graph_id"], r["config_index"]): r for r in everything.to_dicts()}
    for key, row in journaled.items():
        assert final[key]["compile_seconds"] == row["compile_seconds"], key
    assert not (out / ".tgt-work").exists(), sorted(p.name for p in (out / ".tgt-work").iterdir())
    report = validate_path(out)
    # An A/A control outside its CI is what the cheapest timing can give: not about resume.
    findings = [f for f in report.findings if f.check != "dataset.control_outside_ci"]
    assert report.ok() and not findings, [(f.check, f.message) for f in findings]
