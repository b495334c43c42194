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
