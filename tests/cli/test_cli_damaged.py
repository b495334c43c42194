"""Every command that reads a dataset, run on a damaged copy: one line naming the damaged file,
exit 1, no traceback (a truncated table part, a corrupt npz, a missing manifest)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main

RUNNER = CliRunner(env={"COLUMNS": "300"})


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tpugraphs_tools.baseline.synthetic import write_synthetic_dataset

    root = tmp_path_factory.mktemp("damaged") / "d"
    write_synthetic_dataset(root, programs=3, graphs_per_program=1, configs=6, label_ci=0.02)
    return root


def _truncate_part(root: Path) -> str:
    [part] = sorted(root.glob("tables/configs/part-*.parquet"))[:1]
    part.write_bytes(part.read_bytes()[:100])
    return part.relative_to(root).as_posix()


def _corrupt_npz(root: Path) -> str:
    npz = sorted(root.glob("graphs/*.npz"))[0]
    data = bytearray(npz.read_bytes())
    data[len(data) // 3: len(data) // 3 + 64] = bytes(64)  # zeroes inside the compressed data
    npz.write_bytes(bytes(data))
    return npz.relative_to(root).as_posix()


def _drop_manifest(root: Path) -> str:
    (root / "manifest.json").unlink()
    return "manifest.json"


DAMAGE: dict[str, Callable[[Path], str]] = {
    "truncated-part": _truncate_part, "corrupt-npz": _corrupt_npz,
    "missing-manifest": _drop_manifest}

# every command that reads a dataset; {d} is the damaged copy, {o} a fresh output folder
COMMANDS = {
    "validate": "validate {d}",
    "report": "report {d} --out {o}",
    "export": "export {d} --out {o}",
    "collect-status": "collect --status {d}",
    "collect": "collect --hlo {h} --out {d} --configs 0",
    "baseline": "baseline {d} --epochs 1 --holdout configs --report {o}/r.json",
    "partition": "partition {d} --method contiguous",
    "publish": "publish {d} --out {o}",
}

# A damaged file is found by the commands that read it (the graphs' arrays, the configs table)
# and by collect, which checks every part's footer before it adds to a dataset. Finding
# damage inside an npz's compressed data takes reading all of it: report, --status and
# collect, which never read the arrays, do not (validate does, and names the file).
READS = {"corrupt-npz": {"validate", "export", "baseline", "partition", "publish"},
         "truncated-part": set(COMMANDS) - {"partition"},
         "missing-manifest": set(COMMANDS)}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_damaged_dataset_gives_one_line_naming_the_file(
        pristine: Path, tmp_path: Path, tiny_hlo: str, damage: str, command: str) -> None:
    if command not in READS[damage]:
        pytest.skip("this command does not read the damaged file")
    root = tmp_path / "d"
    shutil.copytree(pristine, root)
    damaged = DAMAGE[damage](root)
    hlo = tmp_path / "tiny.hlo"
    hlo.write_text(tiny_hlo)
    args = COMMANDS[command].format(d=root, o=tmp_path / "out", h=hlo).split()
    result = RUNNER.invoke(main, args)
    text = result.output
    assert result.exit_code == 1, text
    assert not isinstance(result.exception, Exception) or isinstance(result.exception,
                                                                       SystemExit), text
    assert "Traceback" not in text
    if command == "validate":  # a report of findings, not an error line
        assert damaged in text
        return
    lines = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, text
    assert damaged.split("/")[-1] in lines[0], text
