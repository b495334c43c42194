"""Kernel extraction: each fusion / heavy op of an optimized module as its own HLO module.

TpuGraphs' tile collection is per kernel, so every fusion of the optimized entry (and every
standalone heavy op the backend runs as one kernel: convolution, dot, custom-call,
reduce-window...) becomes a module whose entry parameters are the kernel's operands and whose
body is the fused computation (nested fusions inlined), plus every computation it calls. Entry
constants that feed a kernel are copied in rather than made parameters, so the kernel computes
what it did in the program (a ``-inf`` reduce-window init stays ``-inf``). Modules are printed
from the parsed module without metadata (its stack-frame ids point into tables the kernel does
not carry) and re-parsed, so every kernel is known to be parseable before it is measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

import tpugraphs_tools.hlo.attributes as A
from tpugraphs_tools.errors import HloParseError
from tpugraphs_tools.hlo.module import Computation, Instruction, Module, Shape
from tpugraphs_tools.hlo.parse import parse_hlo_text
from tpugraphs_tools.hlo.sources import fingerprint

# Standalone entry ops that run as one kernel of their own (fusions always do).
HEAVY_OPCODES = frozenset({
    "convolution", "dot", "custom-call", "reduce-window", "reduce", "select-and-scatter",
    "sort", "scatter", "gather", "fft", "triangular-solve", "cholesky",
})
_DROPPED_ATTRS = frozenset({"metadata", "statistics_viz", "origin"})
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class Kernel:
    """One extracted kernel: standalone HLO text, its parsed module and where it came from."""

    name: str                  # the fusion / op name in the optimized module
    opcode: str                # "fusion" or the heavy op's opcode
    kind: str | None           # fusion kind (kLoop, kCustom...) or None
    text: str                  # the kernel as it is in the program (stored, featurized)
    module: Module
    measure_text: str          # what is compiled and timed (see ``compilable_text``)
    wrapped_text: str | None   # fusions only: the fusion instruction itself as the entry root
    fingerprint: str
    label: str | None = None   # backend fusion label (``__ynn_fusion``, ``__triton_gemm``...)
    instances: list[str] = field(default_factory=list)  # every parent instruction it stands for


@dataclass
class Extraction:
    kernels: list[Kernel]
    skipped: dict[str, str]    # parent instruction -> why it was not extracted
    # distinct kernels ``max_kernels`` left out (the cheapest by ``kernel_cost``), in order
    left_out: list[str] = field(default_factory=list)


def _instruction_text(inst: Instruction, operands: list[str] | None = None,
                      root: bool | None = None) -> str:
    """One instruction line, printed from the parsed form (operands optionally renamed)."""
    is_root = inst.is_root if root is None else root
    if inst.opcode == "parameter":
        args = str(inst.parameter_number)
    elif inst.opcode == "constant":
        args = inst.attrs.get("literal", "")
    else:
        args = ", ".join(operands if operands is not None else inst.operands)
    attrs = [f"{k}={v}" if v else k for k, v in inst.attrs.items()
             if k not in _DROPPED_ATTRS and not (inst.opcode == "constant" and k == "literal")]
    tail = (", " + ", ".join(attrs)) if attrs else ""
    prefix = "ROOT " if is_root else ""
    return f"  {prefix}{inst.name} = {inst.shape.to_text()} {inst.opcode}({args}){tail}"


def _computation_text(comp: Computation) -> str:
    lines = [f"{comp.name} {{", *(_instruction_text(inst) for inst in comp.instructions), "}"]
    return "\n".join(lines)


def _row_major(rank: int) -> tuple[int, ...]:
    return tuple(range(rank - 1, -1, -1))


def _bitcast_lines(inst: Instruction, operand: Shape) -> list[str]:
    """A bitcast as transpose → reshape → transpose in physical (major-to-minor) order.

    XLA's HLO→MLIR route drops layouts but keeps bitcasts, which then fail to compile
    ("layout minor_to_major field contains 2 elements, but shape has 1 dimensions"); this
    logical form computes the same values whatever layouts the compiler picks.
    """
    out = inst.shape
    m2m_in = operand.minor_to_major or _row_major(operand.rank)
    m2m_out = out.minor_to_major or _row_major(out.rank)
    perm_in = tuple(reversed(m2m_in))
    phys_out = tuple(reversed(m2m_out))
    lines: list[str] = []
    current = inst.operands[0]
    etype = out.element_type
    if perm_in != tuple(range(operand.rank)):
        dims = tuple(operand.dims[p] for p in perm_in)
        lines.append(f"  {inst.name}.tgt_t0 = {Shape(etype, dims).to_text()} "
                     f"transpose({current}), dimensions={{{','.join(map(str, perm_in))}}}")
        current = f"{inst.name}.tgt_t0"
    restore = tuple(phys_out.index(j) for j in range(out.rank))
    final = restore == tuple(range(out.rank))
    name = inst.name if final else f"{inst.name}.tgt_r"
    root = "ROOT " if inst.is_root and final else ""
    dims = tuple(out.dims[p] for p in phys_out)
    lines.append(f"  {root}{name} = {Shape(etype, dims).to_text()} reshape({current})")
    if not final:
        root = "ROOT " if inst.is_root else ""
        lines.append(f"  {root}{inst.name} = {Shape(etype, out.dims).to_text()} "
                     f"transpose({name}), dimensions={{{','.join(map(str, restore))}}}")
    return lines


def compilable_text(module: Module) -> str:
    """``module`` printed for measuring: bitcasts become their logical equivalent.

    Layouts in the text are dropped on the way to the compiler (see compiler/compile.py), so
    only bitcasts, whose meaning depends on layouts, need rewriting.
    """
    parts = [f"HloModule {module.name}", ""]
    for comp in module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        lines = [f"{'ENTRY ' if comp.is_entry else ''}{comp.name} {{"]
        for inst in comp.instructions:
            if inst.opcode == "bitcast" and inst.operands and not inst.shape.is_tuple \
                    and not shapes[inst.operands[0]].is_tuple:
                lines += _bitcast_lines(inst, shapes[inst.operands[0]])
            else:
                lines.append(_instruction_text(inst))
        parts += [*lines, "}", ""]
    return "\n".join(parts)


def _callees(module: Module, roots: list[str]) -> list[Computation]:
    """Computations reachable from ``roots`` (callees first, as the text format wants)."""
    wanted: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in wanted:
            continue
        wanted.add(name)
        stack.extend(c for inst in module.computation(name).instructions
                     for c in inst.called_computations)
    return [c for c in module.computations if c.name in wanted]


def _is_constant_literal(inst: Instruction) -> bool:
    """An entry constant small enough to copy (elided literals ``{...}`` cannot be)."""
    return inst.opcode == "constant" and "..." not in inst.attrs.get("literal", "...")


def _flat_body(module: Module, comp: Computation, args: list[str] | None = None,
               prefix: str = "", root_name: str | None = None) -> list[Instruction]:
    """``comp``'s instructions with nested fusions inlined (XLA:GPU nests the operand fusions
    of a Triton GEMM); parameters become ``args`` when given (a nested call)."""
    rename: dict[str, str] = {}
    out: list[Instruction] = []
    for inst in comp.instructions:
        if args is not None and inst.opcode == "parameter":
            if inst.is_root:
                raise ValueError(f"fusion {root_name} only forwards a parameter")
            rename[inst.name] = args[inst.parameter_number]
            continue
        name = root_name if inst.is_root and root_name else prefix + inst.name
        rename[inst.name] = name
        operands = [rename.get(o, o) for o in inst.operands]
        if inst.opcode == "fusion":
            callee = module.computation(inst.called_computations[0])
            nested = _flat_body(module, callee, operands, f"{name}.", name)
            if args is None and inst.is_root:
                nested = [replace(i, is_root=i.name == name) for i in nested]
            out += nested
            continue
        out.append(replace(inst, name=name, operands=operands,
                           is_root=inst.is_root and args is None))
    out.sort(key=lambda i: i.is_root)  # the root last, as a nested root may come early
    return out


def _fusion_entry(body: list[Instruction], operands: list[Instruction | None]) -> list[str]:
    """The fused body as entry lines; parameters fed by entry constants become those constants."""
    renumber: dict[int, int] = {}
    for i, producer in enumerate(operands):
        if producer is None:
            renumber[i] = len(renumber)
    lines = []
    for inst in body:
        if inst.opcode == "parameter":
            producer = operands[inst.parameter_number]
            if producer is not None:
                const = Instruction(inst.name, "constant", producer.shape, [],
                                    {"literal": producer.attrs["literal"]}, inst.is_root)
                lines.append(_instruction_text(const))
                continue
            param = Instruction(inst.name, "parameter", inst.shape, [], {}, inst.is_root,
                                renumber[inst.parameter_number])
            lines.append(_instruction_text(param))
            continue
        lines.append(_instruction_text(inst))
    return lines


def _op_entry(inst: Instruction, operands: list[Instruction | None],
              shapes: list[Shape]) -> list[str]:
    """A standalone op with one parameter per distinct non-constant operand."""
    lines: list[str] = []
    names: dict[str, str] = {}
    renamed: list[str] = []
    for op_name, producer, shape in zip(inst.operands, operands, shapes, strict=True):
        if op_name not in names:
            names[op_name] = f"arg{len(names)}"
            if producer is not None:
                const = Instruction(names[op_name], "constant", shape, [],
                                    {"literal": producer.attrs["literal"]})
                lines.append(_instruction_text(const))
            else:
                n = sum(1 for line in lines if " parameter(" in line)
                lines.append(_instruction_text(Instruction(names[op_name], "parameter", shape,
                                                           [], {}, False, n)))
        renamed.append(names[op_name])
    lines.append(_instruction_text(inst, operands=renamed, root=True))
    return lines


def _fusion_label(inst: Instruction) -> str | None:
    config = inst.attrs.get("backend_config", "")
    m = re.search(r'"kind"\s*:\s*"([^"]+)"', config)
    return m.group(1) if m else None


def kernel_text(module: Module, inst: Instruction) -> str:
    """Standalone HLO module text of one entry fusion or heavy op of ``module``."""
    by_name = {i.name: i for i in module.entry.instructions}
    producers = [by_name.get(op) for op in inst.operands]
    if any(p is None for p in producers):
        missing = inst.operands[producers.index(None)]
        raise ValueError(f"operand {missing} is not an entry instruction")
    if any(p.shape.is_tuple for p in producers if p is not None):
        raise ValueError("tuple-shaped operand (tgt feeds array parameters only)")
    consts = [p if p is not None and _is_constant_literal(p) else None for p in producers]
    name = _NAME_CHARS.sub("_", inst.name).strip("_") or "kernel"
    if inst.opcode == "fusion":
        flat = _flat_body(module, module.computation(inst.called_computations[0]))
        called = [c for i in flat for c in i.called_computations]
        body = _fusion_entry(flat, consts)
    else:
        called = list(inst.called_computations)
        body = _op_entry(inst, consts, [p.shape for p in producers if p is not None])
    parts = [f"HloModule kernel_{name}", ""]
    parts += [_computation_text(c) + "\n" for c in _callees(module, called)]
    parts += [f"ENTRY {name} {{", *body, "}", ""]
    return "\n".join(parts)


def wrapped_kernel_text(module: Module, inst: Instruction) -> str:
    """The fusion kept whole (kind, backend_config) under an entry of parameters.

    Spaces that configure a fusion through its ``backend_config`` (a Triton GEMM tile written
    into ``triton_gemm_config``) need the fusion instruction, not its inlined body.
    """
    by_name = {i.name: i for i in module.entry.instructions}
    name = _NAME_CHARS.sub("_", inst.name).strip("_") or "kernel"
    lines: list[str] = []
    operands: list[str] = []
    seen: dict[str, str] = {}
    for op in inst.operands:
        if op not in seen:
            seen[op] = f"arg{len(seen)}"
            producer = by_name[op]
            lines.append(_instruction_text(Instruction(seen[op], "parameter", producer.shape,
                                                       [], {}, False, len(seen) - 1)))
        operands.append(seen[op])
    lines.append(_instruction_text(inst, operands=operands, root=True))
    parts = [f"HloModule kernel_{name}", ""]
    parts += [_computation_text(c) + "\n" for c in _callees(module, inst.called_computations)]
    parts += [f"ENTRY {name} {{", *lines, "}", ""]
    return "\n".join(parts)


def is_kernel(inst: Instruction) -> bool:
    return inst.opcode == "fusion" or inst.opcode in HEAVY_OPCODES


def kernel_cost(kernel: Module) -> float:
    """Rough multiply-add count, to pick the kernels that matter when the count is capped.

    Convolutions: output elements × window × input features per group; dots: output
    elements × contracted size; every other op: its output elements.
    """
    by_name = {i.name: i for _, i in kernel.instructions()}
    total = 0.0
    for _, inst in kernel.instructions():
        out = float(_elements(inst.shape))
        if inst.opcode == "convolution" and len(inst.operands) == 2:
            rhs = by_name[inst.operands[1]].shape  # window × in-features/group × out-features
            total += out * _elements(rhs) / max(1, _out_features(inst))
        elif inst.opcode == "dot" and inst.operands:
            lhs = by_name[inst.operands[0]].shape
            dims = A.int_list(inst.attrs.get("lhs_contracting_dims"))
            contracted = [lhs.dims[d] for d in dims]
            total += out * float(np.prod(contracted)) if contracted else out
        elif inst.opcode not in ("parameter", "constant"):
            total += out
    return total


def _elements(shape: Shape) -> int:
    if shape.is_tuple:
        return sum(_elements(s) for s in shape.tuple_shapes)
    return int(np.prod(shape.dims)) if shape.dims else 1


def _out_features(inst: Instruction) -> int:
    labels = inst.attrs.get("dim_labels", "")
    out = labels.partition("->")[2]
    return inst.shape.dims[out.index("f")] if "f" in out and not inst.shape.is_tuple else 1


def extract_kernels(module: Module, max_kernels: int | None = None,
                    source: str = "<optimized>") -> Extraction:
    """Every kernel of ``module``'s entry, deduplicated by fingerprint, in program order.

    A kernel seen twice keeps its first parent instruction; the others are listed in
    ``instances``. ``max_kernels`` keeps the costliest distinct kernels (``kernel_cost``),
    still in program order.
    """
    kernels: dict[str, Kernel] = {}
    skipped: dict[str, str] = {}
    for inst in module.entry.instructions:
        if not is_kernel(inst):
            continue
        try:
            text = kernel_text(module, inst)
            kernel_module = parse_hlo_text(text, source=f"{source}:{inst.name}")
        except (ValueError, KeyError, HloParseError) as exc:
            skipped[inst.name] = f"not extracted: {exc}"
            continue
        fp = fingerprint(kernel_module)
        if fp in kernels:
            kernels[fp].instances.append(inst.name)
            continue
        wrapped = wrapped_kernel_text(module, inst) if inst.opcode == "fusion" else None
        kernels[fp] = Kernel(inst.name, inst.opcode, inst.attrs.get("kind"), text, kernel_module,
                             compilable_text(kernel_module), wrapped, fp, _fusion_label(inst),
                             [inst.name])
    chosen = list(kernels.values())
    left_out: list[str] = []
    if max_kernels is not None and len(chosen) > max_kernels:
        keep = sorted(range(len(chosen)), key=lambda i: -kernel_cost(chosen[i].module))
        left_out = [chosen[i].name for i in sorted(keep[max_kernels:])]
        chosen = [chosen[i] for i in sorted(keep[:max_kernels])]
    return Extraction(chosen, skipped, left_out)
