"""Spot checks of the 140 TpuGraphs node features, edges, splits and configurable nodes against
values derived by hand from the reference tables (tpugraphs_node_features.csv, opcodes.csv).

``spot_checks.hlo`` is a hand-written module that XLA compiles (shapes are consistent); every
expected row below was worked out from its text, not from the featurizer.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tpugraphs_tools.configs import (
    NUM_LAYOUT_FEATURES,
    NUM_TILE_FEATURES,
    SLOTS,
    LayoutConfig,
    bounds_features,
)
from tpugraphs_tools.features import NUM_NODE_FEATURES, featurize
from tpugraphs_tools.features.tpugraphs import ELEMENT_TYPES, Graph
from tpugraphs_tools.format import OPCODE_NAMES
from tpugraphs_tools.hlo import parse_hlo_text

HERE = Path(__file__).resolve().parent
# The TpuGraphs reference tables (tests/format/data/reference/README.md says where from).
REFERENCE = Path(__file__).resolve().parents[1] / "format" / "data" / "reference"

# Product-of-a-list columns: 1 when the list is empty (no window / not a slice / no padding).
PRODUCT_COLUMNS = (44, 52, 60, 68, 76, 84, 112, 116, 120, 124, 128, 132)
WINDOW = range(37, 93)
CONV = range(93, 107)
SLICE = range(109, 121)
DYNAMIC_SLICE = range(121, 125)
PAD = range(125, 133)


def default_row() -> np.ndarray:
    row = np.zeros(NUM_NODE_FEATURES, dtype=np.float32)
    row[list(PRODUCT_COLUMNS)] = 1
    return row


def seq(start: int, *values: int) -> dict[int, float]:
    return {start + i: v for i, v in enumerate(values)}


# Non-default features of each checked node of spot_checks.hlo, by feature index.
EXPECTED: dict[str, dict[int, float]] = {
    # 3x3 stride-2 NHWC convolution f32[1,4,4,8]{3,2,1,0}
    "conv": {
        13: 1, **seq(21, 1, 4, 4, 8), 27: 17, 28: 128,
        **seq(37, 3, 3), 43: 6, 44: 9,              # window size
        **seq(45, 2, 2), 51: 4, 52: 4,              # stride
        60: 0, 68: 0,                               # padding 0,0: product 0
        **seq(69, 1, 1), 75: 2, 76: 1,              # window dilation
        **seq(77, 1, 1), 83: 2, 84: 1,              # base dilation
        92: 2,                                      # two dims not reversed
        93: 0, 94: 3, 95: 1, 96: 2,                 # b01f
        99: 2, 100: 3, 101: 0, 102: 1,              # 01io
        105: 0, 106: 3,                             # b01f
        107: 1, 108: 1,
        **seq(134, 3, 2, 1, 0),
    },
    # grouped NCHW conv with every window field set
    "gconv": {
        13: 1, **seq(21, 1, 8, 4, 6), 27: 19, 28: 192,
        **seq(37, 2, 3), 43: 5, 44: 6,
        **seq(45, 1, 2), 51: 3, 52: 2,
        **seq(53, 1, 2), 59: 3, 60: 2,              # pad low 1,2
        **seq(61, 0, 1), 67: 1, 68: 0,              # pad high 0,1
        **seq(69, 2, 1), 75: 3, 76: 2,              # rhs_dilate = window dilation
        **seq(77, 1, 2), 83: 3, 84: 2,              # lhs_dilate = base dilation
        85: 1, 86: 0, 91: 1, 92: 1,                 # rhs_reversal=1x0
        93: 0, 94: 1, 95: 2, 96: 3,                 # bf01
        99: 1, 100: 0, 101: 2, 102: 3,              # oi01
        105: 0, 106: 1,
        107: 2, 108: 1,                             # feature_group_count=2
        **seq(134, 3, 2, 1, 0),
    },
    # reduce-window: window features but no convolution numbers or group counts
    "rw": {
        13: 1, **seq(21, 1, 4, 4, 4), 27: 13, 28: 64,
        **seq(37, 1, 3, 3, 1), 43: 8, 44: 9,
        **seq(45, 1, 2, 2, 1), 51: 6, 52: 4,
        60: 0, 68: 0,
        **seq(69, 1, 1, 1, 1), 75: 4, 76: 1,
        **seq(77, 1, 1, 1, 1), 83: 4, 84: 1,
        92: 4,
        **seq(134, 3, 2, 1, 0),
    },
    # slice={[1:5:2], [2:10:3]} of f32[6,10]
    "sl": {
        13: 1, **seq(21, 2, 3), 27: 5, 28: 6,
        **seq(109, 1, 2, 3, 2),                     # start 0,1, sum, product
        **seq(113, 2, 3, 5, 6),                     # stride
        **seq(117, 5, 10, 15, 50),                  # limit
        **seq(134, 1, 0),
    },
    # slice={[1:3], [2:6:2], [3:8:3]}: only two leading dims kept, sums/products over all
    "sl3": {
        13: 1, **seq(21, 2, 2, 2), 27: 6, 28: 8,
        **seq(109, 1, 2, 6, 6), **seq(113, 1, 2, 6, 6), **seq(117, 3, 6, 17, 144),
        **seq(134, 2, 1, 0),
    },
    "pd": {  # padding=1_2x3_4
        13: 1, **seq(21, 5, 10), 27: 15, 28: 50,
        **seq(125, 1, 3, 4, 3), **seq(129, 2, 4, 6, 8),
        **seq(134, 1, 0),
    },
    "pd3": {  # padding=0_1_1x2_0x1_1 (interior padding is no feature)
        13: 1, **seq(21, 4, 4, 4), 27: 12, 28: 64,
        **seq(125, 0, 2, 3, 0), **seq(129, 1, 0, 2, 0),
        **seq(134, 2, 1, 0),
    },
    "ds": {  # dynamic_slice_sizes={2,3,4}
        13: 1, **seq(21, 2, 3, 4), 27: 9, 28: 24,
        **seq(121, 2, 3, 9, 24),
        **seq(134, 2, 1, 0),
    },
    "red": {13: 1, **seq(21, 1, 8), 27: 9, 28: 8, **seq(31, 1, 2), **seq(134, 1, 0)},
    "srt": {13: 1, **seq(21, 16, 8), 27: 24, 28: 128, 133: 1, **seq(134, 1, 0)},
    "tr3": {13: 1, **seq(21, 8, 4, 6), 27: 18, 28: 192, **seq(31, 2, 0, 1),
            **seq(134, 2, 1, 0)},
    "bc": {13: 1, **seq(21, 2, 3, 4), 27: 9, 28: 24, **seq(31, 0, 1), **seq(134, 2, 1, 0)},
    "io": {6: 1, **seq(21, 3, 5), 27: 8, 28: 15, 31: 1, **seq(134, 1, 0)},  # iota_dimension
    "xb": {15: 1, **seq(21, 6, 10), 27: 16, 28: 60, **seq(134, 1, 0)},    # bf16
    "x8": {**seq(21, 6, 10), 27: 16, 28: 60, **seq(134, 1, 0)},           # f8: no one-hot
    "flat": {13: 1, **seq(21, 16, 8), 27: 24, 28: 128, **seq(134, 1, 0)},
    "m": {13: 1, **seq(21, 6, 10), 27: 16, 28: 60, 30: 2, **seq(134, 0, 1)},  # layout {0,1}
    "i": {6: 1, 28: 1, 30: 4},                          # s32[] scalar parameter(4)
    "x2": {13: 1, **seq(21, 1, 4, 5, 6), 27: 16, 28: 120, 30: 5, **seq(134, 3, 2, 1, 0)},
    "out": {0: 1, 18: 1, 28: 1, 29: 13},                # tuple root of the entry
    "lt": {0: 1, 3: 1, 28: 1},                          # pred root of %less
    "fmax": {0: 1, 13: 1, **seq(21, 1, 4, 4, 8), 27: 17, 28: 128, **seq(134, 3, 2, 1, 0)},
    "fp": {13: 1, **seq(21, 1, 4, 4, 8), 27: 17, 28: 128, **seq(134, 3, 2, 1, 0)},
    "zero": {28: 1, 13: 1},
}


@pytest.fixture(scope="module")
def spot() -> Graph:
    return featurize(parse_hlo_text((HERE / "spot_checks.hlo").read_text(), "spot_checks.hlo"))


def row_of(graph: Graph, name: str) -> np.ndarray:
    return graph.node_feat[graph.node_names.index(name)]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_feature_row_matches_hand_derived_values(spot: Graph, name: str) -> None:
    expected = default_row()
    for index, value in EXPECTED[name].items():
        expected[index] = value
    got = row_of(spot, name)
    wrong = {i: (float(got[i]), float(expected[i])) for i in np.flatnonzero(got != expected)}
    assert not wrong, f"{name}: feature index -> (got, expected) {wrong}"


def test_node_order_is_computation_post_order(spot: Graph) -> None:
    assert spot.node_names[:10] == ["a", "b", "s", "l", "r", "lt", "fp", "fz", "fzb", "fmax"]
    assert spot.node_names[10:13] == ["x", "k", "conv"]
    assert spot.node_names[-1] == "out"


def test_is_root_marks_the_root_of_every_computation(spot: Graph) -> None:
    roots = [n for n, v in zip(spot.node_names, spot.node_feat[:, 0], strict=True) if v]
    assert roots == ["s", "lt", "fmax", "out"]


def test_parameter_number(spot: Graph) -> None:
    got = {n: int(v) for n, v in zip(spot.node_names, spot.node_feat[:, 30], strict=True) if v}
    assert got == {"b": 1, "r": 1, "k": 1, "m": 2, "t": 3, "i": 4, "x2": 5, "k2": 6}


def test_tuple_shapes_size_only_for_tuples(spot: Graph) -> None:
    got = {n: int(v) for n, v in zip(spot.node_names, spot.node_feat[:, 29], strict=True) if v}
    assert got == {"out": 13}


def test_group_counts_one_for_convolutions_zero_elsewhere(spot: Graph) -> None:
    got = {n: tuple(r[107:109].tolist()) for n, r in zip(spot.node_names, spot.node_feat,
                                                         strict=True) if r[107] or r[108]}
    assert got == {"conv": (1.0, 1.0), "gconv": (2.0, 1.0)}


@pytest.mark.parametrize(("columns", "owners"), [
    (WINDOW, {"conv", "gconv", "rw"}),
    (CONV, {"conv", "gconv"}),
    (SLICE, {"sl", "sl3"}),
    (DYNAMIC_SLICE, {"ds"}),
    (PAD, {"pd", "pd3"}),
    (range(133, 134), {"srt"}),
])
def test_per_op_groups_keep_empty_defaults_elsewhere(spot: Graph, columns: range,
                                                     owners: set[str]) -> None:
    """Sums and leading values 0, products 1 for every instruction without that attribute."""
    cols = list(columns)
    default = default_row()[cols]
    differ = {n for n, r in zip(spot.node_names, spot.node_feat, strict=True)
              if not np.array_equal(r[cols], default)}
    assert differ == owners


def test_element_type_one_hot_has_at_most_one_bit(spot: Graph) -> None:
    onehot = spot.node_feat[:, 2:21]
    per_node = onehot.sum(axis=1)
    names_without = [n for n, c in zip(spot.node_names, per_node, strict=True) if c == 0]
    assert names_without == ["x8"]  # f8e4m3fn is not in TpuGraphs' type list
    assert set(per_node.tolist()) == {0.0, 1.0}
    assert spot.node_feat[:, 1].max() == 0  # element_size_in_bits is always 0


def test_opcode_ids_follow_the_reference_table(spot: Graph) -> None:
    ids = dict(zip(spot.node_names, spot.node_opcode.tolist(), strict=True))
    # from tpugraphs_opcodes.csv
    assert ids["conv"] == 26 and ids["gconv"] == 26
    assert ids["flat"] == 75  # reshape
    assert ids["relu"] == 41  # fusion
    assert ids["x"] == 63     # parameter
    assert ids["rw"] == 72    # reduce-window
    assert ids["srt"] == 93   # sort
    assert ids["out"] == 100  # tuple
    assert ids["ds"] == 35    # dynamic-slice
    assert ids["pd"] == 62    # pad
    assert ids["sl"] == 92    # slice


def reference_rows(name: str) -> list[dict[str, str]]:
    with open(REFERENCE / name) as f:
        return list(csv.DictReader(f))


def test_opcode_table_equals_reference_csv() -> None:
    rows = reference_rows("tpugraphs_opcodes.csv")
    assert len(rows) == len(OPCODE_NAMES) == 121
    assert all(OPCODE_NAMES[int(r["id"])] == r["name"] for r in rows)


def test_node_feature_columns_are_the_reference_names() -> None:
    """The featurizer's element-type order and the column groups the spot checks above were
    worked out with, read against the names of the reference table."""
    names = [r["name"] for r in reference_rows("tpugraphs_node_features.csv")]
    assert len(names) == NUM_NODE_FEATURES
    types = [n.removeprefix("shape_element_type_is_").removesuffix("_type") for n in names
             if n.startswith("shape_element_type_is_")]
    assert types == list(ELEMENT_TYPES)
    assert names.index("shape_element_type_is_invalid_type") == 2

    def columns(prefix: str) -> list[int]:
        return [i for i, n in enumerate(names) if n.startswith(prefix)]

    assert columns("window_") == list(WINDOW)
    assert columns("convolution_dim_numbers_") == list(CONV)
    assert columns("slice_dims_") == list(SLICE)
    assert columns("dynamic_slice_sizes_") == list(DYNAMIC_SLICE)
    assert columns("padding_config_") == list(PAD)
    assert [i for i in range(WINDOW.start, PAD.stop) if names[i].endswith("_product")] == \
        list(PRODUCT_COLUMNS)


def test_config_feature_columns_are_the_reference_names() -> None:
    rows = reference_rows("tpugraphs_config_features.csv")
    layout = [r["name"] for r in rows if r["collection"] == "layout"]
    rank = NUM_LAYOUT_FEATURES // len(SLOTS)
    assert layout == [f"{slot}_layout_{i}" for slot in SLOTS for i in range(rank)]
    row = LayoutConfig.of({(0, SLOTS.index("kernel")): (1, 0)}).encode(1)[0]
    assert {n: v for n, v in zip(layout, row.tolist(), strict=True) if v != -1} == \
        {"kernel_layout_0": 1, "kernel_layout_1": 0}
    tile = [r["name"] for r in rows if r["collection"] == "tile"]
    feat = dict(zip(tile, bounds_features((2, 3), (5,), (7, 11, 13)).tolist(), strict=True))
    assert len(tile) == NUM_TILE_FEATURES
    assert {n: v for n, v in feat.items() if v} == {
        "kernel_bounds_0": 2, "kernel_bounds_1": 3, "kernel_bounds_sum": 5,
        "kernel_bounds_product": 6, "output_bounds_0": 5, "output_bounds_sum": 5,
        "output_bounds_product": 5, "input_bounds_0": 7, "input_bounds_1": 11,
        "input_bounds_2": 13, "input_bounds_sum": 31, "input_bounds_product": 1001}


EDGES = """\
HloModule edges

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

fused {
  fp = f32[4]{0} parameter(0)
  ROOT fm = f32[4]{0} multiply(fp, fp)
}

ENTRY main {
  p = f32[4]{0} parameter(0)
  sq = f32[4]{0} add(p, p)
  f = f32[4]{0} fusion(sq), kind=kLoop, calls=fused
  z = f32[] constant(0)
  ROOT r = f32[] reduce(f, z), dimensions={0}, to_apply=add_f32
}
"""


def test_edges_operands_deduplicated_callers_to_callee_roots_sorted() -> None:
    graph = featurize(parse_hlo_text(EDGES))
    assert graph.node_names == ["a", "b", "s", "fp", "fm", "p", "sq", "f", "z", "r"]
    assert graph.edge_index.tolist() == [
        [2, 0], [2, 1],          # s = add(a, b)
        [4, 3],                  # fm = multiply(fp, fp): one edge
        [6, 5],                  # sq = add(p, p): one edge
        [7, 4], [7, 6],          # fusion -> root of %fused, and its operand
        [9, 2], [9, 7], [9, 8],  # reduce -> root of %add_f32, f, z
    ]
    assert (graph.edge_index[:, 0] > graph.edge_index[:, 1]).all()
    assert graph.node_splits.tolist() == [0, 10]


def test_all_edges_point_backwards_and_are_unique(spot: Graph) -> None:
    e = spot.edge_index
    assert (e[:, 0] > e[:, 1]).all()
    assert len({tuple(r) for r in e.tolist()}) == len(e)
    assert e.tolist() == sorted(e.tolist())
    names = spot.node_names
    pairs = {(names[u], names[v]) for u, v in e.tolist()}
    assert ("relu", "fmax") in pairs   # fusion -> root of its computation
    assert ("srt", "lt") in pairs      # sort -> root of its comparator
    assert ("rw", "s") in pairs and ("red", "s") in pairs
    assert ("ds", "i") in pairs and ("ds", "t") in pairs  # i used 3 times: one edge


WHILE = """\
HloModule loop

cond_fn {
  cp = (s32[], f32[4]{0}) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  lim = s32[] constant(10)
  ROOT lt = pred[] compare(ci, lim), direction=LT
}

body_while {
  bp = (s32[], f32[4]{0}) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  bx = f32[4]{0} get-tuple-element(bp), index=1
  one = s32[] constant(1)
  ni = s32[] add(bi, one)
  nx = f32[4]{0} add(bx, bx)
  ROOT bt = (s32[], f32[4]{0}) tuple(ni, nx)
}

ENTRY main {
  x = f32[4]{0} parameter(0)
  i0 = s32[] constant(0)
  init = (s32[], f32[4]{0}) tuple(i0, x)
  w = (s32[], f32[4]{0}) while(init), condition=cond_fn, body=body_while
  ROOT out = f32[4]{0} get-tuple-element(w), index=1
}
"""


def test_node_splits_after_cond_and_while_computations() -> None:
    graph = featurize(parse_hlo_text(WHILE))
    assert graph.num_nodes == 16
    assert graph.node_splits.tolist() == [0, 4, 11, 16]
    w = graph.node_names.index("w")
    assert w == 14
    assert [v for u, v in graph.edge_index.tolist() if u == w] == [3, 10, 13]
    assert graph.node_feat[w, 29] == 2 and graph.node_feat[w, 18] == 1


def test_node_splits_after_cluster_computations_end_at_n_once() -> None:
    text = """\
HloModule clusters

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cluster_0 {
  c0 = f32[] parameter(0)
  ROOT c1 = f32[] negate(c0)
}

ENTRY main.cluster {
  x = f32[] parameter(0)
  y = f32[] call(x), to_apply=cluster_0
  z = f32[] constant(0)
  ROOT r = f32[] add(y, z)
}
"""
    graph = featurize(parse_hlo_text(text))
    assert graph.node_splits.tolist() == [0, 5, 9]


CONFIGURABLE = """\
HloModule cfg

fused_dot {
  fa = f32[2,3]{1,0} parameter(0)
  fb = f32[3,4]{1,0} parameter(1)
  ROOT fd = f32[2,4]{1,0} dot(fa, fb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY main {
  x = f32[1,4,4,2]{3,2,1,0} parameter(0)
  k = f32[1,1,2,3]{3,2,1,0} parameter(1)
  c = f32[1,4,4,3]{3,2,1,0} convolution(x, k), window={size=1x1}, dim_labels=b01f_01io->b01f
  r = f32[16,3]{1,0} reshape(c)
  bc = f32[48]{0} bitcast(r)
  w = f32[3,4]{1,0} parameter(2)
  sl = f32[2,3]{1,0} slice(r), slice={[0:2], [0:3]}
  d = f32[2,4]{1,0} fusion(sl, w), kind=kOutput, calls=fused_dot
  d2 = f32[16,4]{1,0} dot(r, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[2,4]{1,0}, f32[48]{0}, f32[16,4]{1,0}) tuple(d, bc, d2)
}
"""


def test_node_config_ids_are_every_convolution_dot_and_reshape() -> None:
    graph = featurize(parse_hlo_text(CONFIGURABLE))
    assert graph.node_names[:3] == ["fa", "fb", "fd"]
    # fd (dot inside a fusion), c (convolution), r (reshape), d2 (dot); not bitcast/fusion
    assert graph.node_config_ids.tolist() == [2, 5, 6, 11]


def test_dtypes_and_shapes_are_those_of_tpugraphs() -> None:
    graph = featurize(parse_hlo_text(EDGES))
    arrays = graph.arrays()
    assert {k: str(v.dtype) for k, v in arrays.items()} == {
        "node_feat": "float32", "node_opcode": "uint8", "edge_index": "int64",
        "node_splits": "int64", "node_config_ids": "int64",
    }
    assert arrays["node_feat"].shape == (10, 140)
    assert arrays["node_opcode"].shape == (10,)
    assert arrays["edge_index"].shape == (9, 2)
    assert arrays["node_splits"].ndim == 1
    assert arrays["node_config_ids"].shape == (0,)


def test_single_instruction_module_has_empty_edge_array() -> None:
    graph = featurize(parse_hlo_text("HloModule one\n\nENTRY e {\n  ROOT x = f32[] parameter(0)\n}\n"))
    assert graph.edge_index.shape == (0, 2) and graph.edge_index.dtype == np.int64
    assert graph.node_splits.tolist() == [0, 1]
    expected = default_row()
    expected[[0, 13, 28]] = 1
    assert np.array_equal(graph.node_feat[0], expected)


def test_missing_layout_is_the_default_layout_as_in_xla(tmp_path: Path) -> None:
    """XLA's parser gives array shapes written without a layout the default (row-major) one,
    so the proto TpuGraphs read holds it: text without layouts must featurize the same."""
    from tpugraphs_tools.hlo import from_file

    bare = ("HloModule bare\n\nENTRY main {\n  x = f32[2,3,4] parameter(0)\n"
            "  t = f32[4,2,3] transpose(x), dimensions={2,0,1}\n"
            "  s0 = f32[] constant(1)\n  ROOT s = (f32[4,2,3], f32[]) tuple(t, s0)\n}\n")
    explicit = (bare.replace("f32[2,3,4] ", "f32[2,3,4]{2,1,0} ")
                .replace("f32[4,2,3] ", "f32[4,2,3]{2,1,0} ")
                .replace("(f32[4,2,3], f32[])", "(f32[4,2,3]{2,1,0}, f32[])"))
    assert explicit != bare
    a = featurize(parse_hlo_text(bare))
    b = featurize(parse_hlo_text(explicit))
    assert np.array_equal(a.node_feat, b.node_feat)
    x = a.node_names.index("x")
    assert a.node_feat[x, 134:140].tolist() == [2, 1, 0, 0, 0, 0]
    (tmp_path / "bare.hlo").write_text(bare)
    from tpugraphs_tools._xla_compat import hlo_bindings

    src = from_file(tmp_path / "bare.hlo")
    (tmp_path / "bare.pb").write_bytes(
        hlo_bindings().hlo_module_from_text(src.text).as_serialized_hlo_module_proto())
    via_proto = featurize(from_file(tmp_path / "bare.pb").module)
    assert np.array_equal(via_proto.node_feat, a.node_feat)


def test_custom_calls_carry_group_counts_and_conv_numbers_like_their_proto() -> None:
    """XLA's custom-call proto always sets feature/batch group counts (1) and, with dim_labels,
    the convolution dimension numbers; text prints neither count when it is 1."""
    text = """\
HloModule cc

ENTRY main {
  x = f32[4,4]{1,0} parameter(0)
  lc = f32[4,4]{0,1} custom-call(x), custom_call_target="LayoutConstraint"
  y = f32[1,6,6,2]{3,2,1,0} parameter(1)
  k = f32[3,3,2,2]{3,2,1,0} parameter(2)
  cv = (f32[1,4,4,2]{3,2,1,0}, u8[0]{0}) custom-call(y, k), window={size=3x3}, \
dim_labels=b01f_01io->b01f, custom_call_target="__cudnn$convForward"
  ROOT t = (f32[4,4]{0,1}, (f32[1,4,4,2]{3,2,1,0}, u8[0]{0})) tuple(lc, cv)
}
"""
    graph = featurize(parse_hlo_text(text))
    lc, cv = row_of(graph, "lc"), row_of(graph, "cv")
    assert lc[107:109].tolist() == [1, 1] and not lc[93:107].any()
    assert lc[134:136].tolist() == [0, 1]
    assert cv[107:109].tolist() == [1, 1]
    assert cv[93:107].tolist() == [0, 3, 1, 2, 0, 0, 2, 3, 0, 1, 0, 0, 0, 3]
    assert cv[37:39].tolist() == [3, 3] and cv[43:45].tolist() == [6, 9]
    assert row_of(graph, "t")[107:109].tolist() == [0, 0]
