"""Options generated from the library's records, and ``--help`` in sections.

Flags are made from a record's field metadata (``option_info.OptionInfo``: default, range,
choices, help, flag, section): ``tgt collect``'s from ``MeasureOptions``, ``tgt baseline``'s
from ``BaselineOptions``, ``TrainConfig`` and ``PrepareOptions``. The CLI states none of them a
second time, and a plan key, a flag and a Python caller are held to the same checks. The
executor options (``--executor``/``--address``) are one set, shared by the commands that
spread work over processes or a Ray cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from tpugraphs_tools.option_info import OTHER, OptionInfo, default_of, kind_of, options_of
from tpugraphs_tools.parallel import EXECUTORS

F = TypeVar("F", bound=Callable[..., Any])


class SectionedOption(click.Option):
    """A click option that knows its ``--help`` section."""

    def __init__(self, *args: Any, section: str = OTHER, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.section = section


class SectionedCommand(click.Command):
    """A command whose ``--help`` lists options by section (click has no option groups), in
    the order each section first appears."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                sections.setdefault(getattr(param, "section", OTHER), []).append(record)
        for name, records in sections.items():
            with formatter.section(name):
                formatter.write_dl(records)


def option(*decls: str, section: str, **attrs: Any) -> Callable[[F], F]:
    """``click.option`` in a ``--help`` section."""
    return click.option(*decls, cls=SectionedOption, section=section, **attrs)


def _param_type(info: OptionInfo, kind: type) -> click.ParamType:
    if kind is bool:
        return click.BOOL
    if info.choices:
        return click.Choice(list(info.choices))
    if kind is str:
        return click.STRING
    if info.minimum is None and info.maximum is None:
        return click.FLOAT if kind is float else click.INT
    if kind is float:
        return click.FloatRange(min=info.minimum, max=info.maximum, min_open=info.above,
                                max_open=info.below)
    return click.IntRange(min=None if info.minimum is None else int(info.minimum),
                          max=None if info.maximum is None else int(info.maximum),
                          min_open=info.above, max_open=info.below)


# Parameter name of a deprecated spelling: this prefix + the parameter it stands for.
DEPRECATED = "deprecated__"


def deprecated_alias(old: str, name: str, type: click.ParamType | None = None
                     ) -> Callable[[F], F]:
    """Accept ``old``, the former spelling of parameter ``name``'s flag, for one more release
    (hidden from ``--help``; :func:`resolve_deprecated` moves its value and warns)."""
    return click.option(old, DEPRECATED + name, hidden=True, default=None, type=type,
                        help=f"Deprecated spelling of the {name} option.")


def resolve_deprecated(ctx: click.Context, values: dict[str, Any]) -> list[str]:
    """Move values given under deprecated spellings to their parameters, in place; returns
    one warning per spelling used. Both spellings at once is a usage error."""
    params = {p.name: p for p in ctx.command.params}
    warnings = []
    for key in [k for k in values if k.startswith(DEPRECATED)]:
        value = values.pop(key)
        if value is None:
            continue
        name = key[len(DEPRECATED):]
        old, new = params[key].opts[0], params[name].opts[0]
        if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE:
            raise click.UsageError(f"give {new} or its old spelling {old}, not both")
        values[name] = value
        warnings.append(f"{old} is deprecated and will be removed in the next release; "
                        f"use {new}")
    return warnings


def refuse_given(ctx: click.Context, flag: str, allowed: Collection[str], why: str) -> None:
    """A usage error naming the options given on the command line besides ``allowed``
    (parameter names) where ``flag`` makes them do nothing: they would be ignored silently."""
    given = [p.opts[0] for p in ctx.command.params
             if p.name not in allowed and p.name is not None
             and ctx.get_parameter_source(p.name) is ParameterSource.COMMANDLINE]
    if given:
        raise click.UsageError(f"{', '.join(given)} cannot be combined with {flag} ({why})")


def _field(records: Sequence[type], name: str) -> tuple[OptionInfo, Any, type]:
    """(info, default, kind) of option field ``name``: one flag, however many of ``records``
    hold the field (``seed`` of training and of the config subsample), so they must agree."""
    found = {(info, default_of(cls, name), kind_of(cls, name)) for cls in records
             if (info := options_of(cls).get(name)) is not None}
    if len(found) != 1:
        raise ValueError(f"option field {name!r}: {'not in' if not found else 'differs between'}"
                         f" {', '.join(cls.__name__ for cls in records)}")
    return found.pop()


def record_options(*records: type, names: Sequence[str] | None = None,
                   groups: Sequence[str] = (), default_in_help: Collection[str] = ()
                   ) -> Callable[[F], F]:
    """Decorate a command with one flag per option field of ``records``; the parameter is
    named like the field (= the plan key).

    ``names``: these fields, in this order (a command places other flags between them);
    None: every option field, record by record. ``groups``: the ``--help`` sections, in this
    order (fields keep their order within one). ``default_in_help``: fields whose flag
    defaults to None, its help stating the record's default, so the command can tell whether
    the flag was given.
    """
    if names is None:
        names = list(dict.fromkeys(n for cls in records for n in options_of(cls)))
    if groups:
        names = sorted(names, key=lambda n: list(groups).index(_field(records, n)[0].group))

    def decorate(f: F) -> F:
        for name in reversed(names):
            info, default, kind = _field(records, name)
            for old in info.deprecated_flags:
                f = deprecated_alias(old, name, _param_type(info, kind))(f)
            attrs: dict[str, Any] = {"default": default, "help": info.help}
            if kind is bool and "/" not in info.declaration(name):
                attrs["is_flag"] = True     # a switch: sets the field, off by default
            else:
                attrs.update(type=_param_type(info, kind), show_default=default is not None)
            if name in default_in_help:
                attrs.update(default=None, show_default=False,
                             help=f"{info.help}  [default: {default}].")
            f = option(info.declaration(name), name, section=info.group, **attrs)(f)
        return f
    return decorate


def executor_options(help: str, section: str = OTHER) -> Callable[[F], F]:
    """``--executor`` (:data:`parallel.EXECUTORS`) and ``--address``: where a command's work
    runs. ``help`` says what runs there, in the command's words."""
    def decorate(f: F) -> F:
        f = option("--address", default=None, section=section,
                   help="Ray cluster address (with --executor ray).")(f)
        return option("--executor", type=click.Choice(list(EXECUTORS)), default="local",
                      show_default=True, section=section, help=help)(f)
    return decorate


def check_executor(executor: str, address: str | None) -> None:
    """A usage error for ``--address`` without ``--executor ray`` (it would be ignored)."""
    if address is not None and executor != "ray":
        raise click.UsageError("--address is a Ray cluster's: give it with --executor ray")
