"""validate and report hold a bounded batch of config rows, not every graph's rows at once.

Each command runs in a fresh Python process that reports its own peak RSS, on two synthetic
datasets that differ only in the number of graphs (4 and 36, 3,000 configs each: 12k and 108k
config rows). The batch size is lowered to 2,048 rows so the larger dataset spans ~50 batches.
Holding every row at once (what validate and report did before they read configs in batches of
whole graphs, and what a per-row cache added anywhere would do) shows as growth: measured
2026-12-05, validate +93 MiB and report +28 MiB before (commit 6f6a302), +11 and +9 MiB after.
Peaks are VmHWM, not ru_maxrss (which keeps the forking parent's peak across exec). No timing:
only the memory difference of two runs on one machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tpugraphs_tools.baseline.synthetic import write_synthetic_dataset

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = 3000
SMALL, LARGE = 4, 36
BATCH_ROWS = 2048
# Between the batched (≤ 11 MiB) and the row-holding (≥ 28 MiB) growth measured above.
MAX_GROWTH_MIB = 20

PEAK = f"""
import sys
import tpugraphs_tools.store
sys.modules["tpugraphs_tools.store.key_batches"].key_batches.__defaults__ = ({BATCH_ROWS},)
import tpugraphs_tools.validate.configs_part as configs_part
configs_part.BATCH_ROWS = {BATCH_ROWS}
from tpugraphs_tools.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    # VmHWM, not ru_maxrss: the latter keeps the forking parent's (pytest's) peak across exec
    hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
    print("PEAK_KIB", hwm[0].split()[1], file=sys.stderr)
"""


def _peak_mib(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-c", PEAK, *args], capture_output=True, text=True,
                          env=env, timeout=600)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("PEAK_KIB")]
    assert lines, proc.stderr[-2000:]
    return int(lines[-1].split()[1]) / 1024


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("memory")
    out = {}
    for graphs in (SMALL, LARGE):
        path = root / f"data-{graphs}"
        write_synthetic_dataset(path, programs=1, graphs_per_program=graphs, nodes=(20, 30),
                                configs=CONFIGS, label_ci=0.01)
        out[graphs] = path
    return out


@pytest.mark.parametrize("command", ["validate", "report"])
def test_peak_memory_does_not_follow_the_config_rows(datasets: dict[int, Path], command: str,
                                                     tmp_path: Path) -> None:
    def args(graphs: int) -> list[str]:
        data = str(datasets[graphs])
        if command == "report":
            return ["report", data, "--out", str(tmp_path / f"report-{graphs}")]
        return ["validate", data]

    small = _peak_mib(args(SMALL))
    large = _peak_mib(args(LARGE))
    assert large - small < MAX_GROWTH_MIB, (
        f"{command}: peak RSS {small:.0f} MiB at {SMALL * CONFIGS:,} config rows, "
        f"{large:.0f} MiB at {LARGE * CONFIGS:,}: rows are held across graphs")
