"""XLA's HLO opcode names, and how XLA's printer abbreviates async-wrapped instructions.

The names are those of the ``HloOpcode`` enum of the supported jaxlib (a test checks the count
against the installed one); an opcode outside this set is refused, as XLA's parser refuses it.
"""

from __future__ import annotations

from tpugraphs_tools.format import OPCODE_NAMES

# TpuGraphs' table minus opcodes XLA has since removed, plus those added after it.
_REMOVED = frozenset({"unknown", "trace", "tuple-select"})
_ADDED = ("acos", "acosh", "asin", "asinh", "atanh", "cosh", "sinh", "erf", "mulhi", "topk",
          "collective-broadcast", "ragged-all-to-all", "ragged-dot", "scaled-dot", "scan")
# Opcodes newer jaxlib releases of the supported range know (0.12); older ones refuse them.
NEWER_OPCODES = frozenset({"collective-reduce", "exp2", "log2", "shuffle"})
XLA_OPCODES: frozenset[str] = frozenset(n for n in OPCODE_NAMES if n not in _REMOVED) | \
    frozenset(_ADDED) | NEWER_OPCODES

# Start/done pairs that are opcodes of their own; every other ``<op>-start``/``-update``/
# ``-done`` is XLA's shorthand for async-start/-update/-done wrapping ``<op>``.
_NATIVE_ASYNC = frozenset(n for n in XLA_OPCODES
                          if n.endswith(("-start", "-done")) and not n.startswith("async-"))
ASYNC_SUFFIXES = {"-start": "async-start", "-update": "async-update", "-done": "async-done"}


def async_shorthand(opcode: str) -> tuple[str, str] | None:
    """``reduce-scatter-start`` → (``async-start``, ``reduce-scatter``); None when ``opcode``
    is not a shorthand (a real opcode, or a prefix XLA does not know)."""
    if opcode in XLA_OPCODES or opcode in _NATIVE_ASYNC:
        return None
    for suffix, async_op in ASYNC_SUFFIXES.items():
        if opcode.endswith(suffix):
            wrapped = opcode[:-len(suffix)]
            if wrapped in XLA_OPCODES and not wrapped.startswith("async-"):
                return async_op, wrapped
    return None


def is_known(opcode: str) -> bool:
    return opcode in XLA_OPCODES or async_shorthand(opcode) is not None
