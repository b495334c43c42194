"""Typed exceptions shared by every stage, so the CLI maps each to a clear message and exit code."""

from __future__ import annotations


class TgtError(Exception):
    """Base class of every error tgt raises on purpose."""


class UnknownProgramError(TgtError, KeyError):
    """A program name that is neither registered nor an importable ``module:function``."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown program"


class HloParseError(TgtError):
    """HLO text or proto that cannot be read; names the source and the line."""

    def __init__(self, message: str, *, source: str = "<text>", line: int | None = None) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")
        self.message = message
        self.source = source
        self.line = line


class DatasetError(TgtError):
    """A dataset directory that cannot be read or written as asked (names file/key/row)."""


class FormatVersionError(DatasetError):
    """A dataset written by a newer tgt than this one."""


class ConfigError(TgtError):
    """A configuration that cannot be applied to the graph it was made for."""
