"""Realized layouts: constrained tensors found by op_name tags, per-slot ``honoured``."""

from __future__ import annotations

import json
import re

import pytest

from tpugraphs_tools.compiler import apply_layout_config
from tpugraphs_tools.compiler.apply import constraint_slots
from tpugraphs_tools.compiler.realized import check_slots, honoured_json, op_name, realized_layouts
from tpugraphs_tools.configs import LayoutConfig, layout_space
from tpugraphs_tools.hlo import parse_hlo_text

HLO = """
HloModule m
ENTRY %main {
  %x = f32[2,8,8,3]{3,2,1,0} parameter(0), metadata={op_name="jit(f)/x" source_line=3}
  %w = f32[3,3,3,4]{3,2,1,0} parameter(1)
  %c = f32[2,8,8,4]{3,2,1,0} convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %r = f32[2,256]{1,0} reshape(%c)
  %m = f32[256,5]{1,0} parameter(2)
  ROOT %d = f32[2,5]{1,0} dot(%r, %m), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def _keys(space):
    return {(t.node, t.slot): (t.config_index, t.slot) for t in space.tensors}


def test_constraints_values_and_nodes_carry_op_name_tags():
    module = parse_hlo_text(HLO)
    space = layout_space(module)
    k = _keys(space)
    config = LayoutConfig.of({k[("c", 0)]: (0, 1, 2, 3), k[("c", 1)]: (0, 1, 2, 3),
                              k[("d", 1)]: (0, 1)})
    text = apply_layout_config(HLO, space, config)
    names = {i.name: op_name(i) for _, i in parse_hlo_text(text).instructions()}
    assert names["c"] == "tgt.constraint:c" and names["c.tgt_in1"] == "tgt.constraint:c.tgt_in1"
    assert names["c.tgt_out"] == "tgt.source:c.tgt_out"
    assert names["x"] == "tgt.source:x"           # existing metadata replaced, not doubled
    assert "source_line" not in text
    assert names["r"] == "tgt.source:r" and names["d"] == "tgt.source:d"
    assert names["w"] is None                      # untouched: nothing constrains it
    slots = {(s["node"], s["slot"]): s for s in constraint_slots(module, space, config)}
    assert slots[("c", "output")]["value"] == "tgt.source:c.tgt_out"
    assert slots[("c", "input")]["value"] == "tgt.source:x"
    assert slots[("c", "input")]["node_tag"] == "tgt.source:c.tgt_out"
    assert slots[("d", "input")]["value"] == "tgt.source:r"
    # A reshape made a bitcast carries its operand's op_name: the operand is tagged too.
    only_r = LayoutConfig.of({k[("r", 0)]: (0, 1)})
    text = apply_layout_config(HLO, space, only_r)
    names = {i.name: op_name(i) for _, i in parse_hlo_text(text).instructions()}
    assert names["c"] == "tgt.source:c" and names["r"] == "tgt.constraint:r"
    (slot,) = constraint_slots(module, space, only_r)
    assert slot["value_tags"] == ["tgt.source:r.tgt_out", "tgt.source:c"]


OPTIMIZED = """
HloModule m
fused {
  p = f32[1,8,4,2]{3,2,1,0} parameter(0)
  ROOT copy.1 = f32[1,8,4,2]{3,2,1,0} copy(p), metadata={op_name="tgt.constraint:a"}
}
ENTRY main {
  a = f32[1,8,4,2]{3,2,1,0} parameter(0), metadata={op_name="tgt.source:a.tgt_out"}
  copy.2 = f32[1,8,4,2]{1,0,2,3} copy(a), metadata={op_name="tgt.source:a.tgt_out"}
  b = f32[1,8,4,2]{3,1,2,0} copy(a)
  ROOT f = f32[1,8,4,2]{3,2,1,0} fusion(copy.2), kind=kLoop, calls=fused, metadata={op_name="tgt.constraint:a"}
}
"""


def _slot(wanted, value="tgt.source:a.tgt_out", tag="tgt.constraint:a"):
    return {"node": "a", "slot": "output", "opcode": "convolution", "element_type": "f32",
            "dims": [1, 8, 4, 2], "wanted": wanted, "tag": tag, "value": value,
            "value_tags": [value], "node_tag": value}


def test_check_compares_memory_orders_and_says_what_it_could_not_find():
    module = parse_hlo_text(OPTIMIZED)
    # {1,0,2,3} and {1,2,0,3} are one memory order: dim 0 has size 1.
    (yes,) = check_slots(module, [_slot([1, 2, 0, 3])])
    assert yes["honoured"] is True and yes["realized"] == [1, 0, 2, 3]
    assert yes["found"] == [[1, 0, 2, 3], [3, 2, 1, 0]]
    # {3,1,2,0} exists only in an untagged instruction: not evidence of this value.
    (no,) = check_slots(module, [_slot([3, 1, 2, 0])])
    assert no["honoured"] is False and no["realized"] == [1, 0, 2, 3]
    (unknown,) = check_slots(module, [_slot([1, 2, 0, 3], value="tgt.source:zz",
                                            tag="tgt.constraint:zz")])
    assert unknown["honoured"] is None and unknown["found"] == [] and unknown["realized"] is None
    realized = realized_layouts(module, [_slot([1, 2, 0, 3]), _slot([3, 1, 2, 0])])
    assert realized["copies"] == 3
    assert json.loads(honoured_json(realized)) == {"a": {"output": False}}
    assert honoured_json(None) is None


@pytest.fixture(scope="module")
def compiled(convnet_source):
    from tpugraphs_tools.compiler.compile import compile_text, entry_signature

    src = convnet_source
    space = layout_space(src.module)
    signature = entry_signature(src.module)

    def compile_config(config, text=None):
        text = text or apply_layout_config(src.text, space, config)
        exe = compile_text(text, signature)
        optimized = parse_hlo_text(exe.hlo_modules()[0].to_string())
        return realized_layouts(optimized, constraint_slots(src.module, space, config))

    return src, space, compile_config


def _every_slot_config(space):
    """Output, input and kernel slots of convs, the reshape, and the dot (chained input)."""
    chosen = {}
    for t in space.tensors:
        big = [d for d in t.default if t.dims[d] > 1]
        chosen[(t.config_index, t.slot)] = t.canonical(tuple(reversed(big)))
    return LayoutConfig.of(chosen)


def test_every_constrained_slot_is_found_honoured(compiled):
    _, space, compile_config = compiled
    config = _every_slot_config(space)
    realized = compile_config(config)
    records = realized["slots"]
    assert len(records) == len(config.layouts) == len(space.tensors)
    assert {r["slot"] for r in records} == {"output", "input", "kernel"}
    tensors = {(t.node, ("output", "input", "kernel")[t.slot]): t for t in space.tensors}
    for r in records:
        tensor = tensors[(r["node"], r["slot"])]
        assert r["honoured"] is True, r
        assert tensor.physical(tuple(r["realized"])) == tensor.physical(tuple(r["wanted"]))
    assert realized["copies"] > 0


def test_same_config_compiled_twice_gives_the_same_record(compiled):
    _, space, compile_config = compiled
    config = _every_slot_config(space)
    first, second = compile_config(config), compile_config(config)
    assert first == second


def test_a_constraint_the_compiler_drops_is_not_honoured(compiled):
    src, space, compile_config = compiled
    conv_out = next(t for t in space.tensors if t.opcode == "convolution" and t.slot == 0)
    config = LayoutConfig.of({(conv_out.config_index, 0): (0, 1, 2, 3)})
    text = apply_layout_config(src.text, space, config)
    # Without operand_layout_constraints the HLO→MLIR route drops the wanted layout
    # (docs/layout-collection.md): the constraint is then silently ignored.
    dropped = re.sub(r", operand_layout_constraints=\{[^{}]*\{[^{}]*\}\}", "", text)
    assert dropped.count("LayoutConstraint") == 1 and "operand_layout" not in dropped
    (ignored,) = compile_config(config, dropped)["slots"]
    assert ignored["honoured"] is False and ignored["realized"] == list(conv_out.default)
    (kept,) = compile_config(config)["slots"]
    assert kept["honoured"] is True
