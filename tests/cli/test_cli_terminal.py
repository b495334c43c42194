"""The CLI's one terminal: commands write only through it and never import each other."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest
from rich.console import Console

from tpugraphs_tools.cli import _common
from tpugraphs_tools.cli._common import Terminal

CLI = Path(_common.__file__).parent
COMMANDS = sorted(CLI.glob("*_cmd.py"))


def _imports(path: Path) -> set[str]:
    """Modules ``path`` imports, absolute (``from . import x`` resolved inside the cli package)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "tpugraphs_tools.cli" if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_the_command_modules_are_found() -> None:
    assert {p.stem for p in COMMANDS} >= {"collect_cmd", "export_cmd", "import_cmd",
                                          "publish_cmd", "validate_cmd"}


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: p.stem)
def test_no_command_imports_another_command(path: Path) -> None:
    others = {n for n in _imports(path)
              if n.rsplit(".", 1)[-1].endswith("_cmd") and n.startswith("tpugraphs_tools.cli")}
    assert others == set(), f"{path.name} imports {others}: shared helpers go in _common.py"


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: p.stem)
def test_commands_write_only_through_the_terminal(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    assert not {"rich.console", "rich.progress", "rich.status", "sys"} & _imports(path)
    calls = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert not {"print", "click.echo", "click.secho", "sys.exit"} & calls


def _plain() -> tuple[Terminal, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Terminal(Console(file=out, width=200), Console(file=err, width=200)), out, err


def test_plain_terminal_draws_no_spinner_or_bar() -> None:
    term, out, err = _plain()
    assert not term.interactive
    with term.status("working") as show:
        show("step 1")
    with term.progress("importing") as advance:
        advance(1, 2)
    assert out.getvalue() == "" and err.getvalue() == ""


def test_interactive_status_shows_its_message_and_vanishes() -> None:
    out = io.StringIO()
    term = Terminal(Console(file=out, width=80, force_terminal=True), Console(file=io.StringIO()))
    assert term.interactive
    with term.status("working") as show:
        show("step 2")
    assert "step 2" in out.getvalue()


def test_warnings_go_to_stderr_and_are_capped() -> None:
    term, out, err = _plain()
    term.warnings([f"w{i}" for i in range(12)], limit=10)
    lines = err.getvalue().splitlines()
    assert lines[0] == "warning: w0" and lines[9] == "warning: w9"
    assert lines[10] == "… 2 more warnings" and len(lines) == 11
    assert out.getvalue() == ""


def test_success_note_and_table_go_to_stdout() -> None:
    term, out, err = _plain()
    table = term.table("t", ("name", "count"), right={"count"})
    table.add_row("a", "12")
    term.print(table)
    term.note("partial", "item x")
    term.success("done")
    text = out.getvalue()
    assert [c.justify for c in table.columns] == ["left", "right"]
    assert text.splitlines()[-2:] == ["partial: item x", "✓ done"]
    assert "│ a    │    12 │" in text  # count right-aligned under its header
    assert err.getvalue() == ""


def test_abort_prints_one_error_line_and_exits_with_the_code() -> None:
    term, out, err = _plain()
    with pytest.raises(SystemExit) as exited:
        term.abort("bad input in f.npz", code=3)
    assert exited.value.code == 3
    assert err.getvalue() == "error: bad input in f.npz\n" and out.getvalue() == ""


def test_ctrl_c_gives_one_line_and_exit_code_130(monkeypatch: pytest.MonkeyPatch) -> None:
    term, out, err = _plain()
    monkeypatch.setattr(_common, "terminal", term)

    @_common.handle_errors
    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as exited:
        interrupted()
    assert exited.value.code == 130
    assert err.getvalue() == f"error: {_common.INTERRUPTED}\n" and out.getvalue() == ""


@pytest.mark.parametrize(("columns", "width"), [("300", 300), (None, 132), ("abc", 132),
                                                 ("10", 132)])
def test_piped_output_width_follows_a_set_columns(monkeypatch, columns, width):
    """Piped output is 132 columns wide unless the user set a sane COLUMNS."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    assert Terminal().console.width == width


def test_counts_take_the_noun_in_the_right_number() -> None:
    """The CLI printed "FAIL: 1 errors" and "✓ 1 graphs"."""
    from tpugraphs_tools.cli._common import plural

    assert plural(1, "error") == "1 error" and plural(0, "error") == "0 errors"
    assert plural(2, "graph") == "2 graphs" and plural(3, "entry", "entries") == "3 entries"
