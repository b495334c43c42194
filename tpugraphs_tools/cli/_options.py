"""Options generated from the library's records, and ``--help`` in sections.

``tgt collect``'s measurement flags are made from :class:`MeasureOptions`' field metadata
(default, range, choices, help, flag, section), so the CLI states none of them a second time
and a plan key, a flag and a Python caller are held to the same checks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from tpugraphs_tools.measure import OPTION_GROUPS, OPTION_INFO, option_default, option_kind

F = TypeVar("F", bound=Callable[..., Any])
OTHER = "Options"


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


def _param_type(name: str) -> click.ParamType:
    info, kind = OPTION_INFO[name], option_kind(name)
    if kind is bool:
        return click.BOOL
    if info.choices:
        return click.Choice(list(info.choices))
    if info.minimum is None:
        return click.FLOAT if kind is float else click.INT
    if kind is float:
        return click.FloatRange(min=info.minimum, min_open=info.above)
    return click.IntRange(min=int(info.minimum), min_open=info.above)


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


def measure_options(f: F) -> F:
    """Decorate a command with one flag per :class:`MeasureOptions` field that has a plan
    key, section by section; the parameter is named like the field (= the plan key)."""
    names = sorted(OPTION_INFO, key=lambda n: OPTION_GROUPS.index(OPTION_INFO[n].group))
    for name in reversed(names):
        info, default = OPTION_INFO[name], option_default(name)
        for old in info.deprecated_flags:
            f = deprecated_alias(old, name, _param_type(name))(f)
        flag = info.flag_of(name)
        if option_kind(name) is bool:  # --race/--no-race
            flag = f"{flag}/--no-{flag[2:]}"
        f = option(flag, name, section=info.group, default=default,
                   show_default=default is not None, type=_param_type(name),
                   help=info.help)(f)
    return f
