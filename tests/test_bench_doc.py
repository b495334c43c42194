"""docs/benchmarks.md: commands that name no path of one machine, sections the bench scripts can
find again, current figures only."""

from __future__ import annotations

import ast
import re
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


ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
# Sections a bench script still writes with --write although the page holds no current run of
# it: its last figures are history; --write appends a fresh section.
HISTORY_ONLY = {
    "Label reproducibility and A/A control",        # bench_labels.py, raised priority: 2026-12-02
    "Timing noise: sample length and round order",  # bench_timing_noise.py: 2026-12-01
}


def _constant(node: ast.AST | None, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    return None


def written_titles(script: Path) -> set[str]:
    """The ``## `` titles (and ``section/subsection`` pairs) a bench script's ``--write`` targets:
    the title given to ``record``/``write_section`` (a literal, a module constant or the
    ``--title`` option's default), the section and subsection of ``replace_subsection``, and
    any ``"## title"`` literal it splices in itself."""
    tree = ast.parse(script.read_text())
    names = {t.id: v for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)
             for v in [_constant(node.value, {})] if v is not None}
    titles = {n.value[3:] for n in ast.walk(tree) if isinstance(n, ast.Constant)
              and isinstance(n.value, str) and n.value.startswith("## ")}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name = getattr(call.func, "id", getattr(call.func, "attr", ""))
        args = call.args
        if name in ("record", "write_section") and args:
            if isinstance(args[0], ast.Attribute) and args[0].attr == "title":
                titles |= {_constant(k.value, names) or "" for c in ast.walk(tree)
                           if isinstance(c, ast.Call) and c.args
                           and _constant(c.args[0], {}) == "--title"
                           for k in c.keywords if k.arg == "default"}
            elif (title := _constant(args[0], names)) is not None:
                titles.add(title)
        elif name == "replace_subsection" and len(args) >= 3:
            section, sub = _constant(args[1], names), _constant(args[2], names)
            titles |= {f"{section}/{sub}" if sub else str(section)}
    return titles - {""}


def _headings(text: str) -> set[str]:
    """``## title`` and ``## title/### sub`` pairs of a page."""
    found, section = set(), ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            found.add(section)
        elif line.startswith("### "):
            found.add(f"{section}/{line[4:].strip()}")
    return found


def test_every_section_a_bench_script_writes_is_a_current_section():
    """--write replaces a section by its title: a title that no longer matches would append a
    second section beside the old one instead of replacing it."""
    headings = _headings(PAGE.read_text())
    scripts = sorted((ROOT / "bench").glob("*.py"))
    written = {s.name: written_titles(s) for s in scripts}
    assert written["bench_label_cost.py"] == {"Label cost and reproducibility: plain `tgt collect`"}
    assert written["bench_gst.py"] == {"tgt baseline/GST vs full-graph training"}
    missing = {name: sorted(t for t in titles if t not in headings | HISTORY_ONLY)
               for name, titles in written.items()}
    assert {k: v for k, v in missing.items() if v} == {}
    assert HISTORY_ONLY.isdisjoint(headings)


def _deprecated_flags() -> set[str]:
    """The old spellings the CLI still accepts (hidden options) of every command."""
    import click

    from tpugraphs_tools.cli import main

    def commands(cmd: click.Command) -> list[click.Command]:
        subs = cmd.commands.values() if isinstance(cmd, click.Group) else []
        return [cmd, *(c for s in subs for c in commands(s))]

    return {opt for cmd in commands(main) for p in cmd.params if getattr(p, "hidden", False)
            for opt in p.opts}


def test_the_benchmarks_page_holds_current_figures_only():
    """≤ 400 lines; every section says when and with which command it was measured; no
    deprecated flag spelling (earlier runs, with the flags they ran with, are in history/)."""
    text = PAGE.read_text()
    assert len(text.splitlines()) <= 400
    sections = text.split("\n## ")[1:]
    undated = [s.splitlines()[0] for s in sections
               if not re.search(r"\b20\d\d-\d\d-\d\d\b", s) or "`" not in s]
    assert undated == []
    old = _deprecated_flags()
    assert {"--batch", "--timing"} <= old
    tgt_text = _without_bench_options(text)
    found = {f for f in old if re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", tgt_text)}
    assert found == set()


def _without_bench_options(text: str) -> str:
    """``text`` with a bench script's own options left out: of ``python bench/x.py ...`` only
    the quoted parts (tgt flags handed through, ``--variant b='--budget-seconds 15'``) stay."""
    def quoted(command: re.Match[str]) -> str:
        return " ".join(re.findall(r"'[^']*'|\"[^\"]*\"", command.group(0)))

    return re.sub(r"python bench/\S+[^`\n]*", quoted, text)


def test_bench_options_are_not_taken_for_tgt_flags():
    text = "`python bench/b.py --repeats 5 --variant x='--timing fixed'` and `tgt collect --batch 1`"
    assert _without_bench_options(text) == "`'--timing fixed'` and `tgt collect --batch 1`"
