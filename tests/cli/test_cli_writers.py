"""Never lose a user's work (issue 45): one writer per dataset for every command that writes
one, one rule for an ``--out`` holding other files, and a missing graph file called missing
(baseline's cache included)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.hlo_samples import DOT_RESHAPE_HLO
from tests.lock_helpers import held_by_another_process
from tpugraphs_tools.baseline.synthetic import write_synthetic_dataset
from tpugraphs_tools.cli import main
from tpugraphs_tools.errors import DatasetFileError
from tpugraphs_tools.store import LOCK_FILE, Dataset
from tpugraphs_tools.validate import validate_path

RUNNER = CliRunner(env={"COLUMNS": "300"})
TINY_BASELINE = ["--epochs", "0", "--hidden", "8", "--layers", "1", "--configs-per-graph", "2",
                 "--batch-graphs", "2"]


def run(*args: str | Path) -> Result:
    return RUNNER.invoke(main, [str(a) for a in args], catch_exceptions=False)


def one_line(result: Result) -> str:
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("writers") / "syn"
    write_synthetic_dataset(root, programs=2, graphs_per_program=2, nodes=(20, 30), configs=4)
    return root


@pytest.fixture
def data(synthetic: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(synthetic, copy)
    return copy


@pytest.fixture
def hlo_files(tmp_path: Path, tiny_hlo: str) -> tuple[Path, Path]:
    (tmp_path / "tiny.hlo").write_text(tiny_hlo)
    (tmp_path / "dot.hlo").write_text(DOT_RESHAPE_HLO)
    return tmp_path / "tiny.hlo", tmp_path / "dot.hlo"


def graph_ids(root: Path) -> set[str]:
    return set(Dataset.open(root).graphs()["graph_id"])


def test_a_second_collection_is_refused_at_once_and_a_killed_ones_lock_taken_over(
        tmp_path: Path, hlo_files: tuple[Path, Path]) -> None:
    """Two collections into one folder both exited 0 and one graph was lost."""
    tiny, dot = hlo_files
    out = tmp_path / "d"
    assert run("collect", "--hlo", tiny, "--out", out, "--configs", "0").exit_code == 0
    before = graph_ids(out)
    with held_by_another_process(out) as proc:     # a collection running into ``out``
        result = run("collect", "--hlo", dot, "--out", out, "--configs", "0")
        assert result.exit_code == 1
        line = one_line(result)
        assert f"being written by another tgt run (pid {proc.pid} on " in line
        assert " since " in line and f"remove {out / LOCK_FILE}" in line
        assert graph_ids(out) == before
    assert (out / LOCK_FILE).exists()              # left behind by the kill -9
    result = run("collect", "--hlo", dot, "--out", out, "--configs", "0")
    assert result.exit_code == 0, result.output
    assert len(graph_ids(out)) == 2 and not (out / LOCK_FILE).exists()
    assert [f.message for f in validate_path(out).findings] == []


@pytest.mark.parametrize("command", [
    ["partition", "{data}"],
    ["baseline", "{data}", *TINY_BASELINE],          # its report goes into DATA
    ["export", "{other}", "--out", "{data}", "--overwrite"],
    ["publish", "{other}", "--out", "{data}", "--overwrite"],
], ids=["partition", "baseline", "export", "publish"])
def test_every_command_writing_a_dataset_is_refused_while_another_run_writes_it(
        command: list[str], data: Path, synthetic: Path) -> None:
    args = [a.format(data=data, other=synthetic) for a in command]
    with held_by_another_process(data) as proc:
        result = run(*args)
    assert result.exit_code == 1
    assert f"being written by another tgt run (pid {proc.pid} " in one_line(result)
    assert (data / "manifest.json").exists() and not (data / "partitions").exists()


def test_import_into_a_dataset_being_written_is_refused(data: Path, synthetic: Path,
                                                        tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    assert run("export", synthetic, "--out", tree).exit_code == 0
    with held_by_another_process(data) as proc:
        result = run("import", tree, "--out", data, "--overwrite")
    assert result.exit_code == 1
    assert f"(pid {proc.pid} " in one_line(result)
    assert graph_ids(data) == graph_ids(synthetic)


def test_collect_refuses_an_out_holding_other_files_as_export_does(
        tmp_path: Path, hlo_files: tuple[Path, Path], synthetic: Path) -> None:
    """collect accepted a folder holding notes.txt, and validate then failed on it."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    result = run("collect", "--hlo", hlo_files[0], "--out", out, "--configs", "0")
    assert result.exit_code == 1
    assert one_line(result).endswith(f"{out}: folder exists, is not empty (notes.txt) and is "
                                     "not a tgt dataset; choose an empty or new --out, or a "
                                     "dataset to add to")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    result = run("export", synthetic, "--out", out)
    assert result.exit_code == 1
    assert f"{out}: folder exists and is not empty (notes.txt)" in one_line(result)


def test_collect_accepts_a_folder_holding_only_an_earlier_runs_logs(
        tmp_path: Path, hlo_files: tuple[Path, Path]) -> None:
    out = tmp_path / "d"
    (out / ".tgt-logs").mkdir(parents=True)
    (out / ".tgt-logs" / "collect.log").write_text("an earlier run that failed\n")
    result = run("collect", "--hlo", hlo_files[0], "--out", out, "--configs", "0")
    assert result.exit_code == 0, result.output


def test_a_deleted_npz_fails_baseline_in_one_line_though_its_cache_is_warm(data: Path) -> None:
    """baseline trained on its .tgt-cache after a graph's npz was deleted (exit 0)."""
    assert run("baseline", data, *TINY_BASELINE).exit_code == 0
    assert (data / ".tgt-cache").is_dir()
    [npz, *_] = sorted((data / "graphs").glob("*.npz"))
    npz.unlink()
    for extra in ([], ["--in-memory-configs"]):
        result = run("baseline", data, *TINY_BASELINE, *extra)
        assert result.exit_code == 1
        line = one_line(result)
        assert f"{npz}: missing" in line and "in-memory-configs" not in line


def test_a_changed_npz_is_not_read_from_the_cache(data: Path) -> None:
    from tpugraphs_tools.baseline.data import TgtSource

    source = TgtSource(data)
    graph_id = sorted(source.dataset.graphs()["graph_id"])[0]
    key = source.content_key(graph_id)
    assert key == TgtSource(data).content_key(graph_id)
    with open(source.npz_file(graph_id), "ab") as f:
        f.write(b"appended outside tgt")
    expected = r"bytes, manifest.json says \d+ \(changed outside tgt\?\)"
    with pytest.raises(DatasetFileError, match=expected):
        source.content_key(graph_id)


@pytest.mark.parametrize("command", [["export", "{data}", "--out", "{out}"],
                                     ["publish", "{data}", "--out", "{out}"],
                                     ["partition", "{data}"]])
def test_export_publish_partition_call_a_missing_npz_missing(command: list[str], data: Path,
                                                             tmp_path: Path) -> None:
    [npz, *_] = sorted((data / "graphs").glob("*.npz"))
    npz.unlink()
    result = run(*[a.format(data=data, out=tmp_path / "out") for a in command])
    assert result.exit_code == 1
    line = one_line(result)
    assert f"{npz}: missing" in line and "damaged" not in line


def test_status_names_the_run_writing_the_dataset(data: Path) -> None:
    with held_by_another_process(data) as proc:
        result = run("collect", "--status", data)
    assert result.exit_code == 0, result.output
    assert f"being written: by pid {proc.pid} on " in result.output
    assert "being written" not in run("collect", "--status", data).output
