"""Extra node features recomputed from a graph's stored HLO (Kaggle 3rd place).

They live in their own array ``extra_feat`` float32 [n, NUM_EXTRA] next to — never inside —
the TpuGraphs node-feature columns, one row per node in TpuGraphs node order. Columns
(``EXTRA_FEATURES``):

 0-3  dot: number of lhs contracting, rhs contracting, lhs batch, rhs batch dims
 4    dot: product of the lhs contracting dim sizes       5  dot: product of lhs batch dim sizes
 6    dot/conv operand 0 rank,  7-10 its dims 0..3,  11 its element count
 12   dot/conv operand 1 rank, 13-16 its dims 0..3,  17 its element count

Other instructions have zeros.
"""

from __future__ import annotations

import numpy as np

from tpugraphs_tools.hlo import Instruction, Shape, parse_hlo_text
from tpugraphs_tools.hlo import attributes as A

EXTRA_FEATURES: tuple[str, ...] = (
    "dot_lhs_contracting_dims", "dot_rhs_contracting_dims", "dot_lhs_batch_dims",
    "dot_rhs_batch_dims", "dot_contracting_size", "dot_batch_size",
    "operand0_rank", "operand0_dim0", "operand0_dim1", "operand0_dim2", "operand0_dim3",
    "operand0_elements",
    "operand1_rank", "operand1_dim0", "operand1_dim1", "operand1_dim2", "operand1_dim3",
    "operand1_elements",
)
NUM_EXTRA = len(EXTRA_FEATURES)


def _shape_columns(shape: Shape | None) -> list[float]:
    if shape is None or shape.is_tuple:
        return [0.0] * 6
    dims = list(shape.dims[:4]) + [0] * (4 - min(4, len(shape.dims)))
    return [float(len(shape.dims)), *map(float, dims), float(np.prod(shape.dims or (1,)))]


def _dot_columns(inst: Instruction, lhs: Shape | None) -> list[float]:
    attrs = inst.attrs
    lc = A.int_list(attrs.get("lhs_contracting_dims"))
    rc = A.int_list(attrs.get("rhs_contracting_dims"))
    lb = A.int_list(attrs.get("lhs_batch_dims"))
    rb = A.int_list(attrs.get("rhs_batch_dims"))
    dims = lhs.dims if lhs is not None and not lhs.is_tuple else ()
    csize = float(np.prod([dims[d] for d in lc if d < len(dims)] or [1]))
    bsize = float(np.prod([dims[d] for d in lb if d < len(dims)] or [1]))
    return [len(lc), len(rc), len(lb), len(rb), csize, bsize]


def extra_features(hlo_text: str, num_nodes: int | None = None) -> np.ndarray:
    """``extra_feat`` [n, NUM_EXTRA] for the module in ``hlo_text`` (node order = featurizer's)."""
    module = parse_hlo_text(hlo_text)
    rows: list[list[float]] = []
    for comp in module.computations:
        shapes = {inst.name: inst.shape for inst in comp.instructions}
        for inst in comp.instructions:
            if inst.opcode not in ("dot", "convolution"):
                rows.append([0.0] * NUM_EXTRA)
                continue
            ops = [shapes.get(name) for name in inst.operands[:2]] + [None, None]
            dot = _dot_columns(inst, ops[0]) if inst.opcode == "dot" else [0.0] * 6
            rows.append(dot + _shape_columns(ops[0]) + _shape_columns(ops[1]))
    out = np.array(rows, dtype=np.float32).reshape(-1, NUM_EXTRA)
    if num_nodes is not None and out.shape[0] != num_nodes:
        raise ValueError(f"HLO has {out.shape[0]} instructions but the graph {num_nodes} nodes")
    return out
