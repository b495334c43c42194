from __future__ import annotations

import pytest

from tpugraphs_tools.compiler import apply_layout_config
from tpugraphs_tools.configs import LayoutConfig, layout_space
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.hlo import parse_hlo_text

HLO = """
HloModule m
ENTRY %main {
  %x = f32[2,8,8,3]{3,2,1,0} parameter(0)
  %w = f32[3,3,3,4]{3,2,1,0} parameter(1)
  %c = f32[2,8,8,4]{3,2,1,0} convolution(f32[2,8,8,3]{3,2,1,0} %x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT %r = f32[2,256]{1,0} reshape(%c)
}
"""


def _constraints(module):
    return {i.name: i for _, i in module.instructions() if i.opcode == "custom-call"}


def test_output_slot_renames_node_and_keeps_users():
    space = layout_space(parse_hlo_text(HLO))
    text = apply_layout_config(HLO, space, LayoutConfig.of({(0, 0): (0, 1, 2, 3)}))
    module = parse_hlo_text(text)
    calls = _constraints(module)
    assert set(calls) == {"c"}
    assert calls["c"].shape.minor_to_major == (0, 1, 2, 3)
    assert calls["c"].operands == ["c.tgt_out"]
    assert calls["c"].attrs["custom_call_target"] == '"LayoutConstraint"'
    assert calls["c"].attrs["operand_layout_constraints"] == "{f32[2,8,8,4]{0,1,2,3}}"
    assert module.entry.root.name == "r" and module.entry.root.operands == ["c"]


def test_input_and_kernel_slots_rewire_operands():
    space = layout_space(parse_hlo_text(HLO))
    config = LayoutConfig.of({(0, 1): (0, 1, 2, 3), (0, 2): (3, 2, 0, 1)})
    module = parse_hlo_text(apply_layout_config(HLO, space, config))
    conv = next(i for _, i in module.instructions() if i.opcode == "convolution")
    assert conv.operands == ["c.tgt_in1", "c.tgt_in2"]
    calls = _constraints(module)
    assert calls["c.tgt_in1"].operands == ["x"]
    assert calls["c.tgt_in2"].shape.minor_to_major == (3, 2, 0, 1)


def test_root_output_constraint_becomes_root():
    space = layout_space(parse_hlo_text(HLO))
    module = parse_hlo_text(apply_layout_config(HLO, space, LayoutConfig.of({(1, 0): (0, 1)})))
    assert module.entry.root.opcode == "custom-call"
    assert module.entry.root.operands == ["r.tgt_out"]
    assert sum(i.is_root for i in module.entry.instructions) == 1


def test_default_config_is_identity_and_bad_layouts_are_refused():
    space = layout_space(parse_hlo_text(HLO))
    assert apply_layout_config(HLO, space, LayoutConfig()) == HLO
    with pytest.raises(ConfigError, match="permutation"):
        apply_layout_config(HLO, space, LayoutConfig.of({(0, 0): (0, 1, 1, 3)}))
    with pytest.raises(ConfigError, match="not a configurable tensor"):
        apply_layout_config(HLO, space, LayoutConfig.of({(5, 0): (0, 1)}))
