"""Where HLO comes from: a jax ``Lowered``/``Compiled`` object or a file on disk.

Each reader returns an :class:`HloSource`: the parsed module plus the raw bytes kept beside the
graph for provenance.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpugraphs_tools.errors import HloParseError
from tpugraphs_tools.hlo.module import Module
from tpugraphs_tools.hlo.proto import proto_to_text, text_to_proto
from tpugraphs_tools.hlo.text import parse_hlo_text

TEXT_SUFFIXES = (".hlo", ".txt")
PROTO_SUFFIXES = (".pb", ".proto", ".hlo.pb")


@dataclass
class HloSource:
    module: Module
    text: str
    proto: bytes | None
    kind: str          # "jax" | "hlo-text" | "hlo-proto"
    stage: str         # "unoptimized" | "optimized"
    origin: str        # program name or file path


# Attributes that never change the computation, and the call attributes (hashed by position).
_IGNORED_ATTRS = frozenset({
    "metadata", "frontend_attributes", "sharding", "origin", "condition",
    "body", "calls", "to_apply", "select", "scatter", "true_computation", "false_computation",
    "branch_computations", "called_computations",
})


def _canonical(key: str, value: str) -> str:
    """``backend_config`` JSON with sorted keys: XLA prints its fields in varying order
    (a dump and ``Compiled.as_text()`` of the same module differ)."""
    if key != "backend_config" or not value.startswith("{"):
        return value
    try:
        return json.dumps(json.loads(value), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return value


def fingerprint(module: Module) -> str:
    """Content hash of a module that ignores metadata and instruction names' debug suffixes.

    Two lowerings of the same program on the same jax give the same fingerprint; it is the key
    for de-duplicating graphs and for splitting by program without leaks.
    """
    h = hashlib.sha256()
    comp_index = {c.name: str(i) for i, c in enumerate(module.computations)}
    for comp in module.computations:
        h.update(f"{'E' if comp.is_entry else 'C'}{len(comp.instructions)}\n".encode())
        local = {inst.name: i for i, inst in enumerate(comp.instructions)}
        for i, inst in enumerate(comp.instructions):
            attrs = sorted((k, _canonical(k, v)) for k, v in inst.attrs.items()
                           if k not in _IGNORED_ATTRS)
            calls = ",".join(comp_index.get(c, c) for c in inst.called_computations)
            ops = ",".join(str(local.get(o, o)) for o in inst.operands)
            h.update(f"{i}{'R' if inst.is_root else ''} {inst.shape.to_text()} {inst.opcode}"
                     f"({ops}) {inst.parameter_number} {calls} {attrs}\n".encode())
    return h.hexdigest()


def from_lowered(lowered: Any, origin: str) -> HloSource:
    """Un-optimized module of a ``jax.stages.Lowered`` (what TpuGraphs' layout graphs are)."""
    text = lowered.as_text(dialect="hlo")
    from tpugraphs_tools._xla_compat import lowered_hlo_proto

    proto = lowered_hlo_proto(lowered)
    return HloSource(parse_hlo_text(text, source=origin), text, proto, "jax", "unoptimized",
                     origin)


def from_compiled(compiled: Any, origin: str) -> HloSource:
    """Optimized module (fusions, assigned layouts) of a ``jax.stages.Compiled``."""
    text = compiled.as_text()
    from tpugraphs_tools._xla_compat import compiled_hlo_proto

    proto = compiled_hlo_proto(compiled)
    return HloSource(parse_hlo_text(text, source=origin), text, proto, "jax", "optimized",
                     origin)


def from_file(path: str | Path, stage: str = "unoptimized") -> HloSource:
    """Read ``.hlo``/``.txt`` HLO text or a ``.pb`` serialized HloModuleProto."""
    path = Path(path)
    if not path.is_file():
        raise HloParseError("no such file", source=str(path))
    name = path.name.lower()
    if name.endswith(PROTO_SUFFIXES):
        proto = path.read_bytes()
        text = proto_to_text(proto, source=str(path))
        return HloSource(parse_hlo_text(text, source=str(path)), text, proto, "hlo-proto",
                         stage, str(path))
    if name.endswith(TEXT_SUFFIXES):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            raise HloParseError("not UTF-8 text; pass a .pb for binary protos",
                                source=str(path)) from None
        module = parse_hlo_text(text, source=str(path))
        return HloSource(module, text, text_to_proto(text), "hlo-text", stage, str(path))
    raise HloParseError(f"unknown HLO file type (expected one of "
                        f"{TEXT_SUFFIXES + PROTO_SUFFIXES})", source=str(path))
