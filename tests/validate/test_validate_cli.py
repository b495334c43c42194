"""``tgt validate``: exit codes 0/1/2, --json, --strict, --max-errors, the human report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from validate_helpers import TREE_LAYOUT, TREE_TILE, edit_npz

from tpugraphs_tools.cli import main


def run(*args: str):
    return CliRunner().invoke(main, ["validate", *args])


def test_clean_exits_0(tgt_ds: Path) -> None:
    result = run(str(tgt_ds))
    assert result.exit_code == 0, result.output
    assert "clean" in result.output


def test_findings_exit_1_and_are_grouped(tree: Path) -> None:
    edit_npz(tree, TREE_LAYOUT, lambda a: {**a, "config_runtime": -a["config_runtime"]})
    result = run(str(tree), "--examples", "1")
    assert result.exit_code == 1
    flat = re.sub(r"[\s│]", "", result.output)  # undo rich's folding at 80 columns
    assert "values(1)" in flat and "values.runtime_nonpositive" in flat
    assert "train/model_a.npz[config_runtime]@0:config0runtimeis-1000ns" in flat
    assert "FAIL:1error," in flat


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    assert run(str(tmp_path / "nope")).exit_code == 2


def test_bad_option_is_a_usage_error(tgt_ds: Path) -> None:
    assert run(str(tgt_ds), "--max-errors", "0").exit_code == 2


def test_json_report(tree: Path) -> None:
    edit_npz(tree, TREE_TILE, lambda a: {**a, "config_runtime_normalizers": np.zeros(3, int)})
    result = run(str(tree), "--json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["kind"] == "tpugraphs" and data["errors"] == 1 and not data["ok"]
    finding = data["findings"][0]
    assert finding["class"] == "values"
    assert finding["check"] == "values.normalizer_nonpositive"
    assert finding["file"] == TREE_TILE
    assert (finding["key"], finding["index"]) == ("config_runtime_normalizers", 0)


def test_strict_fails_on_warnings(tree: Path) -> None:
    edit_npz(tree, TREE_LAYOUT, lambda a: {**a, "node_opcode": np.where(
        np.arange(7) == 4, 97, a["node_opcode"]).astype(np.uint8)})
    assert run(str(tree)).exit_code == 0
    assert run(str(tree), "--strict").exit_code == 1


def test_max_errors(tree: Path) -> None:
    for rel in (TREE_LAYOUT, TREE_TILE):
        edit_npz(tree, rel, lambda a: {**a, "config_runtime": -a["config_runtime"]})
    data = json.loads(run(str(tree), "--json", "--max-errors", "1").output)
    assert data["errors"] == 1 and data["truncated"]
