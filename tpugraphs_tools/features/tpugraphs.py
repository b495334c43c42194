"""The TpuGraphs featurizer: an HLO module → the exact arrays of a TpuGraphs npz.

Semantics follow tpu_graphs' ``FeaturizeHloInstruction`` / ``HloEncoder`` field by field (see
docs/features.md): nodes are every instruction of every computation in post order, edge
``[u, v]`` means u consumes v (operands de-duplicated) or v is the root of a computation u calls,
edges sorted lexicographically, products of empty lists are 1.

Columns common to every instruction are gathered in one Python pass into flat lists and written
with a few numpy assignments; the rarer per-op groups (window, convolution, slice, pad...) are
filled only for the instructions that carry them. That keeps a 100k-instruction module well
under a second (bench/bench_featurize.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpugraphs_tools.features.opcodes import CONFIGURABLE_OPCODES, opcode_id
from tpugraphs_tools.hlo import attributes as A
from tpugraphs_tools.hlo.module import Instruction, Module

NUM_NODE_FEATURES = 140
# Order of the element-type one-hot (features 2..20), as in tpu_graphs' PRIMITIVE_TYPE_FEATURES.
ELEMENT_TYPES = ("invalid", "pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
                 "f16", "f32", "f64", "bf16", "c64", "c128", "tuple", "opaque", "token")
_TYPE_COLUMN = {name: 2 + i for i, name in enumerate(ELEMENT_TYPES)}
# Columns that hold the product of a possibly empty list: 1 when the list is empty.
_EMPTY_PRODUCT_COLUMNS = np.array([44, 52, 60, 68, 76, 84, 112, 116, 120, 124, 128, 132])
_WINDOW_BASE = 37
_SPLIT_MARKERS = ("cluster", "while", "cond")


@dataclass
class Graph:
    """TpuGraphs arrays of one module plus the node names that link configs back to HLO."""

    node_feat: np.ndarray        # float32 [n, 140]
    node_opcode: np.ndarray      # uint8 [n]
    edge_index: np.ndarray       # int64 [m, 2]
    node_splits: np.ndarray      # int64 [s]
    node_config_ids: np.ndarray  # int64 [nc]
    node_names: list[str]

    @property
    def num_nodes(self) -> int:
        return int(self.node_opcode.shape[0])

    def arrays(self) -> dict[str, np.ndarray]:
        """The npz keys shared by both TpuGraphs collections."""
        return {
            "node_feat": self.node_feat,
            "node_opcode": self.node_opcode,
            "edge_index": self.edge_index,
            "node_splits": self.node_splits,
            "node_config_ids": self.node_config_ids,
        }


def _seq(row: np.ndarray, start: int, values: list[int] | tuple[int, ...], lead: int) -> None:
    """Write ``lead`` leading values then sum and product (TpuGraphs' fixed numeric sequence)."""
    for i, v in enumerate(values[:lead]):
        row[start + i] = v
    row[start + lead] = sum(values)
    row[start + lead + 1] = float(np.prod(values, dtype=np.float64)) if values else 1.0


def _window_features(row: np.ndarray, dims: tuple[A.WindowDim, ...]) -> None:
    groups = (
        [d.size for d in dims], [d.stride for d in dims], [d.padding_low for d in dims],
        [d.padding_high for d in dims], [d.window_dilation for d in dims],
        [d.base_dilation for d in dims],
    )
    for g, values in enumerate(groups):
        _seq(row, _WINDOW_BASE + 8 * g, values, 6)
    rev = [d.window_reversal for d in dims]
    for i, r in enumerate(rev[:6]):
        row[85 + i] = float(r)
    row[91] = sum(rev)
    row[92] = len(rev) - sum(rev)


def _conv_features(row: np.ndarray, inst: Instruction) -> None:
    dims = A.conv_dims(inst.attrs.get("dim_labels"))
    if dims is not None:
        row[93], row[94] = dims.input_batch, dims.input_feature
        row[95:95 + min(4, len(dims.input_spatial))] = dims.input_spatial[:4]
        row[99], row[100] = dims.kernel_input_feature, dims.kernel_output_feature
        row[101:101 + min(4, len(dims.kernel_spatial))] = dims.kernel_spatial[:4]
        row[105], row[106] = dims.output_batch, dims.output_feature
    row[107] = int(inst.attrs.get("feature_group_count", 1))
    row[108] = int(inst.attrs.get("batch_group_count", 1))


def _sparse_features(row: np.ndarray, inst: Instruction) -> None:
    """Per-op attribute groups; only called for instructions that carry one of them."""
    attrs = inst.attrs
    if "window" in attrs:
        _window_features(row, A.window(attrs["window"]))
    if inst.opcode == "convolution":
        _conv_features(row, inst)
    if "slice" in attrs:
        sl = A.slice_dims(attrs["slice"])
        _seq(row, 109, [s[0] for s in sl], 2)
        _seq(row, 113, [s[2] for s in sl], 2)
        _seq(row, 117, [s[1] for s in sl], 2)
    if "dynamic_slice_sizes" in attrs:
        _seq(row, 121, list(A.int_list(attrs["dynamic_slice_sizes"])), 2)
    if inst.opcode == "pad" and "padding" in attrs:
        pads = A.padding(attrs["padding"])
        _seq(row, 125, [p[0] for p in pads], 2)
        _seq(row, 129, [p[1] for p in pads], 2)
    if A.is_true(attrs.get("is_stable")):
        row[133] = 1.0


_SPARSE_KEYS = frozenset({"window", "slice", "dynamic_slice_sizes", "padding", "is_stable"})


def featurize(module: Module) -> Graph:
    """Featurize every instruction of ``module`` into TpuGraphs arrays."""
    n = module.instruction_count
    feat = np.zeros((n, NUM_NODE_FEATURES), dtype=np.float32)
    feat[:, _EMPTY_PRODUCT_COLUMNS] = 1.0
    opcodes = np.empty(n, dtype=np.uint8)
    names: list[str] = []
    type_cols = np.empty(n, dtype=np.int64)
    # is_root | shape dims x6, sum, product | tuple size | parameter number | dimensions x6 | m2m x6
    dense_rows: list[tuple[int, ...]] = []
    src: list[int] = []
    dst: list[int] = []
    splits = [0]
    sparse_rows: list[tuple[int, Instruction]] = []
    root_index: dict[str, int] = {}
    index = 0
    for comp in module.computations:
        local: dict[str, int] = {}
        for inst in comp.instructions:
            local[inst.name] = index
            index += 1
        for inst in comp.instructions:
            u = local[inst.name]
            opcodes[u] = opcode_id(inst.opcode)
            names.append(inst.name)
            shape = inst.shape
            type_cols[u] = _TYPE_COLUMN.get(shape.element_type, -1)
            dims = shape.dims
            m2m = shape.minor_to_major or ()
            op_dims = A.int_list(inst.attrs.get("dimensions") or inst.attrs.get("iota_dimension"))
            prod = 1
            for d in dims:
                prod *= d
            dense_rows.append((
                inst.is_root, *(dims[:6] + (0,) * (6 - min(6, len(dims)))), sum(dims), prod,
                len(shape.tuple_shapes), inst.parameter_number,
                *(op_dims[:6] + (0,) * (6 - min(6, len(op_dims)))),
                *(m2m[:6] + (0,) * (6 - min(6, len(m2m)))),
            ))
            if inst.opcode == "convolution" or not _SPARSE_KEYS.isdisjoint(inst.attrs):
                sparse_rows.append((u, inst))
            for op in dict.fromkeys(inst.operands):
                v = local.get(op)
                if v is not None:
                    src.append(u)
                    dst.append(v)
            for callee in inst.called_computations:
                src.append(u)
                dst.append(root_index[callee])
        root_index[comp.name] = local[comp.root.name]
        if any(marker in comp.name for marker in _SPLIT_MARKERS):
            splits.append(index)
    if splits[-1] < n:
        splits.append(n)

    dense = np.array(dense_rows, dtype=np.float64).reshape(n, 23)
    feat[:, 0] = dense[:, 0]
    feat[:, 21:31] = dense[:, 1:11]
    feat[:, 31:37] = dense[:, 11:17]
    feat[:, 134:140] = dense[:, 17:23]
    has_type = type_cols >= 0
    feat[np.nonzero(has_type)[0], type_cols[has_type]] = 1.0
    for u, inst in sparse_rows:
        _sparse_features(feat[u], inst)

    edges = np.array([src, dst], dtype=np.int64).T.reshape(-1, 2)
    if len(edges):
        edges = np.unique(edges, axis=0)
    config_ids = np.array(
        [i for i, (_, inst) in enumerate(module.instructions())
         if inst.opcode in CONFIGURABLE_OPCODES], dtype=np.int64)
    return Graph(feat, opcodes, edges, np.array(splits, dtype=np.int64), config_ids, names)
