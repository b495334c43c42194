"""One tiny collected dataset, every command's counts: configs, labels and control rows agree
(store/counts.py defines them once)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner, Result

from tpugraphs_tools.cli import main
from tpugraphs_tools.store import ConfigCounts, Dataset, config_counts, total_counts

RUNNER = CliRunner(env={"COLUMNS": "300"})
# The cheapest paired timing that still times A/A controls (tests/resume/test_kill_resume.py).
CHEAP = ["--warmup", "0", "--isolation", "none", "--min-sample-ms", "1", "--max-rounds", "8",
         "--measure-processes", "1", "--loaded-copies", "1", "--seed", "1"]
PHRASE = re.compile(r"\d+ configs? \(\d+ labels?\)(?: \+ \d+ control rows?)?")


def run(*args: str) -> Result:
    result = RUNNER.invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def one_line(text: str) -> str:
    """The output with table folds and borders undone, so a phrase reads whole."""
    return " ".join(re.sub(r"[│┃|]", " ", text).split())


def test_counts_from_statuses_and_their_words() -> None:
    counts = ConfigCounts.of_statuses({"ok": 5, "noop": 1, "compile_error": 1, "control": 2,
                                       "repeat": 1})
    assert (counts.configs, counts.labels, counts.control_rows, counts.rows) == (7, 5, 3, 10)
    assert counts.describe() == "7 configs (5 labels) + 3 control rows"
    assert ConfigCounts(1, 1, 0).describe() == "1 config (1 label)"
    assert counts + ConfigCounts(1, 1, 1) == ConfigCounts(8, 6, 4)
    frame = pl.DataFrame({"graph_id": ["a", "a", "a", "b"],
                          "status": ["ok", "control", "duplicate", "ok"]})
    per_graph = config_counts(frame)
    assert per_graph == {"a": ConfigCounts(2, 1, 1), "b": ConfigCounts(1, 1, 0)}
    assert total_counts(per_graph.values()) == ConfigCounts(3, 2, 1)


def test_every_command_counts_the_same(tmp_path: Path, write_file, tiny_hlo: str) -> None:
    pytest.importorskip("matplotlib")
    hlo = write_file("tiny.hlo", tiny_hlo)
    data = tmp_path / "data"
    collected = one_line(run("collect", "--hlo", str(hlo), "--out", str(data), "--configs", "4",
                             *CHEAP).output)
    stored = Dataset.open(data).configs()
    [truth] = config_counts(stored).values()
    assert truth.control_rows >= 1 and truth.labels >= 2  # a paired run: controls are timed
    phrase = truth.describe()
    # collect's closing line, and its table's configs / labels columns
    assert f"stored for 1 graph: {phrase}" in collected
    status = one_line(run("collect", "--status", str(data)).output)
    assert PHRASE.findall(status) == [phrase]
    report = one_line(run("report", str(data), "--out", str(tmp_path / "report")).output)
    assert PHRASE.findall(report) == [phrase]
    published = run("publish", str(data), "--out", str(tmp_path / "pub")).output
    [row] = [line.split("│")[1:-1] for line in published.splitlines()
             if re.match(r"│ (train|valid|test) ", line)]
    assert [cell.strip() for cell in row[1:]] == [
        str(n) for n in (1, truth.configs, truth.labels, truth.control_rows)]
    card = (tmp_path / "pub" / "README.md").read_text()
    assert f"{truth.configs} compiler configurations, {truth.labels} of them" in card
    assert f"| 1 | {truth.configs} | {truth.labels} | {truth.control_rows} |" in card
    # The official tree holds labels only: an import of the export has them as its configs.
    run("export", str(data), "--out", str(tmp_path / "tree"))
    imported = one_line(run("import", str(tmp_path / "tree"), "--out",
                            str(tmp_path / "back")).output)
    assert PHRASE.findall(imported) == [ConfigCounts(truth.labels, truth.labels, 0).describe()]
    graphs = Dataset.open(data).graphs()
    assert graphs["num_configs"].to_list() == [truth.labels]  # graphs.parquet: the labels
