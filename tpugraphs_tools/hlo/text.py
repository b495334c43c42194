"""HLO text reader: the format of ``Lowered.as_text(dialect="hlo")``, ``Compiled.as_text()``,
``HloModule.to_string()`` and ``XLA_FLAGS=--xla_dump_to`` files, with or without ``%`` sigils,
operand shapes, metadata, elided constants and the stack-frame tables of newer XLA.

Written by hand rather than through the jaxlib bindings because those expose no shapes, layouts
or attributes (see docs/features.md).
"""

from __future__ import annotations

import re

from tpugraphs_tools.errors import HloParseError
from tpugraphs_tools.hlo.module import Computation, Instruction, Module, Shape

_HEADER = re.compile(r"^(ENTRY\s+)?%?([^\s(){}=]+)\s*(\(.*\)\s*->\s*.*)?\{\s*$")
_ARRAY_SHAPE = re.compile(r"^([a-z][a-z0-9]*)\[([^\]]*)\](?:\{([^}]*)\})?$")
_COMMENT = re.compile(r"/\*.*?\*/")
_OPENERS = {"(": ")", "{": "}", "[": "]"}
# Attributes naming called computations, in the order XLA lists them for edges.
_CALL_ATTRS = (
    "condition", "body", "calls", "to_apply", "select", "scatter",
    "true_computation", "false_computation", "branch_computations", "called_computations",
)


def match_close(text: str, start: int) -> int:
    """Index of the bracket closing ``text[start]``, skipping nested brackets and quoted strings."""
    stack = [_OPENERS[text[start]]]
    i = start + 1
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif ch == stack[-1]:
            stack.pop()
            if not stack:
                return i
        i += 1
    raise ValueError("unbalanced brackets")


_SPECIAL = re.compile(r'[(){}\[\]",\\]')


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on commas outside brackets and quotes (attribute lists, operand lists, tuples).

    Only the bracket, quote, comma and backslash characters are visited (a regex finds them),
    which keeps parsing a 100k-instruction module's attribute lists cheap.
    """
    if sep != ",":
        raise ValueError("only ',' is supported")
    if '"' not in text and "(" not in text and "{" not in text and "[" not in text:
        return [p.strip() for p in text.split(",") if p.strip()]
    parts: list[str] = []
    depth = 0
    start = 0
    in_quote = False
    escaped_at = -2
    for m in _SPECIAL.finditer(text):
        ch = m.group()
        i = m.start()
        if in_quote:
            if ch == "\\" and escaped_at != i - 1:
                escaped_at = i
            elif ch == '"' and escaped_at != i - 1:
                in_quote = False
        elif ch == '"':
            in_quote = True
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    if last:
        parts.append(last)
    return [p for p in parts if p] if parts else parts


def parse_shape(text: str) -> Shape:
    """Parse ``f32[2,3]{1,0}``, ``(f32[2], s32[])``, ``token[]``, ``f32[<=4]`` or a tiled layout."""
    text = text.strip()
    if text.startswith("("):
        inner = text[1:match_close(text, 0)]
        return Shape("tuple", tuple_shapes=tuple(parse_shape(p) for p in split_top_level(inner)))
    m = _ARRAY_SHAPE.match(text)
    if m is None:
        raise ValueError(f"bad shape {text!r}")
    etype, dims_text, layout_text = m.groups()
    dims = tuple(int(d.lstrip("<=")) for d in dims_text.split(",")) if dims_text else ()
    minor_to_major: tuple[int, ...] | None = None
    if layout_text is not None:
        m2m = layout_text.split(":", 1)[0]
        minor_to_major = tuple(int(d) for d in m2m.split(",")) if m2m.strip() else ()
    return Shape(etype, dims, minor_to_major)


def _parse_instruction(line: str) -> Instruction:
    if "/*" in line:
        line = _COMMENT.sub("", line)
    is_root = line.startswith("ROOT ")
    if is_root:
        line = line[5:].lstrip()
    eq = line.index(" = ")
    name = line[:eq].strip().lstrip("%")
    rest = line[eq + 3:].lstrip()
    close = match_close(rest, 0) if rest.startswith("(") else rest.index(" ") - 1
    shape = parse_shape(rest[:close + 1])
    rest = rest[close + 1:].lstrip()
    paren = rest.index("(")
    opcode = rest[:paren].strip()
    close = match_close(rest, paren)
    operand_text = rest[paren + 1:close]
    attrs: dict[str, str] = {}
    for item in split_top_level(rest[close + 1:]):
        key, _, value = item.partition("=")
        if key.strip():  # the text before the first comma is empty, not an attribute
            attrs[key.strip()] = value.strip()
    inst = Instruction(name=name, opcode=opcode, shape=shape, operands=[], attrs=attrs,
                       is_root=is_root)
    if opcode == "parameter":
        inst.parameter_number = int(operand_text.strip())
    elif opcode == "constant":
        attrs["literal"] = operand_text.strip()
    elif operand_text.strip():
        inst.operands = [op.rsplit(None, 1)[-1].lstrip("%") for op in split_top_level(operand_text)]
    for key in _CALL_ATTRS:
        value = attrs.get(key)
        if value is not None:
            names = value.strip("{}").split(",") if value.startswith("{") else [value]
            inst.called_computations.extend(n.strip().lstrip("%") for n in names if n.strip())
    return inst


def computation_header(line: str) -> tuple[str, bool] | None:
    """(name, is_entry) when ``line`` opens a computation, else None."""
    m = _HEADER.match(line.strip())
    return (m.group(2), bool(m.group(1))) if m else None


def _post_order(comps: dict[str, Computation], entry: str) -> list[Computation]:
    """Callees before callers, entry last; computations nothing calls are kept, before the entry."""
    order: list[Computation] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        stack = [(name, iter(_callees(comps[name])))]
        seen.add(name)
        while stack:
            current, children = stack[-1]
            for child in children:
                if child in comps and child not in seen:
                    seen.add(child)
                    stack.append((child, iter(_callees(comps[child]))))
                    break
            else:
                stack.pop()
                order.append(comps[current])

    for name in comps:
        if name != entry and name not in seen:
            visit(name)
    if entry not in seen:
        visit(entry)
    return order


def _callees(comp: Computation) -> list[str]:
    return [c for inst in comp.instructions for c in inst.called_computations]


def _topological(comp: Computation) -> None:
    """Reorder instructions so operands precede users (text order is kept when already valid)."""
    position = {inst.name: i for i, inst in enumerate(comp.instructions)}
    if all(position.get(op, -1) < i for i, inst in enumerate(comp.instructions)
           for op in inst.operands):
        return
    by_name = {inst.name: inst for inst in comp.instructions}
    done: set[str] = set()
    ordered: list[Instruction] = []
    for inst in comp.instructions:
        stack = [(inst, iter(inst.operands))]
        if inst.name in done:
            continue
        done.add(inst.name)
        while stack:
            current, operands = stack[-1]
            for op in operands:
                if op in by_name and op not in done:
                    done.add(op)
                    stack.append((by_name[op], iter(by_name[op].operands)))
                    break
            else:
                stack.pop()
                ordered.append(current)
    comp.instructions = ordered


def parse_hlo_text(text: str, source: str = "<text>") -> Module:
    """Parse one HLO module from text; raises :class:`HloParseError` naming the source line."""
    module_name = "module"
    header: dict[str, str] = {}
    comps: dict[str, Computation] = {}
    entry_name: str | None = None
    current: Computation | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        try:
            if current is not None:
                if line == "}":
                    if not current.instructions:
                        raise ValueError(f"computation {current.name} has no instructions")
                    if not any(i.is_root for i in current.instructions):
                        current.instructions[-1].is_root = True
                    comps[current.name] = current
                    current = None
                else:
                    current.instructions.append(_parse_instruction(line))
                continue
            if line.startswith("HloModule "):
                parts = split_top_level(line[len("HloModule "):])
                module_name = parts[0]
                for item in parts[1:]:
                    key, _, value = item.partition("=")
                    header[key.strip()] = value.strip()
                continue
            m = _HEADER.match(line)
            if m is not None:
                current = Computation(name=m.group(2), instructions=[], is_entry=bool(m.group(1)))
                if current.is_entry:
                    entry_name = current.name
        except (ValueError, IndexError) as exc:
            raise HloParseError(f"cannot parse {line[:120]!r}: {exc}", source=source,
                                line=lineno) from None
    if current is not None:
        raise HloParseError(f"computation {current.name} is not closed", source=source)
    if not comps:
        raise HloParseError("no computations found", source=source)
    if entry_name is None:
        entry_name = list(comps)[-1]
        comps[entry_name].is_entry = True
    for comp in comps.values():
        _topological(comp)
        for inst in comp.instructions:
            missing = [c for c in inst.called_computations if c not in comps]
            if missing:
                raise HloParseError(f"instruction {inst.name} calls unknown computation "
                                    f"{missing[0]}", source=source)
    return Module(name=module_name, computations=_post_order(comps, entry_name), header=header)
