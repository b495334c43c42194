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

from tpugraphs_tools.errors import HloParseError, did_you_mean
from tpugraphs_tools.hlo.module import Module
from tpugraphs_tools.hlo.parse import parse_hlo_text
from tpugraphs_tools.hlo.xla import xla_verdict

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
    return HloSource(parse_hlo_text(text, source=origin, check_opcodes=False), text, proto,
                     "jax", "unoptimized", origin)


def from_compiled(compiled: Any, origin: str) -> HloSource:
    """Optimized module (fusions, assigned layouts) of a ``jax.stages.Compiled``."""
    text = compiled.as_text()
    from tpugraphs_tools._xla_compat import compiled_hlo_proto

    proto = compiled_hlo_proto(compiled)
    return HloSource(parse_hlo_text(text, source=origin, check_opcodes=False), text, proto,
                     "jax", "optimized", origin)


def from_file(path: str | Path, stage: str = "unoptimized") -> HloSource:
    """Read ``.hlo``/``.txt`` HLO text or a ``.pb`` serialized HloModuleProto.

    XLA's parser judges the module first (``xla.py``): what it refuses is refused with its
    message. The source keeps the file's own bytes (text, or the proto as given) for storage.
    """
    path = Path(path)
    name = _existing(path).name.lower()
    if name.endswith(PROTO_SUFFIXES):
        proto = path.read_bytes()
        verdict = xla_verdict(proto, "proto", str(path))
        if not verdict.available or verdict.text is None:
            raise HloParseError("reading a serialized HloModuleProto needs jaxlib",
                                source=str(path))
        module = parse_hlo_text(verdict.text, source=f"{path} (as printed by XLA)",
                                check_opcodes=False, xla_async=verdict.async_names)
        return HloSource(module, verdict.text, proto, "hlo-proto", stage, str(path))
    if name.endswith(TEXT_SUFFIXES):
        text = _read_text(path)
        try:
            verdict = xla_verdict(text.encode(), "text", str(path))
        except HloParseError as refused:
            raise _explained(refused, text, str(path)) from None
        module = parse_hlo_text(text, source=str(path), check_opcodes=not verdict.available,
                                xla_async=verdict.async_names)
        return HloSource(module, text, None, "hlo-text", stage, str(path))
    raise _unknown_type(path)


def check_file(path: str | Path) -> None:
    """Refuse in milliseconds what :func:`from_file` would refuse without XLA: a missing file
    (naming the nearest files beside it), an unknown file type, an empty proto, text that is
    not UTF-8 or not an HLO module (tgt's own parser). A collection checks every file before
    its first compile, so a typo costs seconds, not a measured graph; XLA's verdict (a child
    process, seconds per file) still comes when the file is read."""
    path = Path(path)
    name = _existing(path).name.lower()
    if name.endswith(PROTO_SUFFIXES):
        if path.stat().st_size == 0:
            raise HloParseError("empty file", source=str(path))
    elif name.endswith(TEXT_SUFFIXES):
        parse_hlo_text(_read_text(path), source=str(path), check_opcodes=False)
    else:
        raise _unknown_type(path)


def _existing(path: Path) -> Path:
    """``path`` if it is a file, else an error naming the nearest names in its folder."""
    if path.is_file():
        return path
    if path.is_dir():
        raise HloParseError("a folder, not an HLO file", source=str(path))
    folder = path.parent
    beside = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    raise HloParseError(f"no such file{did_you_mean(path.name, beside)}", source=str(path))


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise HloParseError("not UTF-8 text; pass a .pb for binary protos",
                            source=str(path)) from None


def _unknown_type(path: Path) -> HloParseError:
    return HloParseError(f"unknown HLO file type (expected one of "
                         f"{TEXT_SUFFIXES + PROTO_SUFFIXES})", source=str(path))


def _explained(refused: HloParseError, text: str, source: str) -> HloParseError:
    """XLA's refusal, plus tgt's own reading of the same line when it says more (XLA reports
    a second HloModule as "expects name")."""
    try:
        parse_hlo_text(text, source=source)
    except HloParseError as ours:
        if ours.line == refused.line and refused.line is not None:
            return HloParseError(f"{refused.message} ({ours.message})", source=source,
                                 line=refused.line)
    return refused


def stored_hlo(src: HloSource) -> tuple[bytes, str]:
    """(bytes, suffix) of the HLO kept beside a graph: what the module came as — the proto of a
    jax program or of a ``.pb``, the text of a text file — never a proto XLA re-serialized from
    text (that fills elided ``{...}`` constants: a 21 KB module became a 23 MB proto)."""
    if src.proto is not None:
        return src.proto, ".hlo.pb"
    return src.text.encode(), ".hlo.txt"
