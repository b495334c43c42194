"""What the compiler actually did with a config, read back from the optimized module."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tpugraphs_tools.hlo.module import Module
from tpugraphs_tools.hlo.sources import fingerprint

COPY_OPCODES = frozenset({"copy", "transpose"})


def options_key(optimized_fingerprint: str, options: dict[str, Any] | None) -> str:
    """Dedupe key: the same optimized HLO under different options can run at different speeds."""
    payload = optimized_fingerprint + json.dumps(options or {}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def realized_layouts(optimized: Module, nodes: list[str]) -> dict[str, Any]:
    """Copies/transposes XLA inserted, and the final layout of each configured node found.

    A configured node keeps its name (or ``<name>.tgt_out`` when its output was constrained)
    unless a fusion swallowed it; then its layout is reported as null.
    """
    copies = 0
    by_name: dict[str, list[int] | None] = {}
    for _, inst in optimized.instructions():
        if inst.opcode in COPY_OPCODES:
            copies += 1
        base = inst.name[:-len(".tgt_out")] if inst.name.endswith(".tgt_out") else inst.name
        if base in nodes and not inst.shape.is_tuple:
            by_name[base] = list(inst.shape.minor_to_major or ())
    return {"copies": copies, "layouts": {n: by_name.get(n) for n in nodes},
            "fingerprint": fingerprint(optimized)}
