"""Every error tgt raises on purpose, in one tree grouped by the stage that raises it.

The CLI catches :class:`TgtError` and prints one line (exit 1, no traceback), so whatever a user
can cause must end up below it. Some classes also derive from a builtin (``ValueError``,
``KeyError``, ``RuntimeError``) because callers catch them by that name too.

Tree::

    TgtError
    ├── InstallError          installed packages lack what was asked
    │   ├── XlaCompatError    jax/jaxlib without a binding tgt needs
    │   └── RayUnavailableError
    ├── ProgramError          programs/: building a JAX program
    │   ├── KerasBackendError keras runs (or is told to run) a backend other than jax
    │   ├── UnknownProgramError (KeyError)
    │   └── ProgramArgsError (ValueError)
    │       └── UnknownPresetError
    ├── HloError              hlo/: reading HLO text or protos
    │   ├── HloParseError
    │   └── StatementError (ValueError, internal: becomes an HloParseError)
    ├── ConfigError           configs/, measure/apply: a config that does not fit its graph
    ├── MeasureError          measure/: timing workers
    │   ├── WorkerError (RuntimeError)
    │   │   └── DefaultTimeoutError  the default ran past --timeout (a limit, not the backend)
    │   └── DeviceTimerError (RuntimeError, internal: the engine falls back to host time)
    ├── CollectError          collect/: requests and plans
    │   └── PlanError
    ├── DatasetError          store/, publish/, partition/: dataset directories and trees
    │   ├── DatasetFileError  a dataset file (manifest, table part, npz) missing or damaged
    │   ├── DatasetLockedError  another live run is writing the dataset (store/lock.py)
    │   ├── FormatVersionError
    │   ├── TuningDataError   an official raw tuning proto that cannot be imported
    │   └── NothingToScore (also a BaselineError)
    ├── BaselineError         baseline/: training and scoring
    │   └── ModelFileError    a saved model (params + sidecar) unusable as asked
    └── ValidateError         validate/: reading files under check
        ├── NpzError
        ├── TablePartError
        └── TableConvertError
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class TgtError(Exception):
    """Base class of every error tgt raises on purpose."""


# -- environment ------------------------------------------------------------------------------


class InstallError(TgtError):
    """Raised when the installed packages lack something the command needs (names the fix)."""


class XlaCompatError(InstallError):
    """Raised when the installed jax lacks an XLA binding tgt needs (outside the tested range)."""


class RayUnavailableError(InstallError):
    """Raised by ``--executor ray`` when ray is not installed."""


# -- programs ---------------------------------------------------------------------------------


class ProgramError(TgtError):
    """Raised when a zoo or user program cannot be found or built."""


class KerasBackendError(ProgramError):
    """Raised for a catalog program when keras runs, or is told to run, a non-jax backend."""


class UnknownProgramError(ProgramError, KeyError):
    """Raised for a program name neither registered nor an importable ``module:function``."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown program"


class ProgramArgsError(ProgramError, ValueError):
    """Raised for ProgramArgs a program cannot build (e.g. an image size it cannot downsample)."""


class UnknownPresetError(ProgramArgsError):
    """Raised for a preset, dtype or mode a program does not offer (lists the valid ones)."""


# -- HLO --------------------------------------------------------------------------------------


class HloError(TgtError):
    """Raised when HLO text or a proto cannot be read."""


class HloParseError(HloError):
    """Raised for HLO text or proto that cannot be read; names the source and the line."""

    def __init__(self, message: str, *, source: str = "<text>", line: int | None = None) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")
        self.message = message
        self.source = source
        self.line = line


class StatementError(HloError, ValueError):
    """Raised by the HLO statement readers for text that is not the statement it should be."""

    # internal: parse_hlo_text turns it into an HloParseError naming the source

    def __init__(self, message: str, line: int, layout: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.layout = layout  # the line is not a whole statement (the scanner may read it)


# -- configs ----------------------------------------------------------------------------------


class ConfigError(TgtError):
    """Raised for a configuration that cannot be applied to the graph it was made for."""


# -- measurement ------------------------------------------------------------------------------


class MeasureError(TgtError):
    """Raised when a measurement cannot be made."""


class WorkerError(MeasureError, RuntimeError):
    """Raised when the default config itself cannot be compiled or run: nothing can be measured."""


class DefaultTimeoutError(WorkerError):
    """Raised when the default config did not finish within ``--timeout`` (the user's limit)."""

    def __init__(self, message: str, timeout: float) -> None:
        super().__init__(message)
        self.timeout = timeout  # the --timeout in effect, seconds


class DeviceTimerError(MeasureError, RuntimeError):
    """Raised when a device timer cannot time a sample (missing API, no records, implausible)."""


# -- collection -------------------------------------------------------------------------------


class CollectError(TgtError):
    """Raised when a collect request cannot be carried out as given."""


class PlanError(CollectError):
    """Raised for a plan file that cannot be read or names an unknown key."""


# -- datasets ---------------------------------------------------------------------------------


class DatasetError(TgtError):
    """Raised for a dataset directory that cannot be read or written as asked (names file/key)."""


class DatasetFileError(DatasetError):
    """Raised by the store's readers for a missing or damaged manifest, table part or npz."""


class DatasetLockedError(DatasetError):
    """Raised for a dataset another live tgt run is writing (names its pid, host and start)."""


class FormatVersionError(DatasetError):
    """Raised for a dataset written by a newer tgt than this one."""


class TuningDataError(DatasetError):
    """Raised for an official tuning proto that cannot be read or imported (names the file)."""


# -- baseline ---------------------------------------------------------------------------------


class BaselineError(TgtError):
    """Raised when the reference cost model cannot be trained or scored."""


class ModelFileError(BaselineError):
    """Raised for a saved baseline model that cannot be read or used; names file and key."""

    def __init__(self, message: str, *, path: str, key: str | None = None) -> None:
        where = f"{path}: {key}" if key is not None else path
        super().__init__(f"{where}: {message}")
        self.message = message
        self.path = path
        self.key = key


class NothingToScore(BaselineError, DatasetError):
    """Raised for a collection where no held-out config can be ranked (a DatasetError too)."""


# -- validation -------------------------------------------------------------------------------


class ValidateError(TgtError):
    """Raised inside validation for a file that cannot be read; checks turn it into findings."""


class NpzError(ValidateError):
    """Raised for an npz member that cannot be read; ``key`` names it (None: the archive itself)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class TablePartError(ValidateError):
    """Raised for a Parquet table part (or a column of it) that cannot be read."""


class TableConvertError(ValidateError):
    """Raised for a Parquet batch that reads but cannot become a table (mixed or odd types)."""


# -- messages ---------------------------------------------------------------------------------


def did_you_mean(word: str, choices: Iterable[str], limit: int = 3) -> str:
    """``"; did you mean resnet50, resnet18?"`` for the ``choices`` nearest ``word`` (case
    ignored), or ``""``: the tail of a one-line error about an unknown name, so a typo is
    answered with the fix instead of a list of every name."""
    by_folded: dict[str, str] = {}
    for choice in choices:
        by_folded.setdefault(choice.casefold(), choice)
    near = difflib.get_close_matches(word.casefold(), list(by_folded), n=limit, cutoff=0.6)
    return f"; did you mean {', '.join(by_folded[n] for n in near)}?" if near else ""
