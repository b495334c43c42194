"""Statements → :class:`Module`: computations, async shorthand, and the checks XLA makes.

XLA prints an async-wrapped instruction in shorthand — ``reduce-scatter-start(x), dimensions=…``
for an ``async-start`` that calls a computation holding one ``reduce-scatter`` — and the same
shorthand comes back when a ``.pb`` is printed. It is expanded here into what the module holds
(XLA's HloAsyncInstruction): ``async-start``/``-update``/``-done`` opcodes, and a wrapped
computation of parameters plus the op, called by the start. XLA's names for these come from
``xla_async`` when the module went through XLA's parser; otherwise XLA's naming is followed.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from typing import cast

from tpugraphs_tools.errors import HloParseError
from tpugraphs_tools.hlo.module import Computation, Instruction, Module
from tpugraphs_tools.hlo.opcodes import async_shorthand, is_known
from tpugraphs_tools.hlo.text import (
    Statement,
    StatementError,
    parse_instruction,
    parse_module_header,
)

# Attributes that stay on the async-start when its wrapped op takes the others.
_START_ATTRS = frozenset({"async_execution_thread", "metadata", "sharding",
                          "frontend_attributes", "backend_config", "control-predecessors"})


@dataclass
class Parts:
    name: str = "module"
    header: dict[str, str] = field(default_factory=dict)
    comps: dict[str, Computation] = field(default_factory=dict)
    comp_lines: dict[str, int] = field(default_factory=dict)
    entry: str | None = None
    taken: set[str] = field(default_factory=set)     # instruction names, for async wrappers
    counted: set[str] = field(default_factory=set)   # computations whose names are in taken


def read_statements(statements: list[Statement], source: str) -> Parts:
    """Group statements into computations; syntax problems raise StatementError, duplicates
    and a second module raise HloParseError."""
    parts = Parts()
    module_line: int | None = None
    current: Computation | None = None
    roots = 0
    for lineno, kind, payload in statements:
        if kind == "inst":
            assert current is not None
            try:
                inst = parse_instruction(str(payload), lineno)
            except ValueError as exc:
                raise StatementError(f"cannot parse {str(payload)[:120]!r}: {exc}",
                                     lineno) from None
            roots += inst.is_root
            if roots > 1 and inst.is_root:
                raise HloParseError(f"computation {current.name} has a second ROOT "
                                    f"({inst.name})", source=source, line=lineno)
            current.instructions.append(inst)
        elif kind == "open":
            name, is_entry = cast("tuple[str, bool]", payload)
            if name in parts.comps:
                raise HloParseError(f"computation {name} is defined twice (first at line "
                                    f"{parts.comp_lines[name]})", source=source, line=lineno)
            current, roots = Computation(name=name, instructions=[], is_entry=is_entry), 0
            parts.comp_lines[name] = lineno
            if is_entry:
                if parts.entry is not None:
                    raise HloParseError(f"a second ENTRY computation {name}", source=source,
                                        line=lineno)
                parts.entry = name
        elif kind == "close":
            assert current is not None
            if not current.instructions:
                raise StatementError(f"computation {current.name} has no instructions", lineno)
            if payload is not None:
                current.execution_thread = str(payload)
            _close(current, parts, source)
            current = None
        elif kind == "module":
            if module_line is not None or parts.comps:
                raise HloParseError(
                    "a second HloModule in one file (first at line "
                    f"{module_line or 1}): give each module its own file",
                    source=source, line=lineno)
            module_line = lineno
            try:
                parts.name, parts.header = parse_module_header(str(payload))
            except ValueError as exc:
                raise StatementError(str(exc), lineno) from None
    if not parts.comps:
        raise StatementError("no computations found", 1, layout=True)
    return parts


def _close(comp: Computation, parts: Parts, source: str) -> None:
    """Check names, mark the root, expand async shorthand and store the computation."""
    seen: dict[str, int] = {}
    for inst in comp.instructions:
        if inst.name in seen:
            raise HloParseError(f"instruction {inst.name} is defined twice in {comp.name} "
                                f"(first at line {seen[inst.name]})", source=source,
                                line=inst.line)
        seen[inst.name] = inst.line
    if not any(i.is_root for i in comp.instructions):
        comp.instructions[-1].is_root = True
    for inst in comp.instructions:
        short = async_shorthand(inst.opcode)
        if short is not None:
            inst.opcode = short[0]
            if short[0] == "async-start":
                _wrap(inst, short[1], comp, parts, source)
    parts.comps[comp.name] = comp


def _unique(base: str, taken: Container[str]) -> str:
    """XLA's name uniquer: ``base``, then ``base.1``, ``base.2``, ..."""
    if base not in taken:
        return base
    i = 1
    while f"{base}.{i}" in taken:
        i += 1
    return f"{base}.{i}"


def _wrap(start: Instruction, opcode: str, comp: Computation, parts: Parts,
          source: str) -> None:
    """The computation an async-start in shorthand calls: parameters + the wrapped op."""
    shape = start.shape
    if not (shape.is_tuple and len(shape.tuple_shapes) >= 2 and shape.tuple_shapes[0].is_tuple
            and len(shape.tuple_shapes[0].tuple_shapes) == len(start.operands)):
        raise HloParseError(f"{start.name}: an async {opcode} start must have shape "
                            "((operand shapes...), result, ...)", source=source,
                            line=start.line)
    taken = parts.taken  # filled on the first wrapper only: modules without async pay nothing
    for c in [*parts.comps.values(), comp]:
        if c.name not in parts.counted:
            taken.update(i.name for i in c.instructions)
            parts.counted.add(c.name)
    params: list[Instruction] = []
    for number, operand_shape in enumerate(shape.tuple_shapes[0].tuple_shapes):
        name = _unique("async_param", taken)
        taken.add(name)
        params.append(Instruction(name, "parameter", operand_shape, [], {},
                                  parameter_number=number, line=start.line))
    attrs = {k: v for k, v in start.attrs.items() if k != "async_execution_thread"}
    wrapped = Instruction(_unique(opcode, taken), opcode, shape.tuple_shapes[1],
                          [p.name for p in params], attrs, is_root=True,
                          called_computations=start.called_computations, line=start.line)
    taken.add(wrapped.name)
    name = _unique("async_wrapped", parts.comps)
    parts.counted.add(name)
    thread = start.attrs.get("async_execution_thread", '"main"').strip('"')
    parts.comps[name] = Computation(name, [*params, wrapped], execution_thread=thread)
    start.attrs = {k: v for k, v in start.attrs.items() if k in _START_ATTRS}
    start.called_computations = [name]


def _rename_async(parts: Parts, xla_async: dict[str, list]) -> None:
    """Give wrapped computations and their instructions the names XLA gave them."""
    renames: dict[str, tuple[str, list[str]]] = {}
    for comp in parts.comps.values():
        for inst in comp.instructions:
            xla = xla_async.get(inst.name)
            if inst.opcode == "async-start" and xla and inst.called_computations:
                renames[inst.called_computations[0]] = (xla[0], list(xla[1]))
    if not renames:
        return
    comps: dict[str, Computation] = {}
    for name, comp in parts.comps.items():
        new = renames.get(name)
        if new is not None and len(new[1]) == len(comp.instructions) and \
                new[0] not in parts.comps:
            local = dict(zip([i.name for i in comp.instructions], new[1], strict=True))
            for inst in comp.instructions:
                inst.name = local[inst.name]
                inst.operands = [local.get(o, o) for o in inst.operands]
            comp.name = new[0]
        comps[comp.name] = comp
    for comp in comps.values():
        for inst in comp.instructions:
            inst.called_computations = [
                renames[c][0] if c in renames and renames[c][0] in comps else c
                for c in inst.called_computations]
    parts.comps = comps


def build_module(parts: Parts, source: str, *, check_opcodes: bool = True,
                 xla_async: dict[str, list] | None = None) -> Module:
    """Check operands, opcodes and calls; order computations callees first."""
    if xla_async:
        _rename_async(parts, xla_async)
    comps = parts.comps
    entry = parts.entry
    if entry is None:
        entry = list(comps)[-1]
        comps[entry].is_entry = True
    for comp in comps.values():
        names = {inst.name for inst in comp.instructions}
        for inst in comp.instructions:
            if check_opcodes and not is_known(inst.opcode):
                raise HloParseError(f"unknown opcode {inst.opcode!r} ({inst.name})",
                                    source=source, line=inst.line or None)
            for op in inst.operands:
                if op not in names:
                    raise HloParseError(f"instruction {inst.name}: operand {op} is not an "
                                        f"instruction of computation {comp.name}",
                                        source=source, line=inst.line or None)
            for callee in inst.called_computations:
                if callee not in comps:
                    raise HloParseError(f"instruction {inst.name} calls unknown computation "
                                        f"{callee}", source=source, line=inst.line or None)
        _topological(comp)
    return Module(name=parts.name, computations=_post_order(comps, entry),
                  header=parts.header)


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

