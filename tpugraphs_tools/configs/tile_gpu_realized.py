"""Read the Triton GEMM tile XLA:GPU really compiled, from an optimized (kernel) module.

Two forms exist. The flat ``__triton_gemm`` fusion states every field in its
``triton_gemm_config``. The nested ``__triton_nested_gemm_fusion`` (jax 0.11 on an H200,
``tests/tile/data/gpu_h200/override_32x64.hlo``) spreads them out:

* block_m/block_n: the fusion's ``block_level_fusion_config.output_tiles`` sizes, which follow
  the fusion *root's* dims. The root can be a bitcast or transpose of the dot (a kernel whose
  dot writes [batch, m, n] in layout {1,2,0} is rooted at a [batch, n, m] bitcast), so each
  root dim is mapped back to the dot's m or n dim before a size is read;
* block_k: the dot's own ``backend_config={"sizes":["32"]}`` (older nested forms: the lhs
  operand fusion's tile on the contracting dim);
* num_warps/num_stages/num_ctas: the block config;
* split_k: XLA's split-k turns the contraction into an extra *batch* dim of the dot and sums it
  after the fusion; the size a reduce of the fusion's output over dot batch dims removes is
  split_k (1 when no such reduce follows). A reduce over other dims (a softmax after an
  attention dot) is not split-k.

A field the module does not show is ``None``, never copied from the request.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tpugraphs_tools.hlo import Instruction, Module
from tpugraphs_tools.hlo import attributes as A

FIELDS = ("block_m", "block_n", "block_k", "split_k", "num_stages", "num_warps", "num_ctas")
GEMM_KINDS = ("__triton_gemm", "__triton_nested_gemm_fusion")
# Ops that pass the dot's value on with the same dims (the epilogue of a GEMM fusion).
_SAME_DIMS = frozenset({"convert", "add", "multiply", "subtract", "tanh", "exponential",
                        "maximum", "minimum", "negate", "divide", "logistic", "copy"})


def backend_config(inst: Instruction) -> dict[str, Any]:
    try:
        value = json.loads(inst.attrs.get("backend_config", "{}"))
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def fusion_kind(inst: Instruction) -> str | None:
    return backend_config(inst).get("fusion_backend_config", {}).get("kind")


def _computation(module: Module, name: str) -> tuple[list[Instruction], dict[str, Instruction]]:
    comp = module.computation(name)
    return comp.instructions, {i.name: i for i in comp.instructions}


def dot_of(module: Module, fusion: Instruction
           ) -> tuple[Instruction, dict[str, Instruction], Instruction] | None:
    """(dot, the fused computation's instructions by name, its root) of a GEMM fusion."""
    for name in fusion.called_computations:
        try:
            insts, by_name = _computation(module, name)
        except KeyError:
            continue
        root = next((i for i in insts if i.is_root), insts[-1] if insts else None)
        for inst in insts:
            if inst.opcode == "dot" and root is not None:
                return inst, by_name, root
    return None


def _physical(inst: Instruction) -> list[int] | None:
    """The instruction's dims, major to minor (None without a layout)."""
    m2m = inst.shape.minor_to_major
    if m2m is None or inst.shape.is_tuple:
        return None
    return list(reversed(list(m2m)))


def _path_to_dot(dot: Instruction, by_name: dict[str, Instruction], root: Instruction
                 ) -> list[Instruction] | None:
    """The instructions from ``root`` down to ``dot`` (root first, dot excluded), following
    the operand that leads to the dot; None when the root does not derive from it."""
    path: list[Instruction] = []
    inst = root
    while inst is not dot:
        path.append(inst)
        nxt = [by_name[o] for o in inst.operands if o in by_name and _reaches(by_name[o], dot,
                                                                               by_name, 16)]
        if not nxt or len(path) > 16:
            return None
        inst = nxt[0]
    return path


def _reaches(inst: Instruction, dot: Instruction, by_name: dict[str, Instruction],
             depth: int) -> bool:
    if inst is dot:
        return True
    return depth > 0 and any(_reaches(by_name[o], dot, by_name, depth - 1)
                             for o in inst.operands if o in by_name)


def _root_to_dot_dims(dot: Instruction, by_name: dict[str, Instruction], root: Instruction
                      ) -> list[int] | None:
    """For each dim of ``root``, the dot output dim it holds; None where it cannot be told."""
    chain = _path_to_dot(dot, by_name, root)
    if chain is None:
        return None
    mapping = list(range(len(dot.shape.dims)))  # dims of the current value -> dot dims
    below = dot
    for step in reversed(chain):  # from the dot towards the root
        source, below = below, step
        if step.opcode in _SAME_DIMS and list(step.shape.dims) == list(source.shape.dims):
            continue
        if step.opcode == "transpose":
            perm = A.int_list(step.attrs.get("dimensions"))
            mapping = [mapping[p] for p in perm]
        elif step.opcode == "bitcast" and sorted(step.shape.dims) == sorted(source.shape.dims):
            src_phys, dst_phys = _physical(source), _physical(step)
            if src_phys is None or dst_phys is None:
                return None
            if [source.shape.dims[d] for d in src_phys] != [step.shape.dims[d] for d in dst_phys]:
                return None
            new = [0] * len(dst_phys)
            for s, d in zip(src_phys, dst_phys, strict=True):
                new[d] = mapping[s]
            mapping = new
        else:
            return None
    return mapping


def _block_mn(dot: Instruction, by_name: dict[str, Instruction], root: Instruction,
              sizes: list[int]) -> tuple[int | None, int | None]:
    """block_m, block_n from the output tile (sizes follow the root's dims)."""
    batch = len(A.int_list(dot.attrs.get("lhs_batch_dims")))
    rank = len(dot.shape.dims)
    m_dim, n_dim = batch, rank - 1  # dot output: batch..., lhs free (m), rhs free (n)
    mapping = _root_to_dot_dims(dot, by_name, root)
    if mapping is None or len(mapping) != len(sizes) or rank - batch != 2:
        return (sizes[-2], sizes[-1]) if len(sizes) >= 2 else (None, None)
    got = {d: s for d, s in zip(mapping, sizes, strict=True)}
    return got.get(m_dim), got.get(n_dim)


def _block_k(dot: Instruction, by_name: dict[str, Instruction]) -> int | None:
    """The dot's own ``sizes`` (jax 0.11), else the lhs operand fusion's contracting tile."""
    sizes = backend_config(dot).get("sizes")
    if isinstance(sizes, list) and len(sizes) == 1:
        return int(sizes[0])
    lhs = by_name.get(dot.operands[0]) if dot.operands else None
    contracting = A.int_list(dot.attrs.get("lhs_contracting_dims"))
    if lhs is None or lhs.opcode != "fusion" or len(contracting) != 1:
        return None
    tiles = backend_config(lhs).get("fusion_backend_config", {}).get(
        "block_level_fusion_config", {}).get("output_tiles") or []
    tile_sizes = [int(v) for v in tiles[0].get("sizes", [])] if tiles else []
    return tile_sizes[contracting[0]] if contracting[0] < len(tile_sizes) else None


def _reduces_over(module: Module, user: Instruction, operand_index: int
                  ) -> tuple[int, ...] | None:
    """The dims a reduce of ``user``'s operand ``operand_index`` removes: a bare reduce, or
    one inside a fusion reading that parameter (directly or through convert/copy)."""
    if user.opcode == "reduce":
        return A.int_list(user.attrs.get("dimensions")) if operand_index == 0 else None
    if user.opcode != "fusion" or not user.called_computations:
        return None
    insts, by_name = _computation(module, user.called_computations[0])
    param = next((i for i in insts if i.opcode == "parameter"
                  and i.parameter_number == operand_index), None)
    if param is None:
        return None
    for inst in insts:
        if inst.opcode != "reduce" or not inst.operands:
            continue
        src = by_name.get(inst.operands[0])
        while src is not None and src.opcode in ("convert", "copy") and src.operands:
            src = by_name.get(src.operands[0])
        if src is param:
            return A.int_list(inst.attrs.get("dimensions"))
    return None


def _split_k(module: Module, fusion: Instruction, dot: Instruction, by_name: dict[str, Instruction],
             root: Instruction) -> int:
    batch = set(range(len(A.int_list(dot.attrs.get("lhs_batch_dims")))))
    mapping = _root_to_dot_dims(dot, by_name, root)
    for comp in module.computations:
        if not any(i is fusion for i in comp.instructions):
            continue
        for user in comp.instructions:
            for index, operand in enumerate(user.operands):
                if operand != fusion.name:
                    continue
                dims = _reduces_over(module, user, index)
                if not dims or mapping is None:
                    continue
                if all(mapping[d] in batch for d in dims if d < len(mapping)):
                    return math.prod(fusion.shape.dims[d] for d in dims)
    return 1


def read_tile(module: Module, fusion: Instruction) -> dict[str, int | None] | None:
    """Every tile field of one GEMM fusion as the module shows it (None: unobserved); None
    when ``fusion`` holds no dot (a nested operand fusion)."""
    fbc = backend_config(fusion).get("fusion_backend_config", {})
    found = dot_of(module, fusion)
    if found is None:
        return None
    if "triton_gemm_config" in fbc:
        got = {k: int(v) for k, v in fbc["triton_gemm_config"].items() if k in FIELDS}
        return {f: got.get(f) for f in FIELDS}
    dot, by_name, root = found
    block = fbc.get("block_level_fusion_config") or {}
    tiles = block.get("output_tiles") or []
    sizes = [int(v) for v in tiles[0].get("sizes", [])] if tiles else []
    out: dict[str, int | None] = dict.fromkeys(FIELDS)
    if sizes:
        out["block_m"], out["block_n"] = _block_mn(dot, by_name, root, sizes)
    for k in ("num_warps", "num_stages", "num_ctas"):
        if k in block:
            out[k] = int(block[k])
    out["block_k"] = _block_k(dot, by_name)
    out["split_k"] = _split_k(module, fusion, dot, by_name, root)
    return out


def gemm_fusions(module: Module) -> list[Instruction]:
    """The module's GEMM fusions that hold a dot, in order."""
    return [inst for _, inst in module.instructions()
            if inst.opcode == "fusion" and fusion_kind(inst) in GEMM_KINDS
            and dot_of(module, inst) is not None]
