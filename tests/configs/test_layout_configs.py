from __future__ import annotations

import numpy as np
import pytest

from tpugraphs_tools.configs import LayoutConfig, generate_configs, layout_space
from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import parse_hlo_text

HLO = """
HloModule m
ENTRY main {
  x = f32[2,8,8,3]{3,2,1,0} parameter(0)
  w = f32[3,3,3,4]{3,2,1,0} parameter(1)
  c = f32[2,8,8,4]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  r = f32[2,256]{1,0} reshape(c)
  m = f32[256,5]{1,0} parameter(2)
  ROOT d = f32[2,5]{1,0} dot(r, m), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


@pytest.fixture()
def module():
    return parse_hlo_text(HLO)


def test_space_lists_output_input_kernel_slots(module):
    space = layout_space(module)
    graph = featurize(module)
    assert space.num_config_nodes == len(graph.node_config_ids) == 3
    slots = {(t.node, t.slot): (t.dims, t.default, t.operand) for t in space.tensors}
    assert slots[("c", 0)] == ((2, 8, 8, 4), (3, 2, 1, 0), None)
    assert slots[("c", 1)][2] == "x" and slots[("c", 2)][2] == "w"
    assert slots[("r", 1)][0] == (2, 8, 8, 4)
    assert ("r", 2) not in slots  # reshape has one operand
    assert slots[("d", 2)][0] == (256, 5)


def test_encoding_is_tpugraphs_layout_features(module):
    space = layout_space(module)
    config = LayoutConfig.of({(0, 0): (0, 1, 2, 3), (2, 2): (0, 1)})
    feat = config.encode(space.num_config_nodes)
    assert feat.shape == (3, 18) and feat.dtype == np.float32
    assert feat[0, :6].tolist() == [0, 1, 2, 3, -1, -1]
    assert (feat[0, 6:] == -1).all() and (feat[1] == -1).all()
    assert feat[2, 12:14].tolist() == [0, 1] and (feat[2, :12] == -1).all()
    assert (LayoutConfig().encode(3) == -1).all()


@pytest.mark.parametrize("strategy", ["default", "random"])
def test_generation_is_seeded_distinct_and_starts_with_default(module, strategy):
    space = layout_space(module)
    a = generate_configs(space, 15, strategy, seed=3)
    b = generate_configs(space, 15, strategy, seed=3)
    c = generate_configs(space, 15, strategy, seed=4)
    assert a == b and a != c
    assert a[0].is_default and len(set(a)) == len(a) == 15
    tensors = space.by_key()
    for config in a[1:]:
        for key, layout in config.layouts:
            assert sorted(layout) == list(range(tensors[key].rank))
        if strategy == "default":
            assert 1 <= len(config.layouts) <= 3
            assert all(layout != tensors[key].default for key, layout in config.layouts)
        else:
            assert len(config.layouts) == len(space.tensors)


SIZE_ONE_HLO = """
HloModule m
ENTRY main {
  x = f32[1,8,8,3]{3,2,1,0} parameter(0)
  w = f32[1,1,3,4]{3,2,1,0} parameter(1)
  c = f32[1,8,8,4]{3,2,1,0} convolution(x, w), window={size=1x1}, dim_labels=b01f_01io->b01f
  r = f32[1,256]{1,0} reshape(c)
  m = f32[256,1]{1,0} parameter(2)
  ROOT d = f32[1,1]{1,0} dot(r, m), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_physical_order_ignores_size_one_dims():
    from tpugraphs_tools.configs.layout import can_differ, physical_order

    dims = (1, 8, 1, 4)
    assert physical_order(dims, (3, 2, 1, 0)) == physical_order(dims, (2, 3, 0, 1)) == (3, 1)
    assert physical_order(dims, (1, 3, 2, 0)) == (1, 3)
    assert physical_order((2, 0, 3), (2, 1, 0)) == physical_order((2, 0, 3), (0, 1, 2)) == ()
    assert can_differ((1, 8, 1, 4)) and not can_differ((1, 256)) and not can_differ((1, 1, 7))
    assert not can_differ((2, 0, 3))


def test_space_holds_only_tensors_whose_layouts_can_differ():
    from tpugraphs_tools.configs.layout import slot_tensors

    module = parse_hlo_text(SIZE_ONE_HLO)
    space, everything = layout_space(module), slot_tensors(module)
    assert space.num_config_nodes == everything.num_config_nodes == 3
    kept = {(t.node, t.slot) for t in space.tensors}
    # w [1,1,3,4] and c [1,8,8,4] differ; r [1,256], m [256,1], d [1,1] have one order each.
    assert kept == {("c", 0), ("c", 1), ("c", 2), ("r", 1)}
    assert len(everything.tensors) == 8


def test_canonical_layout_is_a_valid_representative():
    module = parse_hlo_text(SIZE_ONE_HLO)
    tensors = {(t.node, t.slot): t for t in layout_space(module).tensors}
    w = tensors[("c", 2)]                        # dims (1, 1, 3, 4), default (3, 2, 1, 0)
    assert w.canonical((2, 3, 0, 1)) == (2, 3, 1, 0)
    assert w.canonical((0, 1, 2, 3)) == (2, 3, 1, 0)   # same memory order as above
    assert w.canonical((3, 0, 1, 2)) == w.default       # the default's order is the default
    c = tensors[("c", 0)]                        # dims (1, 8, 8, 4)
    for layout in [(0, 1, 2, 3), (3, 1, 2, 0), (1, 0, 3, 2)]:
        rep = c.canonical(layout)
        assert sorted(rep) == [0, 1, 2, 3] and c.physical(rep) == c.physical(layout)
    assert c.canonical((0, 3, 2, 1)) == (3, 2, 1, 0)


@pytest.mark.parametrize("strategy", ["default", "random"])
def test_generated_configs_are_physically_distinct(strategy):
    module = parse_hlo_text(SIZE_ONE_HLO)
    space = layout_space(module)
    configs = generate_configs(space, 200, strategy, seed=1)
    tensors = space.by_key()
    assert configs[0].is_default
    physical = [tuple((k, tensors[k].physical(lay)) for k, lay in c.layouts) for c in configs]
    assert len(set(physical)) == len(configs) > 20
    for config in configs[1:]:
        assert space.canonical(config) == config
        feat = config.encode(space.num_config_nodes)
        for (node, slot), layout in config.layouts:
            row = feat[node, slot * 6: slot * 6 + 6]
            rank = tensors[(node, slot)].rank
            assert sorted(row[:rank].astype(int).tolist()) == list(range(rank))
            assert (row[rank:] == -1).all()
            if strategy == "default":
                assert not tensors[(node, slot)].is_default_order(layout)


def test_module_without_differing_layouts_has_only_the_default():
    module = parse_hlo_text("""
HloModule m
ENTRY main {
  a = f32[1,16]{1,0} parameter(0)
  b = f32[16,1]{1,0} parameter(1)
  ROOT d = f32[1,1]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""")
    space = layout_space(module)
    assert space.num_config_nodes == 1 and space.tensors == []
    assert generate_configs(space, 10, "random") == [LayoutConfig()]
