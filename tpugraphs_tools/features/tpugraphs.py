"""The TpuGraphs featurizer: an HLO module → the exact arrays of a TpuGraphs npz.

Semantics follow tpu_graphs' ``FeaturizeHloInstruction`` / ``HloEncoder`` field by field (see
docs/features.md): nodes are every instruction of every computation in post order, edge
``[u, v]`` means u consumes v (operands de-duplicated) or v is the root of a computation u calls,
edges sorted lexicographically, products of empty lists are 1.

One Python pass maps every instruction to keys (output shape, ``dimensions`` text, per-op
attributes); the feature columns of each distinct key are computed once and gathered with numpy,
and the rarer per-op groups (window, convolution, slice, pad...) are filled only for the
instructions that carry them. That keeps a 100k-instruction module well under a second
(bench/bench_featurize.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tpugraphs_tools.format import CONFIGURABLE_IDS, opcode_id
from tpugraphs_tools.hlo import Instruction, Module, Shape
from tpugraphs_tools.hlo import attributes as A

NUM_NODE_FEATURES = 140
# Order of the element-type one-hot (features 2..20), as in tpu_graphs' PRIMITIVE_TYPE_FEATURES.
ELEMENT_TYPES = ("invalid", "pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
                 "f16", "f32", "f64", "bf16", "c64", "c128", "tuple", "opaque", "token")
_TYPE_COLUMN = {name: 2 + i for i, name in enumerate(ELEMENT_TYPES)}
# Columns that hold the product of a possibly empty list: 1 when the list is empty.
_EMPTY_PRODUCT_COLUMNS = np.array([44, 52, 60, 68, 76, 84, 112, 116, 120, 124, 128, 132])
_WINDOW_BASE = 37
_SPLIT_MARKERS = ("cluster", "while", "cond")
# Instructions whose HloInstructionProto always carries feature/batch group counts (1 unless
# set) and convolution dimension numbers when they have dim_labels: XLA's ToProto of
# HloConvolutionInstruction and HloCustomCallInstruction.
_CONV_LIKE = frozenset({"convolution", "custom-call"})


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
    if inst.opcode in _CONV_LIKE:
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
# Every attribute _sparse_features reads; with the opcode they key its cache.
_SPARSE_ATTRS = ("window", "dim_labels", "feature_group_count", "batch_group_count", "slice",
                 "dynamic_slice_sizes", "padding", "is_stable")
# Columns written only by _sparse_features (window 37 .. is_stable 133).
_SPARSE_COLUMNS = slice(37, 134)


def _shape_row(shape: Shape) -> np.ndarray:
    """A feature row holding one output shape's columns plus the empty-product defaults."""
    row = np.zeros(NUM_NODE_FEATURES, dtype=np.float32)
    row[_EMPTY_PRODUCT_COLUMNS] = 1.0
    col = _TYPE_COLUMN.get(shape.element_type)
    if col is not None:
        row[col] = 1.0
    dims = shape.dims
    row[21:21 + min(6, len(dims))] = dims[:6]
    row[27] = sum(dims)
    row[28] = float(math.prod(dims))
    row[29] = len(shape.tuple_shapes)
    m2m = shape.minor_to_major
    if m2m is None:  # text without a layout: XLA's parser gives the default (row-major)
        m2m = tuple(range(len(dims) - 1, -1, -1))
    row[134:134 + min(6, len(m2m))] = m2m[:6]
    return row


def _dimensions_row(text: str | None) -> np.ndarray:
    """Columns 31-36: the first six entries of ``dimensions`` (or ``iota_dimension``)."""
    values = A.int_list(text)[:6]
    row = np.zeros(6, dtype=np.float32)
    row[:len(values)] = values
    return row


@dataclass
class _ModuleIndex:
    """What one pass over every instruction gathers, in node order: small integer keys into
    tables of the distinct shapes, ``dimensions`` texts and sparse-attribute sets, plus the
    edge endpoints, roots, parameters and splits."""

    names: list[str] = field(default_factory=list)
    opcodes: list[int] = field(default_factory=list)
    shape_keys: list[int] = field(default_factory=list)   # node -> its shape in ``shapes``
    dims_keys: list[int] = field(default_factory=list)    # node -> its text in ``dims_texts``
    shapes: dict[Shape, int] = field(default_factory=dict)
    dims_texts: dict[str | None, int] = field(default_factory=dict)
    # per distinct sparse-attribute key: one instruction that has it, and every node that does
    sparse: dict[tuple[object, ...], tuple[Instruction, list[int]]] = field(default_factory=dict)
    roots: list[int] = field(default_factory=list)
    params: list[int] = field(default_factory=list)
    param_numbers: list[int] = field(default_factory=list)
    src: list[int] = field(default_factory=list)          # edge u (consumer or caller)
    dst: list[int] = field(default_factory=list)          # edge v; -1: names no instruction
    splits: list[int] = field(default_factory=lambda: [0])

    @classmethod
    def of(cls, module: Module) -> _ModuleIndex:
        """The hot loop of ``featurize``: one pass with every table bound to a local name."""
        ix = cls()
        names, opcodes, shape_keys, dims_keys = ix.names, ix.opcodes, ix.shape_keys, ix.dims_keys
        shape_index, dims_index, sparse_index = ix.shapes, ix.dims_texts, ix.sparse
        roots, params, param_numbers = ix.roots, ix.params, ix.param_numbers
        src, dst, splits = ix.src, ix.dst, ix.splits
        root_index: dict[str, int] = {}
        opcode_ids: dict[str, int] = {}
        index = 0
        for comp in module.computations:
            local = {inst.name: index + i for i, inst in enumerate(comp.instructions)}
            get_local = local.get
            for u, inst in enumerate(comp.instructions, start=index):
                opcode = inst.opcode
                op_id = opcode_ids.get(opcode)
                if op_id is None:
                    op_id = opcode_ids[opcode] = opcode_id(opcode)
                opcodes.append(op_id)
                names.append(inst.name)
                key = shape_index.get(inst.shape)
                if key is None:
                    key = shape_index[inst.shape] = len(shape_index)
                shape_keys.append(key)
                attrs = inst.attrs
                dims_text = attrs.get("dimensions") or attrs.get("iota_dimension")
                key = dims_index.get(dims_text)
                if key is None:
                    key = dims_index[dims_text] = len(dims_index)
                dims_keys.append(key)
                if inst.is_root:
                    roots.append(u)
                if inst.parameter_number:
                    params.append(u)
                    param_numbers.append(inst.parameter_number)
                if opcode in _CONV_LIKE or not _SPARSE_KEYS.isdisjoint(attrs):
                    sparse_key = (opcode in _CONV_LIKE, opcode == "pad",
                                  *[attrs.get(k) for k in _SPARSE_ATTRS])
                    entry = sparse_index.get(sparse_key)
                    if entry is None:
                        sparse_index[sparse_key] = (inst, [u])
                    else:
                        entry[1].append(u)
                operands = inst.operands
                if operands:
                    src.extend([u] * len(operands))
                    dst.extend([get_local(op, -1) for op in operands])
                for callee in inst.called_computations:
                    src.append(u)
                    dst.append(root_index[callee])
            index += len(comp.instructions)
            root_index[comp.name] = local[comp.root.name]
            if any(marker in comp.name for marker in _SPLIT_MARKERS):
                splits.append(index)
        if splits[-1] < index:
            splits.append(index)
        return ix


def _node_features(ix: _ModuleIndex) -> np.ndarray:
    """float32 [n, 140]: each distinct key's columns computed once, gathered per node."""
    shape_table = np.stack([_shape_row(s) for s in ix.shapes]) if ix.shapes else \
        np.zeros((0, NUM_NODE_FEATURES), dtype=np.float32)
    feat = shape_table[np.array(ix.shape_keys, dtype=np.int64)]
    dims_table = np.stack([_dimensions_row(t) for t in ix.dims_texts]) if ix.dims_texts else \
        np.zeros((0, 6), dtype=np.float32)
    feat[:, 31:37] = dims_table[np.array(ix.dims_keys, dtype=np.int64)]
    feat[ix.roots, 0] = 1.0
    feat[ix.params, 30] = ix.param_numbers
    for inst, rows in ix.sparse.values():
        row = np.zeros(NUM_NODE_FEATURES, dtype=np.float32)
        row[_EMPTY_PRODUCT_COLUMNS] = 1.0
        _sparse_features(row, inst)
        feat[rows, _SPARSE_COLUMNS] = row[_SPARSE_COLUMNS]
    return feat


def _edge_index(ix: _ModuleIndex, n: int) -> np.ndarray:
    """int64 [m, 2]: the pairs de-duplicated and sorted, operands outside the computation out."""
    edges = np.array([ix.src, ix.dst], dtype=np.int64).T.reshape(-1, 2)
    edges = edges[edges[:, 1] >= 0]  # operands naming no instruction of the computation
    if len(edges):
        # u * n + v orders pairs lexicographically; unique() sorts and de-duplicates them
        codes = np.unique(edges[:, 0] * n + edges[:, 1])
        edges = np.stack([codes // n, codes % n], axis=1)
    return edges


def featurize(module: Module) -> Graph:
    """Featurize every instruction of ``module`` into TpuGraphs arrays.

    One Python pass maps each instruction to small integer keys (its shape, its ``dimensions``
    text, its per-op attributes); the feature rows of each distinct key are computed once and
    gathered with numpy, since real modules repeat a few hundred shapes and windows.
    """
    ix = _ModuleIndex.of(module)
    node_opcode = np.array(ix.opcodes, dtype=np.uint8)
    config_ids = np.flatnonzero(np.isin(node_opcode, list(CONFIGURABLE_IDS))).astype(np.int64)
    return Graph(_node_features(ix), node_opcode, _edge_index(ix, module.instruction_count),
                 np.array(ix.splits, dtype=np.int64), config_ids, ix.names)
