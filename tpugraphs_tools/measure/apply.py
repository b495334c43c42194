"""Apply a layout config to HLO text: ``LayoutConstraint`` custom-calls the compiler honours.

For an output slot the node is renamed ``<name>.tgt_out`` and a custom-call named ``<name>``
takes its place, so every user reads the constrained value without being rewritten. For an
input slot a custom-call on the operand is inserted before the node and the node's operand is
rewired. The wanted layout is written both on the custom-call's result shape and in
``operand_layout_constraints``: XLA's HLO→MLIR conversion drops the result layout when the
latter is missing, and the constraint is then silently ignored (measured; see
docs/layout-collection.md).
"""

from __future__ import annotations

from tpugraphs_tools.configs.layout import Layout, LayoutConfig, LayoutSpace, LayoutTensor
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.hlo.text import computation_header, match_close, split_top_level

CONSTRAINT_TARGET = "LayoutConstraint"


def _shape_text(tensor: LayoutTensor, layout: Layout) -> str:
    dims = ",".join(str(d) for d in tensor.dims)
    return f"{tensor.element_type}[{dims}]{{{','.join(str(d) for d in layout)}}}"


def _constraint_line(name: str, operand: str, tensor: LayoutTensor, layout: Layout,
                     sigil: str, root: bool) -> str:
    shape = _shape_text(tensor, layout)
    prefix = "ROOT " if root else ""
    return (f"  {prefix}{sigil}{name} = {shape} custom-call({sigil}{operand}), "
            f'custom_call_target="{CONSTRAINT_TARGET}", operand_layout_constraints={{{shape}}}')


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
    out: list[str] = []
    computation = None
    applied = 0
    for line in text.splitlines():
        header = computation_header(line) if not line.startswith(" ") else None
        if header is not None:
            computation = header[0]
        parsed = _instruction_name(line) if computation is not None else None
        todo = wanted.get((computation, parsed[0])) if parsed else None
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
            out.append(node_line)
            out.append(_constraint_line(name, renamed, tensor, layout, sigil, is_root))
            applied += 1
        else:
            out.append(node_line)
    if applied != len(config.layouts):
        raise ConfigError(f"applied {applied} of {len(config.layouts)} layout constraints: "
                          "the HLO text does not match the module the config was made for")
    return "\n".join(out) + "\n"
