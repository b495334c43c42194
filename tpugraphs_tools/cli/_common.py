"""Shared CLI plumbing: the one terminal every command writes through, shared options, errors.

Commands never import each other; what two of them share lives here.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, Protocol, TypeVar

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from tpugraphs_tools.errors import TgtError

DEFAULT_DATA = "data/"
F = TypeVar("F", bound=Callable[..., Any])


class BarRow(Protocol):
    """One row of :meth:`Terminal.bars`: ``description ━━━ done/total text``."""

    @property
    def description(self) -> str: ...
    @property
    def done(self) -> int: ...
    @property
    def total(self) -> int | None: ...
    @property
    def text(self) -> str: ...


def _columns() -> int | None:
    """The width the user set in ``COLUMNS`` (None when unset or not a sane width)."""
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) >= 40 else None


def _piped_width() -> int | None:
    """Rich falls back to 80 columns when output is piped; tables of ids need more.

    A ``COLUMNS`` the user set wins (``COLUMNS=300 tgt validate data/ | less``); a terminal
    sizes itself.
    """
    if sys.stdout.isatty():
        return None
    return _columns() or 132


def plain_console(**options: Any) -> Console:
    """A console that prints text as written: no markup tags, no ``:emoji:`` codes.

    Messages carry names, paths and hints such as ``pip install 'tpugraphs-tools[publish]'``;
    rich's markup would read ``[publish]`` as a style tag and drop it (and ``:cd:`` as an
    emoji). Styles are meant, never parsed: ``Text`` objects, ``style=`` or ``markup=True``.
    """
    return Console(markup=False, emoji=False, **options)


class Terminal:
    """Every line the CLI shows: results on stdout, warnings and errors on stderr.

    Strings are shown as written (tables' cells and titles included): brackets survive. A
    style is asked for explicitly: ``print(text, style="yellow")``, a ``rich.text.Text``, or
    ``print("[b]x[/]", markup=True)``.

    On a TTY, ``status`` and ``progress`` draw a live spinner or bar that disappears when the
    work ends; otherwise (pipes, CI, tests) they draw nothing, so the output holds only results.
    """

    def __init__(self, out: Console | None = None, err: Console | None = None) -> None:
        self.console = out or plain_console(width=_piped_width())
        self.err_console = err or plain_console(stderr=True)
        # Piped with no COLUMNS set: nothing to fit, so wide tables print whole (never cropped).
        self.unbounded = out is None and not sys.stdout.isatty() and _columns() is None

    @property
    def interactive(self) -> bool:
        """True when stdout is a terminal that can redraw a live line."""
        return self.console.is_terminal and not self.console.is_dumb_terminal

    def print(self, *objects: Any, **options: Any) -> None:
        """A result (text as written, a ``Text`` or a table) on stdout; ``style=`` colours it."""
        self.console.print(*objects, **options)

    def fitted(self, full: Table, narrow: Table, *, left_out: str = "") -> None:
        """``full`` when it fits the output's width, else ``narrow`` and a line naming what
        ``left_out`` of it; piped output with no ``COLUMNS`` set always gets ``full`` at its
        natural width (every column, no word broken or cropped)."""
        natural = self.console.measure(full, options=self.console.options.update_width(
            10_000)).maximum
        if self.unbounded:
            width = self.console.width
            self.console.width = max(width, natural)
            try:
                self.console.print(full)
            finally:
                self.console.width = width
        elif natural <= self.console.width:
            self.console.print(full)
        else:
            self.console.print(narrow)
            if left_out:
                self.console.print(left_out, style="dim", highlight=False)

    def raw(self, text: str) -> None:
        """Machine-readable text on stdout, verbatim (no markup, wrapping or colour)."""
        click.echo(text)

    def success(self, message: str, **options: Any) -> None:
        """The closing ``✓`` line of a command that did its work."""
        highlight = options.pop("highlight", None)
        self.console.print(_labelled(self.console, "✓", "green", message, highlight), **options)

    def note(self, label: str, message: str) -> None:
        """A yellow ``label:`` line on stdout: part of the result (e.g. ``partial:``)."""
        self.console.print(_labelled(self.console, f"{label}:", "yellow", message))

    def warnings(self, lines: Sequence[str], limit: int = 10) -> None:
        """Up to ``limit`` warnings on stderr, then how many more there were."""
        for line in lines[:limit]:
            self.err_console.print(_labelled(self.err_console, "warning:", "yellow", line))
        if len(lines) > limit:
            self.err_console.print(f"… {len(lines) - limit} more warnings", style="yellow")

    def error(self, message: str) -> None:
        """A red ``error:`` line on stderr, as written (a hint like ``pip install
        'tpugraphs-tools[publish]'`` must reach the user whole: they copy it)."""
        self.err_console.print(_labelled(self.err_console, "error:", "bold red", message),
                               soft_wrap=True)

    def abort(self, message: str, code: int = 1) -> NoReturn:
        """Print ``message`` as an error and exit with ``code``."""
        self.error(message)
        sys.exit(code)

    def table(self, title: str, columns: Sequence[str], *, right: Collection[str] = (),
              **options: Any) -> Table:
        """An empty table with ``columns`` (those in ``right`` right-aligned); add rows, print."""
        table = Table(title=title, **options)
        for column in columns:
            table.add_column(column, justify="right" if column in right else "left")
        return table

    @contextmanager
    def status(self, message: str) -> Iterator[Callable[[str], None]]:
        """A spinner with elapsed time while the block runs; yields a setter for its message."""
        if not self.interactive:
            yield _ignore
            return
        with Progress(SpinnerColumn(), _described(), TimeElapsedColumn(),
                      console=self.console, transient=True) as bar:
            task = bar.add_task(message, total=None)
            yield lambda text: bar.update(task, description=text)

    @contextmanager
    def progress(self, label: str) -> Iterator[Callable[[int, int], None]]:
        """A bar ``label ━━━ i/n elapsed``; yields ``advance(done, total)``."""
        if not self.interactive:
            yield _ignore
            return
        with Progress(_described(), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=self.console, transient=True) as bar:
            task = bar.add_task(label, total=None)
            yield lambda done, total: bar.update(task, completed=done, total=total)

    @contextmanager
    def bars(self) -> Iterator[Callable[[Sequence[BarRow]], None]]:
        """Live rows ``description ━━━ done/total text elapsed``, one per row of the latest
        ``show(rows)``; a row's elapsed time restarts when its description changes. Like the
        spinner, drawn only on an interactive terminal (piped output stays results-only)."""
        if not self.interactive:
            yield _ignore
            return
        with Progress(_described(), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("{task.fields[text]}", markup=False),
                      console=self.console, transient=True) as bar:
            tasks: list[Any] = []
            described: dict[Any, str] = {}

            def show(rows: Sequence[BarRow]) -> None:
                for row in rows[len(tasks):]:
                    tasks.append(task := bar.add_task(row.description, total=row.total,
                                                      completed=row.done, text=row.text))
                    described[task] = row.description
                for task, row in zip(tasks, rows, strict=False):
                    # One call per row, so a refresh never draws a new graph with old text.
                    if described[task] != row.description:
                        described[task] = row.description
                        bar.reset(task, description=row.description, completed=row.done,
                                  total=row.total, text=row.text, visible=True)
                    else:
                        bar.update(task, completed=row.done, total=row.total, text=row.text,
                                   visible=True)
                for task in tasks[len(rows):]:
                    bar.update(task, visible=False)

            yield show


def _labelled(console: Console, label: str, style: str, message: str,
              highlight: bool | None = False) -> Text:
    """``label message`` with only the label styled: the message is shown as written."""
    text = console.render_str(message, markup=False, emoji=False, highlight=highlight)
    return Text.assemble((label, style), " ", text)


def _described() -> TextColumn:
    """A progress column showing each task's description as written (no markup)."""
    return TextColumn("{task.description}", markup=False)


def _ignore(*_args: object) -> None:
    """Progress sink of the plain (non-TTY) terminal."""


terminal = Terminal()


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 graph``, ``2 graphs``: a count with its noun in the right number."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def print_pairs_apart(apart: int, pairs: int) -> None:
    """One line for ``tgt collect`` and ``tgt report``: the orders the labels claim."""
    if pairs:
        terminal.print(f"config pairs the labels order (95% CIs disjoint, within a graph): "
                       f"{apart}/{pairs} ({100 * apart / pairs:.0f}%)")


# writes are transactions (docs/format.md): an interrupt leaves the last commit, never half a
# file; a collection journals each config, so the same command goes on where it stopped
INTERRUPTED = ("interrupted: what was committed is kept, nothing half-written; "
               "run the same command again to resume a collection")


def handle_errors(fn: F) -> F:
    """Turn tgt's typed errors into a one-line red message and exit code 1, and Ctrl-C into
    one line and exit code 130 (no traceback either way)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TgtError as exc:
            terminal.abort(str(exc))
        except KeyboardInterrupt:
            terminal.abort(INTERRUPTED, code=130)

    return wrapper  # type: ignore[return-value]


def data_argument(fn: F) -> F:
    """Optional DATA argument defaulting to ``data/`` so documented commands work verbatim."""
    return click.argument("data", required=False, default=DEFAULT_DATA,
                          type=click.Path(file_okay=False))(fn)


def _ratios(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[float, ...]:
    from tpugraphs_tools.publish import parse_ratios

    try:
        return parse_ratios(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def split_options(fn: F) -> F:
    """--split-by/--seed/--ratios, shared by export and publish so both split alike."""
    fn = click.option("--ratios", default="0.8,0.1,0.1", show_default=True, callback=_ratios,
                      help="train,valid,test fractions of the groups without a stored split.")(fn)
    fn = click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                      help="Seed of the group shuffle (same seed, same splits).")(fn)
    return click.option("--split-by", type=click.Choice(["program", "fingerprint"]),
                        default="program", show_default=True,
                        help="Group kept whole in one split. A split already in "
                             "graphs.parquet is kept and its group follows it.")(fn)
