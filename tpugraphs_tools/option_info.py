"""Option fields: the fields of a record that a user sets, each with its flag, help and range.

Why a module of its own at the bottom: several records are set from the command line, a plan
file or Python (``MeasureOptions`` for ``tgt collect`` and its plans; ``BaselineOptions``,
``TrainConfig`` and ``PrepareOptions`` for ``tgt baseline``). Each field says once, in its
metadata (:class:`OptionInfo`), how it is spelled and checked: the CLI generates its flags
from it (``cli/_options.py``), the record's default is the flag's default, and
:func:`check_values` holds Python callers and plan keys to the ranges the flags enforce.
It imports nothing of the package, so every layer may use it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

R = TypeVar("R")
OTHER = "Options"   # the --help section of a field that names none


@dataclass(frozen=True)
class OptionInfo:
    """How one record field is set and checked: the one place its flag, plan key, help,
    range and choices are written."""

    help: str
    group: str = OTHER                      # the --help section
    minimum: float | None = None            # inclusive (unless above); None: no lower bound
    above: bool = False                     # the value must exceed ``minimum``
    maximum: float | None = None            # inclusive (unless below); None: no upper bound
    below: bool = False                     # the value must stay under ``maximum``
    choices: tuple[str, ...] = ()
    kind: type | None = None                # the value type where the default is None
    # The CLI spelling; None: ``--field-name``. A bool field's flag is a switch that turns it
    # on, or a click pair that spells both ways (``"--gst/--full-graph"``).
    flag: str | None = None
    deprecated_flags: tuple[str, ...] = ()  # old spellings, still accepted for one release

    def declaration(self, name: str) -> str:
        """What click is given: the flag, or the pair of a bool."""
        return self.flag or "--" + name.replace("_", "-")

    def flag_of(self, name: str) -> str:
        """The flag (of a pair, the first spelling)."""
        return self.declaration(name).split("/")[0]


def option(default: Any, help: str, **info: Any) -> Any:
    """A dataclass field a user sets: ``default`` and an :class:`OptionInfo` of ``help`` and
    ``info``."""
    return field(default=default, metadata={"option": OptionInfo(help, **info)})


@functools.cache
def _table(cls: type) -> tuple[dict[str, OptionInfo], dict[str, Any]]:
    """(field → OptionInfo of the option fields, in field order; field → default)."""
    found = fields(cls)
    return ({f.name: f.metadata["option"] for f in found if "option" in f.metadata},
            {f.name: f.default for f in found})


def options_of(cls: type) -> dict[str, OptionInfo]:
    """The option fields of the record class ``cls``, in field order."""
    return dict(_table(cls)[0])


def default_of(cls: type, name: str) -> Any:
    return _table(cls)[1][name]


def kind_of(cls: type, name: str) -> type:
    """The field's value type: ``OptionInfo.kind``, else its default's type."""
    kind = _table(cls)[0][name].kind
    return kind if kind is not None else type(default_of(cls, name))


def key_aliases(cls: type) -> dict[str, str]:
    """Plan keys other than the field names → the field: the keys spelled like a field's
    flag or like a deprecated spelling of it."""
    aliases = {}
    for name, info in options_of(cls).items():
        for flag in (info.flag_of(name), *info.deprecated_flags):
            key = flag[2:].replace("-", "_")
            if key != name:
                aliases[key] = name
    return aliases


def from_keys(cls: type[R], values: Mapping[str, Any]) -> R:
    """``cls`` built from the option fields found in ``values``, each under its field name or
    an old spelling (:func:`key_aliases`); other keys are ignored, so a plan item or a
    command's parameters can be passed whole. A field given both ways is a ValueError."""
    given = {k: values[k] for k in options_of(cls) if k in values}
    for old, name in key_aliases(cls).items():
        if old in values:
            if name in given:
                raise ValueError(f"{name} is given twice (as {name!r} and as its old "
                                 f"spelling {old!r})")
            given[name] = values[old]
    return cls(**given)


def check_values(record: Any) -> None:
    """Raise ValueError naming the first option field of ``record`` whose value is not of its
    kind, not among its choices or out of its range (a record's ``__post_init__``)."""
    cls = type(record)
    for name, info in options_of(cls).items():
        value = getattr(record, name)
        if value is None and default_of(cls, name) is None:
            continue
        kind = kind_of(cls, name)
        if kind is bool:
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, got {value!r}")
            continue
        if info.choices:
            if value not in info.choices:
                raise ValueError(f"{name} must be one of {list(info.choices)}, got {value!r}")
            continue
        if kind is str:
            if not isinstance(value, str):
                raise ValueError(f"{name} must be a string, got {value!r}")
            continue
        _check_number(name, value, kind is float, info)


def _check_number(name: str, value: Any, number: bool, info: OptionInfo) -> None:
    allowed = (int, float) if number else (int,)
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise ValueError(f"{name} must be {'a number' if number else 'an integer'}, "
                         f"got {value!r}")
    if info.minimum is not None and (value <= info.minimum if info.above
                                     else value < info.minimum):
        raise ValueError(f"{name} must be {'>' if info.above else '>='} {info.minimum}, "
                         f"got {value!r}")
    if info.maximum is not None and (value >= info.maximum if info.below
                                     else value > info.maximum):
        raise ValueError(f"{name} must be {'<' if info.below else '<='} {info.maximum}, "
                         f"got {value!r}")
