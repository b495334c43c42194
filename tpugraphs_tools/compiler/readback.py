"""Compile a config and read back what the compiler did with it: the realized layouts and the
key that tells a new program from one compiled before.

Why here and not in the measurement worker: it needs only the compiler, the optimized HLO and
the constrained slots, so it takes plain arguments (no measurement spec) and ``compiler/``
never imports ``measure/``.
"""

from __future__ import annotations

from typing import Any

from tpugraphs_tools import _xla_compat as X
from tpugraphs_tools.compiler.apply import ConstraintSlot
from tpugraphs_tools.compiler.compile import compile_text, compile_with_code_hash
from tpugraphs_tools.compiler.realized import Realized, code_key, options_key, realized_layouts
from tpugraphs_tools.hlo import parse_hlo_text


def compile_and_read(text: str, signature: Any, options: dict[str, Any] | None, *,
                     backend: str | None, dedupe_on_code: bool,
                     slots: list[ConstraintSlot]) -> tuple[Any, Realized, str, str]:
    """Compile, read the optimized module back: (executable, realized, dedupe key, HLO text).

    The key is (optimized fingerprint, options), or with ``dedupe_on_code`` (optimized
    fingerprint, generated machine code): then an option that changes nothing is a no-op.
    """
    code = None
    if dedupe_on_code:
        exe, code = compile_with_code_hash(text, signature, options, backend)
    else:
        exe = compile_text(text, signature, options, backend)
    optimized_text = X.executable_hlo_text(exe)
    realized = realized_layouts(parse_hlo_text(optimized_text, source="optimized"), slots)
    if not dedupe_on_code:
        return exe, realized, options_key(realized["fingerprint"], options), optimized_text
    key = code_key(realized["fingerprint"], code)
    return exe, {**realized, "code_hash": code}, key, optimized_text
