"""``parse_hlo_text``: HLO text → :class:`Module`, the one entry point of the three readers.

The line reader (``text.py``) reads XLA's own layout, one statement per line; text laid out
otherwise is read again by the token scanner (``scan.py``); ``build.py`` turns either's
statements into a module. This module sits above all three so that none of them imports back.
"""

from __future__ import annotations

from tpugraphs_tools.errors import HloParseError, StatementError
from tpugraphs_tools.hlo.build import build_module, read_statements
from tpugraphs_tools.hlo.module import Module
from tpugraphs_tools.hlo.scan import scan_statements
from tpugraphs_tools.hlo.text import line_statements


def parse_hlo_text(text: str, source: str = "<text>", *, check_opcodes: bool = True,
                   xla_async: dict[str, list] | None = None) -> Module:
    """Parse one HLO module from text; raises :class:`HloParseError` naming the source line.

    ``check_opcodes=False`` accepts opcodes outside tgt's table (for text XLA itself accepted);
    ``xla_async`` gives the names XLA chose for async-wrapped computations (see ``build.py``).
    """
    try:
        parts = read_statements(line_statements(text), source)
    except StatementError as first:
        try:
            parts = read_statements(scan_statements(text), source)
        except StatementError as exc:
            # the line reader's message quotes the statement: better when it is not later
            best = first if not first.layout and first.line <= exc.line else exc
            raise HloParseError(str(best), source=source, line=best.line) from None
    return build_module(parts, source, check_opcodes=check_opcodes, xla_async=xla_async)
