"""Every relative link in README.md and docs/ reaches a file of the repository, and every
``#anchor`` a heading of the page it names (GitHub's heading ids), so moving or renaming a
section cannot leave a dead link behind."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt  # rich's own Markdown parser: links in code are not links
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_PARSER = MarkdownIt("commonmark").enable("table")
_NOT_IN_ID = re.compile(r"[^\w\- ]")  # GitHub keeps letters, digits, '_', '-' and spaces


def github_id(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return _NOT_IN_ID.sub("", heading.strip().lower()).replace(" ", "-")


def _tokens(path: Path) -> list[Token]:
    return _PARSER.parse(path.read_text(encoding="utf-8"))


def _text(inline: Token) -> str:
    """A heading's text as rendered: code spans keep their content, markup goes."""
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


@cache
def anchors(path: Path) -> frozenset[str]:
    """The ids of a page's headings; a repeated heading gets -1, -2, ... as on GitHub."""
    tokens = _tokens(path)
    seen: dict[str, int] = {}
    found = set()
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            base = github_id(_text(tokens[i + 1]))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def links(path: Path) -> Iterator[tuple[int, str]]:
    """(line, target) of every link and image of a page, the target as written."""
    for block in _tokens(path):
        line = block.map[0] + 1 if block.map else 0
        for child in block.children or []:
            line += child.type in ("softbreak", "hardbreak")
            target = child.attrs.get("href") or child.attrs.get("src")
            if child.type in ("link_open", "image") and isinstance(target, str):
                yield line, unquote(target)  # the parser %-encodes what is not ASCII


def broken(page: Path) -> list[str]:
    """A page's relative links whose file or heading does not exist."""
    problems = []
    for line, target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        where = f"{page.relative_to(ROOT)}:{line}: {target}"
        if not path.exists():
            problems.append(f"{where} (no such file)")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            problems.append(f"{where} (no such heading)")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    assert broken(page) == []


def test_headings_get_githubs_ids() -> None:
    assert github_id("Label cost and reproducibility: plain tgt collect") == \
        "label-cost-and-reproducibility-plain-tgt-collect"
    assert github_id("Scale: import / validate / report") == "scale-import--validate--report"
    assert github_id("tgt baseline: memory vs configs per graph (#14)") == \
        "tgt-baseline-memory-vs-configs-per-graph-14"
    assert github_id("Held-out τ × 2") == "held-out-τ--2"


def test_a_dead_link_and_a_dead_anchor_are_found(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "b.md").write_text("# Title\n\n## Same\n\n## Same\n")
    page = tmp_path / "a.md"
    page.write_text("[ok](b.md#same-1) [gone](c.md)\n[moved](b.md#other) `[code](x.md)`\n\n"
                    "| a |\n|---|\n| [cell](b.md#nope) |\n")
    assert broken(page) == ["a.md:1: c.md (no such file)", "a.md:2: b.md#other (no such heading)",
                            "a.md:6: b.md#nope (no such heading)"]
