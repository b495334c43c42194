"""HLO text reader: the format of ``Lowered.as_text(dialect="hlo")``, ``Compiled.as_text()``,
``HloModule.to_string()`` and ``XLA_FLAGS=--xla_dump_to`` files, with or without ``%`` sigils,
operand shapes, metadata, elided constants and the stack-frame tables of newer XLA.

XLA prints one statement per line, and that layout is read line by line (fast). Text laid out
otherwise — instructions split over lines, a whole module on one line, comments between
tokens — is valid HLO too: when a line is not a whole statement, the module is read again by
the token scanner of ``scan.py``, which yields the same statements. ``build.py`` turns them
into a :class:`Module` and refuses what XLA's parser refuses (unknown opcodes, undefined
operands, duplicate names, two modules); ``parse.py`` chains the three (``parse_hlo_text``).

Written by hand rather than through the jaxlib bindings because those expose no shapes, layouts
or attributes (see docs/features.md).
"""

from __future__ import annotations

import re

from tpugraphs_tools.errors import StatementError as StatementError
from tpugraphs_tools.hlo.module import Instruction, Shape

_HEADER = re.compile(r"^(ENTRY\s+)?%?([^\s(){}=,\"]+)\s*(\(.*\)\s*->\s*.*)?\{\s*$")
_CLOSE = re.compile(r'^\}\s*(?:,\s*execution_thread="([^"]*)")?$')
_ARRAY_SHAPE = re.compile(r"^([a-z][a-z0-9]*)\[([^\]]*)\](?:\{([^}]*)\})?$")
_COMMENT = re.compile(r"/\*.*?\*/")
_NAME = re.compile(r'^[^\s(){}\[\],="]+$')
_OPCODE = re.compile(r"^[a-z][a-z0-9\-]*$")
_OPENERS = {"(": ")", "{": "}", "[": "]"}
# Tables of source locations newer XLA prints between the header and the computations.
_TABLES = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
# Attributes naming called computations, in the order XLA lists them for edges.
_CALL_ATTRS = (
    "condition", "body", "calls", "to_apply", "select", "scatter",
    "true_computation", "false_computation", "branch_computations", "called_computations",
)

# (line, kind, payload): kind "module" (text after HloModule), "open" ((name, is_entry)),
# "close" (execution thread or None) or "inst" (one instruction as a single line).
Statement = tuple[int, str, object]


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
    which keeps parsing a 100k-instruction module's attribute lists cheap. Unbalanced brackets
    or quotes raise ValueError.
    """
    if sep != ",":
        raise ValueError("only ',' is supported")
    if not any(ch in text for ch in '"(){}[]'):
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
            if depth < 0:
                raise ValueError(f"unbalanced {ch!r}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if depth or in_quote:
        raise ValueError("unbalanced brackets or quotes")
    last = text[start:].strip()
    if last:
        parts.append(last)
    return [p for p in parts if p] if parts else parts


def parse_shape(text: str) -> Shape:
    """Parse ``f32[2,3]{1,0}``, ``(f32[2], s32[])``, ``token[]``, ``f32[<=4]`` or a tiled layout."""
    text = text.strip()
    if text.startswith("("):
        close = match_close(text, 0)
        if close != len(text) - 1:
            raise ValueError(f"bad shape {text!r}")
        inner = text[1:close]
        return Shape("tuple", tuple_shapes=tuple(parse_shape(p) for p in split_top_level(inner)))
    m = _ARRAY_SHAPE.match(text)
    if m is None:
        raise ValueError(f"bad shape {text!r}")
    etype, dims_text, layout_text = m.groups()
    dims = tuple(int(d.strip().lstrip("<=")) for d in dims_text.split(",")) \
        if dims_text.strip() else ()
    minor_to_major: tuple[int, ...] | None = None
    if layout_text is not None:
        m2m = layout_text.split(":", 1)[0]
        minor_to_major = tuple(int(d) for d in m2m.split(",")) if m2m.strip() else ()
    return Shape(etype, dims, minor_to_major)


def _one_value(value: str) -> bool:
    """An attribute value is one token run: whitespace only inside its braces or quotes."""
    if " " not in value and "\t" not in value:
        return True
    if value[0] == '"':
        return value[-1] == '"' and '" ' not in value[1:-1].replace('\\"', "")
    if value[0] != "{" or value[-1] != "}":
        return False
    # "} " can only end a braced value early (``{...} ENTRY %main ...`` on one line): check
    return "} " not in value or match_close(value, 0) == len(value) - 1


def parse_attributes(text: str) -> dict[str, str]:
    """``key=value, key=value`` → dict; anything else raises ValueError."""
    attrs: dict[str, str] = {}
    if text.rstrip().endswith(","):
        raise ValueError("attribute list ends with ','")
    for item in split_top_level(text):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not _NAME.match(key) or not value or not _one_value(value):
            raise ValueError(f"expected 'name=value', got {item[:80]!r}")
        attrs[key] = value
    return attrs


def parse_instruction(line: str, lineno: int = 0) -> Instruction:
    """One instruction written on one line: ``[ROOT] name = shape opcode(operands), attrs``."""
    if "/*" in line:
        line = _COMMENT.sub("", line)
    is_root = line.startswith("ROOT ")
    if is_root:
        line = line[5:].lstrip()
    eq = line.find(" = ")
    if eq < 0:
        raise ValueError("expected 'name = shape opcode(operands)'")
    name = line[:eq].strip().lstrip("%")
    if not _NAME.match(name):
        raise ValueError(f"bad instruction name {name!r}")
    rest = line[eq + 3:].lstrip()
    close = match_close(rest, 0) if rest.startswith("(") else rest.find(" ") - 1
    if close < 0:
        raise ValueError("expected an opcode after the shape")
    shape = parse_shape(rest[:close + 1])
    rest = rest[close + 1:].lstrip()
    paren = rest.find("(")
    opcode = rest[:paren].rstrip()
    if paren < 0 or not _OPCODE.match(opcode):
        raise ValueError(f"expected opcode(operands) after the shape, got {rest[:40]!r}")
    close = match_close(rest, paren)
    operand_text = rest[paren + 1:close].strip()
    tail = rest[close + 1:].strip()
    if tail and tail[0] != ",":
        raise ValueError(f"unexpected {tail[:40]!r} after the operands")
    attrs = parse_attributes(tail[1:]) if tail else {}
    inst = Instruction(name=name, opcode=opcode, shape=shape, operands=[], attrs=attrs,
                       is_root=is_root, line=lineno)
    if opcode == "parameter":
        inst.parameter_number = int(operand_text)
    elif opcode == "constant":
        attrs["literal"] = operand_text
    elif operand_text:
        inst.operands = [op.rsplit(None, 1)[-1].lstrip("%") for op in split_top_level(operand_text)]
    for key in _CALL_ATTRS:
        value = attrs.get(key)
        if value is not None:
            names = value.strip("{}").split(",") if value.startswith("{") else [value]
            inst.called_computations.extend(n.strip().lstrip("%") for n in names if n.strip())
    return inst


def parse_module_header(payload: str) -> tuple[str, dict[str, str]]:
    """``name, key=value, ...`` after ``HloModule`` → (name, header attributes)."""
    name, _, rest = payload.partition(",")
    name = name.strip()
    if not _NAME.match(name):
        raise ValueError(f"expected a module name after HloModule, got {name[:40]!r}")
    return name, parse_attributes(rest) if rest.strip() else {}


def computation_header(line: str) -> tuple[str, bool] | None:
    """(name, is_entry) when ``line`` opens a computation, else None."""
    m = _HEADER.match(line.strip())
    return (m.group(2), bool(m.group(1))) if m else None


def line_statements(text: str) -> list[Statement]:
    """Statements of text laid out one per line (as XLA prints); StatementError otherwise."""
    out: list[Statement] = []
    in_comp = in_table = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        if "/*" in line:
            line = _COMMENT.sub("", line).strip()
            if not line:
                continue
        if in_comp:
            if line[0] == "}":
                m = _CLOSE.match(line)
                if m is None:
                    raise StatementError("expected '}' closing the computation", lineno,
                                         layout=True)
                out.append((lineno, "close", m.group(1)))
                in_comp = False
            else:
                out.append((lineno, "inst", line))
            continue
        if line.startswith("HloModule ") or line == "HloModule":
            out.append((lineno, "module", line[len("HloModule"):].strip()))
            in_table = False
            continue
        m = _HEADER.match(line)
        if m is not None:
            out.append((lineno, "open", (m.group(2), bool(m.group(1)))))
            in_comp, in_table = True, False
        elif line in _TABLES:
            in_table = True
        elif not (in_table and line[0].isdigit()):
            raise StatementError(f"expected a computation, got {line[:80]!r}", lineno,
                                 layout=True)
    if in_comp:
        raise StatementError("computation is not closed", len(text.splitlines()), layout=True)
    return out

