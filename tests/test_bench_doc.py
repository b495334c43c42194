"""Benchmark commands written into docs/benchmarks.md name no path of one machine."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from _doc import portable_arg


def test_paths_outside_the_repository_keep_only_their_name(tmp_path: Path):
    root = tmp_path / "repo"
    (root / "bench" / "plans").mkdir(parents=True)
    assert portable_arg("/scratch/user/labels-t7", root) == "labels-t7"
    assert portable_arg(str(root / "bench" / "plans" / "p.yaml"), root) == "bench/plans/p.yaml"


def test_options_and_relative_paths_are_unchanged():
    assert portable_arg("--save") == "--save"
    assert portable_arg("data/x") == "data/x"
    assert portable_arg("0.007") == "0.007"


def test_the_docs_name_no_temporary_folder_of_one_machine():
    """docs/benchmarks.md once gave the synthetic baseline's command with /tmp/tgt-synthetic
    (docs/benchmarks/history/ keeps the commands as they were run)."""
    root = Path(__file__).resolve().parent.parent
    pages = [root / "README.md", *(p for p in root.glob("docs/**/*.md")
                                   if "history" not in p.relative_to(root).parts)]
    found = [f"{p.relative_to(root)}:{i}" for p in pages
             for i, line in enumerate(p.read_text().splitlines(), 1) if "/tmp/" in line]
    assert found == []
