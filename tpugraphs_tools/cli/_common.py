"""Shared CLI plumbing: the rich console, the default dataset directory, error → exit code."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

from tpugraphs_tools.errors import TgtError

DEFAULT_DATA = "data/"
# Rich falls back to 80 columns when output is piped; tables of ids need more.
console = Console(width=None if sys.stdout.isatty() else 132)
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(fn: F) -> F:
    """Turn tgt's typed errors into a one-line red message and exit code 1 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TgtError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def data_argument(fn: F) -> F:
    """Optional DATA argument defaulting to ``data/`` so documented commands work verbatim."""
    return click.argument("data", required=False, default=DEFAULT_DATA,
                          type=click.Path(file_okay=False))(fn)
