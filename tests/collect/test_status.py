"""``tgt collect --status`` reads journals as well as committed tables: a collection stopped
during its first graph (no manifest yet) shows its journaled rows."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main
from tpugraphs_tools.collect import collection_status
from tpugraphs_tools.collect.failures import unmeasured_rows
from tpugraphs_tools.collect.journal import ConfigJournal
from tpugraphs_tools.collect.tile.record import program_path
from tpugraphs_tools.errors import DatasetError

HEADER = {"strategy": "default", "seed": 0, "warmup": 2, "repeats": 10, "rtol": None}


def _journal(root, graph_id: str, rows: int) -> None:
    journal = ConfigJournal(root, graph_id, HEADER)  # type: ignore[arg-type]
    for row in unmeasured_rows([{}] * rows, "default", 0, "why"):
        journal.append(row)


def test_status_before_the_first_commit_shows_journaled_rows(tmp_path):
    _journal(tmp_path, "prog.abc", 3)
    status = collection_status(tmp_path)
    assert status["committed"] == []
    result = CliRunner().invoke(main, ["collect", "--status", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "prog.abc" in result.output and "in progress" in result.output
    assert status["partial"]["prog.abc"]["statuses"] == {"default_failed": 3}
    assert "3 configs (0 labels) journaled" in result.output  # the words of committed rows
    assert "default_failed 3" in result.output and "header" not in result.output


def test_status_of_a_tile_program_counts_its_kernels(tmp_path):
    path = program_path(tmp_path, "prog.parent")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"header": HEADER, "program": "prog", "skipped": {"k3": "why"},
                                "kernels": [{"graph_id": f"prog.tile.{i}", "name": f"k{i}"}
                                            for i in range(1, 5)]}))
    _journal(tmp_path, "prog.tile.2", 2)
    tile = collection_status(tmp_path)["tile_programs"]["prog.parent"]
    assert tile["kernels"] == 4 and tile["committed"] == []
    assert tile["in_progress"] == {"prog.tile.2": 2} and tile["skipped"] == {"k3": "why"}
    assert tile["left"] == ["prog.tile.1", "prog.tile.4"]
    result = CliRunner().invoke(main, ["collect", "--status", str(tmp_path)])
    assert "4 kernels: 0 committed, 1 in progress (2 rows journaled), 1 not stored, 2 left" \
        in result.output


def test_status_of_a_folder_with_nothing_says_it_is_not_a_dataset(tmp_path):
    with pytest.raises(DatasetError, match="not a tgt dataset"):
        collection_status(tmp_path)
