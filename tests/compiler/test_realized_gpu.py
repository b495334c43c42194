"""Constrained tensors located in a recorded XLA:GPU module (gpt small, bf16, jax 0.11.2 on an
H200; tests/compiler/data/gpu_gpt_layer0_attention.hlo is layer 0 of it, trimmed).

XLA:GPU keeps almost every value inside fusions: the tensor a layout slot constrains exists in
memory only as a fusion's operand or output, often transposed (the attention GEMM writes its
[heads, q, d] result as [q, heads, d]) or with size-1 dims dropped. The recorded module was
compiled without constraints, so tgt's op_name tags are put here on the instructions that
compute the constrained values, as compiler/apply.py's tags would be after compiling; what is
tested is that ``check_slots`` finds those values through the fusions' parameters, roots, tuple
outputs, transposes and bitcasts, and reads their memory order right. (The first GPU run
located 1 of 27 constrained slots of gpt small with the old lookup.)
"""

from __future__ import annotations

import re
from pathlib import Path

from tpugraphs_tools.compiler.realized import check_slots
from tpugraphs_tools.hlo import parse_hlo_text

RECORDED = (Path(__file__).parent / "data" / "gpu_gpt_layer0_attention.hlo").read_text()


def _tagged(tags: dict[str, str]) -> str:
    """The recorded module with instruction ``name``'s op_name replaced by ``tags[name]``."""
    text = RECORDED
    for name, tag in tags.items():
        text, count = re.subn(rf'(%{re.escape(name)} = [^\n]*?metadata=\{{)op_name="[^"]*"',
                              rf'\1op_name="{tag}"', text)
        assert count == 1, name
    return text


def _slot(node, slot, opcode, dims, wanted, tag, value, node_tag=None):
    return {"node": node, "slot": slot, "opcode": opcode, "element_type": "bf16",
            "dims": dims, "wanted": wanted, "tag": tag, "value": value, "value_tags": [value],
            "node_tag": node_tag or value}


def test_values_inside_gpu_fusions_are_located_at_the_fusion_boundaries():
    module = parse_hlo_text(_tagged({
        "dot.57": "tgt.source:dot_general.57.tgt_out",   # attention output, in its GEMM
        "dot.56": "tgt.source:dot_general.56",           # attention scores GEMM
        "split.18.1": "tgt.source:split.18",             # q, a tuple output of a loop fusion
        "transpose.54": "tgt.constraint:reshape.45",     # a constraint copy, as a transpose
    }))
    slots = [
        # [1, heads, q, d] asked q-major: the GEMM fusion writes it transposed ([q, heads, d]).
        _slot("dot_general.57", "output", "dot", [1, 8, 256, 64], [3, 1, 2, 0],
              "tgt.constraint:dot_general.57", "tgt.source:dot_general.57.tgt_out"),
        # the scores GEMM's second operand: a fusion parameter fed by a top-level bitcast.
        _slot("dot_general.56", "kernel", "dot", [1, 8, 256, 64], [3, 1, 2, 0],
              "tgt.constraint:dot_general.56.tgt_in2", "tgt.source:none",
              node_tag="tgt.source:dot_general.56"),
        # q with its size-1 batch dim: the get-tuple-element of the slice fusion.
        _slot("split.18", "output", "slice", [1, 256, 512], [2, 1, 0],
              "tgt.constraint:split.18", "tgt.source:split.18"),
        # [1, q, heads, d], asked row-major: what the transpose inside the GEMM wrote.
        _slot("reshape.45", "output", "reshape", [1, 256, 8, 64], [3, 2, 1, 0],
              "tgt.constraint:reshape.45", "tgt.source:reshape.45.tgt_out"),
    ]
    records = check_slots(module, slots)
    assert all(r["honoured"] is not None for r in records)  # 4 of 4 located
    attention, scores_rhs, q, reshaped = records
    assert attention["honoured"] is True and [3, 1, 2, 0] in attention["found"]
    assert [3, 2, 1, 0] in attention["found"]  # the dot's own [heads, q, d] inside the fusion
    assert scores_rhs["node_layout"] == [3, 1, 2, 0] and scores_rhs["honoured"] is True
    assert q["found"] == [[2, 1, 0]] and q["honoured"] is True
    assert reshaped["honoured"] is True


def test_an_order_the_gpu_module_does_not_hold_is_located_but_not_honoured():
    module = parse_hlo_text(_tagged({"dot.57": "tgt.source:dot_general.57.tgt_out"}))
    (record,) = check_slots(module, [
        _slot("dot_general.57", "output", "dot", [1, 8, 256, 64], [1, 3, 2, 0],
              "tgt.constraint:dot_general.57", "tgt.source:dot_general.57.tgt_out")])
    assert record["honoured"] is False and record["found"] == [[3, 1, 2, 0], [3, 2, 1, 0]]


def test_a_top_level_copy_for_another_user_is_not_evidence():
    """Only bitcasts (the same bytes) are followed outside fusions."""
    module = parse_hlo_text(_tagged({"split.18.1": "tgt.source:split.18"}))
    (record,) = check_slots(module, [
        _slot("split.18", "output", "slice", [8, 256, 64], [2, 0, 1],
              "tgt.constraint:split.18", "tgt.source:split.18")])
    assert record["honoured"] is None  # the [8,256,64] bitcast splits a dim: not this tensor


def test_a_value_read_with_merged_or_split_dims_is_located():
    """The heads' output [1, q, heads * d] is the GEMM's [q, heads, d] write (heads and d
    merged) and the split-K projection's [q, 4, 128] read (the 512 split): both bitcasts of it."""
    module = parse_hlo_text(_tagged({"transpose.54": "tgt.source:reshape.39",
                                     "bitcast.317.0": "tgt.source:reshape.39"}))
    (record,) = check_slots(module, [
        _slot("reshape.39", "output", "reshape", [1, 256, 512], [2, 1, 0],
              "tgt.constraint:reshape.39", "tgt.source:reshape.39")])
    assert record["honoured"] is True and record["found"] == [[2, 1, 0]]
    (record,) = check_slots(module, [  # 512 cannot be 64 x 8 of a [256, 8, 64] in this order
        _slot("reshape.39", "output", "reshape", [1, 256, 64, 8], [3, 2, 1, 0],
              "tgt.constraint:reshape.39", "tgt.source:reshape.39")])
    assert record["honoured"] is None
