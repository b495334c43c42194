"""Every input of a collection resolved before its first lowering or compile.

Why: a collection measures its items one after another, minutes each. An input that cannot be
read (a mistyped ``--hlo`` path, a program name, a preset, ``module:fn``, a backend) used to
fail when its turn came, after the items before it had been measured; here it fails in
seconds, before anything is written, with the plan item it came from and the nearest valid
names. What only the work itself can tell (XLA's verdict on a module, a program that does not
trace) is still found when the item runs.
"""

from __future__ import annotations

from tpugraphs_tools.collect.request import CollectItem, CollectRequest, resolve_args
from tpugraphs_tools.errors import CollectError, HloError, InstallError, ProgramError
from tpugraphs_tools.format import Kind
from tpugraphs_tools.hlo import check_file


def check_request(request: CollectRequest) -> None:
    """Raise one :class:`CollectError` line for the first item that cannot be resolved (with
    how many more cannot), then check the backend the items need; returns quietly when every
    input resolves."""
    problems = []
    for item in request.items:
        try:
            check_item(item)
        except (HloError, ProgramError, InstallError, CollectError) as exc:
            problems.append(f"{item.where}: {exc}" if item.where else str(exc))
    if problems:
        more = len(problems) - 1
        raise CollectError(problems[0] + (f" (and {more} more item{'s' if more > 1 else ''} "
                                          "that cannot be read)" if more else ""))
    _check_backend(request)


def check_item(item: CollectItem) -> None:
    """Resolve one item's input: its HLO file read and parsed by tgt's own parser, or its
    program found (a ``module:fn`` imported) and buildable here, with its preset and
    arguments."""
    from tpugraphs_tools.programs import check_buildable, get_program

    if item.hlo is not None:
        check_file(item.hlo)
    else:
        resolve_args(item.program_name, item.program_args)
        check_buildable(get_program(item.program_name))


def _check_backend(request: CollectRequest) -> None:
    """The request's backend exists, and a tile item's platform has a kernel config space."""
    tile = any(item.collection == Kind.TILE for item in request.items)
    if request.backend is None and not tile:
        return  # jax's default backend always exists
    from tpugraphs_tools.configs import default_space
    from tpugraphs_tools.measure import platform_of

    try:
        platform = platform_of(request.backend).name
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CollectError(f"backend {request.backend!r} is not available here: "
                           f"{first}") from None
    if tile:
        try:
            default_space(platform)
        except ValueError as exc:
            raise CollectError(f"collection tile: {exc}") from None
