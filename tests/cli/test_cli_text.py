"""Text reaches the terminal as written: hints, errors, notes and tables keep their brackets.

Rich reads ``[publish]`` as a markup tag and drops it, and ``:cd:`` as an emoji code; a user
copying ``pip install 'tpugraphs-tools[publish]'`` from an error must get the extra.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.text import Text

from tpugraphs_tools.cli import main
from tpugraphs_tools.cli._common import Terminal, plain_console

HINT = "pip install 'tpugraphs-tools[publish]'"
# Each is lost or changed by rich markup/emoji: a tag, a list, an emoji code, a closing tag.
AS_WRITTEN = [HINT, "file[key]@3", "ratios [a, b]", "graph x:cd:y", "[/] and [bold]x[/bold]"]


def _printed(capsys: pytest.CaptureFixture[str], show) -> tuple[str, str]:
    """What a default Terminal (the one the CLI uses) writes to stdout and stderr."""
    show(Terminal())
    captured = capsys.readouterr()
    return captured.out, captured.err


@pytest.mark.parametrize("text", AS_WRITTEN)
def test_errors_warnings_notes_and_results_print_as_written(
        capsys: pytest.CaptureFixture[str], text: str) -> None:
    def show(term: Terminal) -> None:
        term.error(text)
        term.warnings([text])
        term.note("hint", text)
        term.success(text)
        term.print(text)

    out, err = _printed(capsys, show)
    assert err.splitlines() == [f"error: {text}", f"warning: {text}"]
    assert out.splitlines() == [f"hint: {text}", f"✓ {text}", text]


def test_tables_keep_brackets_in_title_headers_and_cells(
        capsys: pytest.CaptureFixture[str]) -> None:
    def show(term: Terminal) -> None:
        table = term.table("extras [publish]", ("command [extra]", "hint"))
        table.add_row("report", HINT)
        table.add_row(Text("styled [x]", style="yellow"), ":cd:")
        term.print(table)

    out, _ = _printed(capsys, show)
    for text in ("extras [publish]", "command [extra]", HINT, "styled [x]", ":cd:"):
        assert text in out


def test_a_style_is_still_applied_when_asked_for() -> None:
    """Opting in keeps working: ``style=`` and ``markup=True`` (colours in a forced terminal)."""
    stream = io.StringIO()
    term = Terminal(plain_console(file=stream, force_terminal=True, color_system="standard"),
                    plain_console(file=io.StringIO()))
    term.print("warn [x]", style="yellow", highlight=False)
    term.print("[bold]b[/]", markup=True)
    ansi = stream.getvalue()
    assert "\x1b[33mwarn [x]" in ansi and "\x1b[1mb" in ansi and "[bold]" not in ansi


def test_a_missing_extra_hint_reaches_the_user_whole(
        tmp_path: Path, tiny_hlo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tgt report`` without matplotlib: the error names the extra (lost on 9206aba)."""
    runner = CliRunner()
    hlo = tmp_path / "tiny.hlo"
    hlo.write_text(tiny_hlo)
    data = tmp_path / "d"
    made = runner.invoke(main, ["collect", "--hlo", str(hlo), "--out", str(data),
                                "--configs", "0"], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = runner.invoke(main, ["report", str(data), "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: tgt report needs matplotlib: {HINT}"
