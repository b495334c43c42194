"""Apply a layout config to HLO text: ``LayoutConstraint`` custom-calls the compiler honours.

For an output slot the node is renamed ``<name>.tgt_out`` and a custom-call named ``<name>``
takes its place, so every user reads the constrained value without being rewritten. For an
input slot a custom-call on the operand is inserted before the node and the node's operand is
rewired. The wanted layout is written both on the custom-call's result shape and in
``operand_layout_constraints``: XLA's HLO→MLIR conversion drops the result layout when the
latter is missing, and the constraint is then silently ignored (measured; see
docs/layout-collection.md).

The compile route (HLO → MLIR → HLO) renames instructions but keeps ``metadata.op_name``, and
the copies layout assignment inserts inherit the op_name of the value they copy. So every
constraint is tagged ``tgt.constraint:<its name>``, and the constrained node and the operands
constraints read ``tgt.source:<their name>``: compiler/realized.py finds the constrained tensors
in the optimized module by these tags (:func:`constraint_slots` lists what to look for).
"""

from __future__ import annotations

import re
from typing import TypedDict

from tpugraphs_tools.configs import SLOTS, Layout, LayoutConfig, LayoutSpace, LayoutTensor
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.hlo import (
    Instruction,
    Module,
    computation_header,
    match_close,
    split_top_level,
)

CONSTRAINT_TARGET = "LayoutConstraint"
_METADATA = re.compile(r",\s*metadata=\{")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')


class ConstraintSlot(TypedDict):
    """One constrained slot as compiler/realized.py looks for it in the optimized module
    (:func:`constraint_slots`; sent to the compile worker with its job)."""

    node: str               # the constrained instruction, as the config names it
    slot: str               # configs.SLOTS: "output", "input" or "kernel"
    opcode: str             # the node's opcode
    element_type: str       # the constrained tensor's element type and dims
    dims: list[int]
    wanted: list[int]       # the requested minor_to_major
    tag: str                # the constraint's op_name
    value: str              # the constrained value: slots with equal ``value`` share it
    value_tags: list[str]   # op_names the value's producer (or a copy of it) can carry
    node_tag: str           # the constrained node's own op_name


def constraint_tag(name: str) -> str:
    return f"tgt.constraint:{name}"


def source_tag(name: str) -> str:
    return f"tgt.source:{name}"


def _constraint_name(tensor: LayoutTensor) -> str:
    return tensor.node if tensor.slot == 0 else f"{tensor.node}.tgt_in{tensor.slot}"


def _value_producer(tensor: LayoutTensor, outputs: set[tuple[str, str]]) -> str:
    """The instruction computing the constrained value, in the constrained text."""
    if tensor.slot == 0 or (tensor.computation, tensor.operand) in outputs:
        return f"{tensor.operand if tensor.slot else tensor.node}.tgt_out"
    return tensor.operand or ""


_Index = dict[tuple[str, str], Instruction]


def _value_op_names(index: _Index, roots: dict[str, Instruction], computation: str,
                    name: str) -> list[str]:
    """op_names the value of ``name`` can carry after compiling.

    The call inliner prefixes inlined instructions' op_names with the call's, so the value of
    a ``call`` (jax's ``jit_relu_`` and friends) is the callee root's, renamed
    ``<call op_name>/<root op_name>`` (a root without metadata has its name as op_name).
    """
    names = [source_tag(name)]
    inst = index.get((computation, name))
    while inst is not None and inst.opcode == "call" and inst.called_computations:
        inst = roots.get(inst.called_computations[0])
        if inst is None:
            break
        match = _OP_NAME.search(inst.attrs.get("metadata", ""))
        names.append(f"{names[-1]}/{match.group(1) if match else inst.name}")
    return names


def _bitcast_op_names(index: _Index, roots: dict[str, Instruction], tensor: LayoutTensor,
                      constrained: set[tuple[str, str, int]]) -> list[str]:
    """op_names a reshape's output carries when XLA makes it a bitcast of its operand's value.

    Such a bitcast inherits the op_name of the value it reinterprets: the reshape's input
    constraint, the operand's output constraint, or the operand itself.
    """
    if tensor.opcode != "reshape" or tensor.slot != 0 or not tensor.node_operands:
        return []
    operand = tensor.node_operands[0]
    names = []
    if (tensor.computation, tensor.node, 1) in constrained:
        names.append(constraint_tag(f"{tensor.node}.tgt_in1"))
    if (tensor.computation, operand, 0) in constrained:
        return [*names, constraint_tag(operand), source_tag(f"{operand}.tgt_out")]
    return names + _value_op_names(index, roots, tensor.computation, operand)


def bitcast_sources(space: LayoutSpace, config: LayoutConfig) -> set[tuple[str, str]]:
    """Operands of output-constrained reshapes that need a source tag of their own."""
    tensors = space.by_key()
    chosen = [tensors[k] for k, _ in config.layouts if k in tensors]
    outputs = {(t.computation, t.node) for t in chosen if t.slot == 0}
    return {(t.computation, t.node_operands[0]) for t in chosen
            if t.slot == 0 and t.opcode == "reshape" and t.node_operands
            and (t.computation, t.node_operands[0]) not in outputs}


def constraint_slots(module: Module, space: LayoutSpace,
                     config: LayoutConfig) -> list[ConstraintSlot]:
    """What compiler/realized.py must find for each constrained slot.

    ``value`` names the constrained value (slots with equal ``value`` constrain the same
    value: an input slot reading a constrained output, or two slots reading one operand),
    ``value_tags`` the op_names its producer can carry, ``tag`` the constraint's and
    ``node_tag`` the constrained node's own op_name.
    """
    tensors = space.by_key()
    outputs = {(tensors[k].computation, tensors[k].node) for k, _ in config.layouts
               if k in tensors and tensors[k].slot == 0}
    constrained = {(tensors[k].computation, tensors[k].node, tensors[k].slot)
                   for k, _ in config.layouts if k in tensors}
    index = {(c.name, i.name): i for c, i in module.instructions()}
    roots = {c.name: c.root for c in module.computations}
    slots: list[ConstraintSlot] = []
    for key, layout in config.layouts:
        tensor = tensors[key]
        value = _value_producer(tensor, outputs)
        node = (f"{tensor.node}.tgt_out" if (tensor.computation, tensor.node) in outputs
                else tensor.node)
        slots.append({
            "node": tensor.node, "slot": SLOTS[tensor.slot], "opcode": tensor.opcode,
            "element_type": tensor.element_type, "dims": list(tensor.dims),
            "wanted": list(layout), "tag": constraint_tag(_constraint_name(tensor)),
            "value": source_tag(value),
            "value_tags": (_value_op_names(index, roots, tensor.computation, value)
                           + _bitcast_op_names(index, roots, tensor, constrained)),
            "node_tag": source_tag(node),
        })
    return slots


def _with_op_name(line: str, op_name: str) -> str:
    """``line`` with its metadata replaced by ``{op_name="..."}`` (added when absent)."""
    match = _METADATA.search(line)
    if match is None:
        return f'{line}, metadata={{op_name="{op_name}"}}'
    close = match_close(line, match.end() - 1)
    return f'{line[:match.start()]}, metadata={{op_name="{op_name}"}}{line[close + 1:]}'


def _shape_text(tensor: LayoutTensor, layout: Layout) -> str:
    dims = ",".join(str(d) for d in tensor.dims)
    return f"{tensor.element_type}[{dims}]{{{','.join(str(d) for d in layout)}}}"


def _constraint_line(name: str, operand: str, tensor: LayoutTensor, layout: Layout,
                     sigil: str, root: bool) -> str:
    shape = _shape_text(tensor, layout)
    prefix = "ROOT " if root else ""
    return (f"  {prefix}{sigil}{name} = {shape} custom-call({sigil}{operand}), "
            f'custom_call_target="{CONSTRAINT_TARGET}", operand_layout_constraints={{{shape}}}, '
            f'metadata={{op_name="{constraint_tag(name)}"}}')


def _replace_operand(line: str, index: int, new_name: str, sigil: str) -> str:
    eq = line.index(" = ")
    rest_start = eq + 3
    rest = line[rest_start:]
    offset = rest_start + (match_close(rest, 0) + 1 if rest.startswith("(") else 0)
    paren = line.index("(", offset)
    close = match_close(line, paren)
    operands = split_top_level(line[paren + 1:close])
    # The operand's shape prefix (dump style) is dropped: its layout is no longer the old one.
    operands[index] = f"{sigil}{new_name}"
    return line[:paren + 1] + ", ".join(operands) + line[close:]


def _instruction_name(line: str) -> tuple[str, str, bool] | None:
    """(name, sigil, is_root) of an instruction line, or None for other lines."""
    stripped = line.strip()
    if " = " not in stripped:
        return None
    is_root = stripped.startswith("ROOT ")
    if is_root:
        stripped = stripped[5:]
    name = stripped[:stripped.index(" = ")].strip()
    sigil = "%" if name.startswith("%") else ""
    return name.lstrip("%"), sigil, is_root


def apply_layout_config(text: str, space: LayoutSpace, config: LayoutConfig) -> str:
    """HLO text with ``config`` applied; the default config returns ``text`` unchanged."""
    if config.is_default:
        return text
    tensors = space.by_key()
    wanted: dict[tuple[str, str], list[tuple[LayoutTensor, Layout]]] = {}
    for key, layout in config.layouts:
        tensor = tensors.get(key)
        if tensor is None:
            raise ConfigError(f"config sets {key} which is not a configurable tensor")
        if sorted(layout) != list(range(tensor.rank)):
            raise ConfigError(f"{tensor.node} slot {tensor.slot}: {layout} is not a "
                              f"permutation of {tensor.rank} dims")
        wanted.setdefault((tensor.computation, tensor.node), []).append((tensor, layout))
    # Operands read by an input constraint get a source tag, unless they are constraints.
    constrained_outputs = {(t.computation, t.node) for todo in wanted.values()
                           for t, _ in todo if t.slot == 0}
    sources = {(t.computation, t.operand) for todo in wanted.values() for t, _ in todo
               if t.slot != 0 and (t.computation, t.operand) not in constrained_outputs}
    sources |= set(wanted)  # the constrained nodes themselves: what they read and write
    sources |= bitcast_sources(space, config)
    out: list[str] = []
    computation = None
    applied = 0
    for line in text.splitlines():
        header = computation_header(line) if not line.startswith(" ") else None
        if header is not None:
            computation = header[0]
        parsed = _instruction_name(line) if computation is not None else None
        if computation is None or parsed is None:
            out.append(line)
            continue
        if (computation, parsed[0]) in sources:
            line = _with_op_name(line, source_tag(parsed[0]))
        todo = wanted.get((computation, parsed[0]))
        if not todo:
            out.append(line)
            continue
        name, sigil, is_root = parsed
        node_line = line
        for tensor, layout in sorted(todo, key=lambda item: item[0].slot):
            if tensor.slot == 0:
                continue
            new = f"{name}.tgt_in{tensor.slot}"
            out.append(_constraint_line(new, tensor.operand or "", tensor, layout, sigil, False))
            node_line = _replace_operand(node_line, tensor.slot - 1, new, sigil)
            applied += 1
        output = [(t, lay) for t, lay in todo if t.slot == 0]
        if output:
            tensor, layout = output[0]
            renamed = f"{name}.tgt_out"
            node_line = node_line.replace(f"{sigil}{name} = ", f"{sigil}{renamed} = ", 1)
            node_line = node_line.replace("ROOT ", "", 1) if is_root else node_line
            node_line = _with_op_name(node_line, source_tag(renamed))
            out.append(node_line)
            out.append(_constraint_line(name, renamed, tensor, layout, sigil, is_root))
            applied += 1
        else:
            out.append(node_line)
    if applied != len(config.layouts):
        raise ConfigError(f"applied {applied} of {len(config.layouts)} layout constraints: "
                          "the HLO text does not match the module the config was made for")
    return "\n".join(out) + "\n"
