"""The HLO text reader on hand-written modules: both print styles, shapes, attributes, calls,
computation and instruction order, unknown opcodes and parse errors."""

from __future__ import annotations

import numpy as np
import pytest

from tpugraphs_tools.errors import HloParseError
from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import Module, Shape, fingerprint, from_file, parse_hlo_text, parse_shape

# The same module in the two styles XLA prints: bare names (Lowered.as_text) and %-sigils with
# computation signatures, operand shapes and metadata (dumps, HloModule.to_string).
PLAIN = """\
HloModule styles

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  y = f32[2,3]{1,0} exponential(x)
  m = f32[2,3]{1,0} multiply(x, y)
  z = f32[] constant(0)
  ROOT r = f32[2]{0} reduce(m, z), dimensions={1}, to_apply=add_f32
}
"""

SIGILS = """\
HloModule styles, entry_computation_layout={(f32[2,3]{1,0})->f32[2]{0}}

%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0), metadata={op_name="reduce_sum"}
  %b = f32[] parameter(1), metadata={op_name="reduce_sum"}
  ROOT %s = f32[] add(f32[] %a, f32[] %b), metadata={op_name="jit(f)/reduce_sum"}
}

ENTRY %main (x: f32[2,3]) -> f32[2] {
  %x = f32[2,3]{1,0} parameter(0), metadata={op_name="x"}
  %y = f32[2,3]{1,0} exponential(f32[2,3]{1,0} %x), metadata={op_name="jit(f)/exp" \
source_file="/src/a, b/{c}.py" source_line=3}
  %m = f32[2,3]{1,0} multiply(f32[2,3]{1,0} %x, f32[2,3]{1,0} %y)
  %z = f32[] constant(0)
  ROOT %r = f32[2]{0} reduce(f32[2,3]{1,0} %m, f32[] %z), dimensions={1}, \
to_apply=%add_f32, metadata={op_name="jit(f)/reduce_sum" stack_frame_id=2}
}
"""

STYLES_EXPECTED = [
    # computation, name, opcode, shape, operands, called computations, is_root
    ("add_f32", "a", "parameter", "f32[]", [], [], False),
    ("add_f32", "b", "parameter", "f32[]", [], [], False),
    ("add_f32", "s", "add", "f32[]", ["a", "b"], [], True),
    ("main", "x", "parameter", "f32[2,3]{1,0}", [], [], False),
    ("main", "y", "exponential", "f32[2,3]{1,0}", ["x"], [], False),
    ("main", "m", "multiply", "f32[2,3]{1,0}", ["x", "y"], [], False),
    ("main", "z", "constant", "f32[]", [], [], False),
    ("main", "r", "reduce", "f32[2]{0}", ["m", "z"], ["add_f32"], True),
]


def summary(module: Module) -> list[tuple]:
    return [(c.name, i.name, i.opcode, i.shape.to_text(), i.operands, i.called_computations,
             i.is_root) for c, i in module.instructions()]


def entry_module(body: str, extra: str = "") -> str:
    """A module whose entry computation is ``body`` (instruction lines)."""
    return f"HloModule t\n\n{extra}ENTRY main {{\n{body}\n}}\n"


@pytest.mark.parametrize("text", [PLAIN, SIGILS], ids=["plain", "sigils"])
def test_both_text_styles_parse_to_the_same_structure(text: str) -> None:
    module = parse_hlo_text(text)
    assert module.name == "styles"
    assert summary(module) == STYLES_EXPECTED
    assert module.entry.name == "main" and module.entry.is_entry
    assert [c.is_entry for c in module.computations] == [False, True]
    params = [i.parameter_number for _, i in module.instructions() if i.opcode == "parameter"]
    assert params == [0, 1, 0]


def test_both_text_styles_give_identical_features_and_fingerprint() -> None:
    plain, sigils = parse_hlo_text(PLAIN), parse_hlo_text(SIGILS)
    a, b = featurize(plain).arrays(), featurize(sigils).arrays()
    for key in a:
        assert np.array_equal(a[key], b[key]), key
    assert fingerprint(plain) == fingerprint(sigils)
    assert parse_hlo_text(SIGILS).header["entry_computation_layout"] == \
        "{(f32[2,3]{1,0})->f32[2]{0}}"


def test_fingerprint_ignores_metadata_but_not_shapes() -> None:
    base = fingerprint(parse_hlo_text(PLAIN))
    renamed_meta = PLAIN.replace("exponential(x)", 'exponential(x), metadata={op_name="q"}')
    assert fingerprint(parse_hlo_text(renamed_meta)) == base
    other_layout = PLAIN.replace("y = f32[2,3]{1,0}", "y = f32[2,3]{0,1}")
    assert fingerprint(parse_hlo_text(other_layout)) != base
    other_dims = PLAIN.replace("dimensions={1}", "dimensions={0}")
    assert fingerprint(parse_hlo_text(other_dims)) != base


def test_fingerprint_ignores_backend_config_key_order_but_not_values() -> None:
    line = "  m = f32[2,3]{1,0} multiply(x, y)"

    def with_config(config: str) -> str:
        return fingerprint(parse_hlo_text(PLAIN.replace(line, f"{line}, backend_config={config}")))

    a = with_config('{"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}')
    b = with_config('{"outer_dimension_partitions":[],"fusion_config":{"kind":"__ynn_fusion"}}')
    c = with_config('{"outer_dimension_partitions":["2"],"fusion_config":{"kind":"__ynn_fusion"}}')
    assert a == b != c


def test_metadata_with_quotes_braces_and_commas_does_not_leak_into_other_attributes() -> None:
    line = (r'  ROOT r = f32[2]{0} reduce(m, z), metadata={op_name="jit(f)/a,b{c}=d \"q, }\"" '
            r'source_file="/x/y, z.py" source_line=7}, dimensions={1}, to_apply=add_f32')
    text = PLAIN.replace(
        "  ROOT r = f32[2]{0} reduce(m, z), dimensions={1}, to_apply=add_f32", line)
    module = parse_hlo_text(text)
    root = module.entry.root
    assert root.name == "r"
    assert root.operands == ["m", "z"]
    assert root.attrs == {
        "metadata": r'{op_name="jit(f)/a,b{c}=d \"q, }\"" source_file="/x/y, z.py" '
                    r"source_line=7}",
        "dimensions": "{1}",
        "to_apply": "add_f32",
    }
    assert root.called_computations == ["add_f32"]


def test_tuple_shapes_nested_and_with_index_comments() -> None:
    text = entry_module(
        "  p = (f32[2]{0}, (s32[], pred[]), f32[], f32[], f32[], /*index=5*/f32[3]{0}) "
        "parameter(0)\n"
        "  ROOT g = f32[3]{0} get-tuple-element((f32[2]{0}, (s32[], pred[]), f32[], f32[], "
        "f32[], /*index=5*/f32[3]{0}) p), index=5")
    p, g = parse_hlo_text(text).entry.instructions
    scalar = Shape("f32")
    assert p.shape == Shape("tuple", tuple_shapes=(
        Shape("f32", (2,), (0,)),
        Shape("tuple", tuple_shapes=(Shape("s32"), Shape("pred"))),
        scalar, scalar, scalar,
        Shape("f32", (3,), (0,)),
    ))
    assert p.shape.is_tuple and len(p.shape.tuple_shapes) == 6
    assert g.operands == ["p"]
    assert g.attrs == {"index": "5"}


def test_parse_shape_variants() -> None:
    assert parse_shape("f32[2,3]{1,0}") == Shape("f32", (2, 3), (1, 0))
    assert parse_shape("bf16[7]") == Shape("bf16", (7,), None)
    assert parse_shape("s32[]") == Shape("s32", (), None)
    assert parse_shape("token[]") == Shape("token")
    # a tiled layout keeps its minor_to_major; a bounded dynamic dim keeps its bound
    assert parse_shape("f32[8,256]{1,0:T(8,128)}") == Shape("f32", (8, 256), (1, 0))
    assert parse_shape("f32[<=4,3]{1,0}") == Shape("f32", (4, 3), (1, 0))
    assert parse_shape("()") == Shape("tuple")
    with pytest.raises(ValueError):
        parse_shape("f32[2,x]")


def test_token_and_elided_constants() -> None:
    text = entry_module(
        "  tok = token[] after-all()\n"
        "  c = f32[2,2]{1,0} constant({...})\n"
        "  k = f32[2,2]{1,0} constant({ {1, 2}, {3, 4} }), metadata={op_name=\"k\"}\n"
        "  ROOT s = f32[2,2]{1,0} add(c, k)")
    tok, c, k, s = parse_hlo_text(text).entry.instructions
    assert tok.shape == Shape("token") and tok.operands == [] and tok.opcode == "after-all"
    assert c.opcode == "constant" and c.operands == [] and c.attrs == {"literal": "{...}"}
    assert k.operands == []
    assert k.attrs == {"literal": "{ {1, 2}, {3, 4} }", "metadata": '{op_name="k"}'}
    assert s.operands == ["c", "k"]


# Every way an instruction calls a computation: fusion calls=, while condition/body,
# reduce to_apply, conditional branch_computations. Accepted by XLA's own parser.
CONTROL = """\
HloModule control

%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%fused_mul (p0: f32[4]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0)
  ROOT %mul = f32[4]{0} multiply(%p0, %p0)
}

%loop_cond (cp: (s32[], f32[4])) -> pred[] {
  %cp = (s32[], f32[4]{0}) parameter(0)
  %ci = s32[] get-tuple-element(%cp), index=0
  %lim = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %lim), direction=LT
}

%loop_body (bp: (s32[], f32[4])) -> (s32[], f32[4]) {
  %bp = (s32[], f32[4]{0}) parameter(0)
  %bi = s32[] get-tuple-element(%bp), index=0
  %bx = f32[4]{0} get-tuple-element(%bp), index=1
  %one = s32[] constant(1)
  %ni = s32[] add(%bi, %one)
  %nx = f32[4]{0} fusion(%bx), kind=kLoop, calls=%fused_mul
  ROOT %bt = (s32[], f32[4]{0}) tuple(%ni, %nx)
}

%branch0 (q0: f32[4]) -> f32[] {
  %q0 = f32[4]{0} parameter(0)
  %z0 = f32[] constant(0)
  ROOT %s0 = f32[] reduce(%q0, %z0), dimensions={0}, to_apply=%add_f32
}

%branch1 (q1: f32[4]) -> f32[] {
  %q1 = f32[4]{0} parameter(0)
  ROOT %one1 = f32[] constant(1)
}

ENTRY %main (x: f32[4], k: s32[]) -> f32[] {
  %x = f32[4]{0} parameter(0)
  %k = s32[] parameter(1)
  %i0 = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%i0, %x)
  %w = (s32[], f32[4]{0}) while(%init), condition=%loop_cond, body=%loop_body
  %wx = f32[4]{0} get-tuple-element(%w), index=1
  ROOT %c = f32[] conditional(%k, %wx, %wx), branch_computations={%branch0, %branch1}
}
"""


def test_called_computations_of_fusion_while_reduce_and_conditional() -> None:
    module = parse_hlo_text(CONTROL)
    calls = {i.name: i.called_computations for _, i in module.instructions()
             if i.called_computations}
    assert calls == {
        "nx": ["fused_mul"],
        "s0": ["add_f32"],
        "w": ["loop_cond", "loop_body"],
        "c": ["branch0", "branch1"],
    }
    assert module.computation("loop_body").root.name == "bt"
    assert module.computation("fused_mul").root.name == "mul"


def test_computations_in_valid_post_order_keep_text_order() -> None:
    module = parse_hlo_text(CONTROL)
    assert [c.name for c in module.computations] == [
        "add_f32", "fused_mul", "loop_cond", "loop_body", "branch0", "branch1", "main"]


def _blocks(text: str) -> tuple[str, list[str]]:
    head, *rest = text.split("\n\n")
    return head, [b.strip("\n") for b in rest]


def test_reversed_computation_order_is_put_in_post_order() -> None:
    head, blocks = _blocks(CONTROL)
    module = parse_hlo_text(head + "\n\n" + "\n\n".join(reversed(blocks)) + "\n")
    names = [c.name for c in module.computations]
    assert sorted(names) == sorted(["add_f32", "fused_mul", "loop_cond", "loop_body",
                                    "branch0", "branch1", "main"])
    assert names[-1] == "main"
    position = {name: i for i, name in enumerate(names)}
    for comp in module.computations:
        for inst in comp.instructions:
            for callee in inst.called_computations:
                assert position[callee] < position[comp.name], (callee, comp.name)


def test_chain_of_calls_written_caller_first() -> None:
    text = """\
HloModule chain

ENTRY main {
  x = f32[4]{0} parameter(0)
  ROOT f = f32[] fusion(x), kind=kLoop, calls=outer
}

outer {
  p = f32[4]{0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=inner
}

unused {
  ROOT u = f32[] constant(7)
}

inner {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""
    names = [c.name for c in parse_hlo_text(text).computations]
    # callee before caller, the entry last, and a computation nothing calls is kept
    assert names.index("inner") < names.index("outer") < names.index("main")
    assert names[-1] == "main"
    assert sorted(names) == ["inner", "main", "outer", "unused"]


def test_out_of_order_instructions_are_topologically_reordered() -> None:
    text = entry_module(
        "  ROOT r = f32[] add(y, x)\n"
        "  y = f32[] negate(x)\n"
        "  x = f32[] parameter(0)")
    module = parse_hlo_text(text)
    assert [i.name for i in module.entry.instructions] == ["x", "y", "r"]
    assert module.entry.root.name == "r"
    graph = featurize(module)
    assert graph.node_names == ["x", "y", "r"]
    assert graph.edge_index.tolist() == [[1, 0], [2, 0], [2, 1]]
    assert graph.node_feat[:, 0].tolist() == [0, 0, 1]


def test_valid_instruction_order_is_kept_as_written() -> None:
    text = entry_module(
        "  b = f32[] parameter(1)\n"
        "  a = f32[] parameter(0)\n"
        "  c = f32[] constant(2)\n"
        "  ROOT s = f32[] add(a, b)")
    assert [i.name for i in parse_hlo_text(text).entry.instructions] == ["b", "a", "c", "s"]


def test_without_root_marker_the_last_instruction_is_the_root() -> None:
    text = entry_module("  x = f32[] parameter(0)\n  y = f32[] negate(x)")
    assert [i.is_root for i in parse_hlo_text(text).entry.instructions] == [False, True]


@pytest.mark.parametrize(("body", "fragment", "line"), [
    ('  x = f32[4]{0} parameter(0)\n  y = f32[4]{0} frobnicate(x), flavour="new"\n'
     "  ROOT z = f32[4]{0} add(x, y)", "unknown opcode 'frobnicate' (y)", 5),
    ("  x = f32[4]{0} parameter(0)\n  ROOT z = f32[4]{0} add(x, ghost)",
     "instruction z: operand ghost is not an instruction of computation main", 5),
    ("  x = f32[4]{0} parameter(0)\n  x = f32[4]{0} negate(x)\n  ROOT z = f32[4]{0} add(x, x)",
     "instruction x is defined twice in main (first at line 4)", 5),
    ("  ROOT x = f32[4]{0} parameter(0)\n  ROOT z = f32[4]{0} negate(x)",
     "computation main has a second ROOT (z)", 5),
])
def test_modules_xla_refuses_are_refused(body: str, fragment: str, line: int) -> None:
    """Unknown opcodes, undefined operands, duplicate names: refused, never featurized with
    id 0, a dropped edge or rewired edges."""
    with pytest.raises(HloParseError) as info:
        parse_hlo_text(entry_module(body), source="m.hlo")
    assert str(info.value) == f"m.hlo:{line}: {fragment}"


def test_two_modules_in_one_file_are_refused() -> None:
    one = entry_module("  ROOT x = f32[4]{0} parameter(0)")
    with pytest.raises(HloParseError) as info:
        parse_hlo_text(one + "\n" + one.replace("HloModule t", "HloModule u"), source="m.hlo")
    assert str(info.value) == ("m.hlo:7: a second HloModule in one file (first at line 1): "
                               "give each module its own file")


def test_xla_opcodes_the_table_lacks_are_accepted_when_xla_vouches() -> None:
    text = entry_module("  x = f32[4]{0} parameter(0)\n  ROOT y = f32[4]{0} erf(x)")
    graph = featurize(parse_hlo_text(text))
    assert graph.node_opcode.tolist() == [63, 0]  # erf is XLA's, not in TpuGraphs' table
    odd = text.replace("erf(x)", "brand-new(x)")
    assert [i.opcode for _, i in parse_hlo_text(odd, check_opcodes=False).instructions()] == \
        ["parameter", "brand-new"]


def test_parse_error_names_source_and_line() -> None:
    text = ("HloModule broken\n"
            "\n"
            "ENTRY main {\n"
            "  x = f32[4]{0} parameter(0)\n"
            "  y = f32[4 add(x, x)\n"
            "  ROOT z = f32[4]{0} add(x, y)\n"
            "}\n")
    with pytest.raises(HloParseError) as info:
        parse_hlo_text(text, source="broken.hlo")
    assert info.value.line == 5
    assert info.value.source == "broken.hlo"
    assert str(info.value).startswith("broken.hlo:5: ")
    assert "y = f32[4 add(x, x)" in str(info.value)


@pytest.mark.parametrize(("text", "fragment", "line"), [
    (entry_module("  x = f32[] parameter(zero)"), "parameter(zero)", 4),
    (entry_module("  x = f32[] parameter(0)\n  this is not an instruction"),
     "this is not an instruction", 5),
    (entry_module("  x = f32[4]{0} parameter(0)\n  y = f32[4]{0} add(x, x"), "add(x, x", 5),
    ("HloModule t\n\nENTRY main {\n  x = f32[] parameter(0)\n", "never closed", 3),
    ("HloModule t\n", "no computations", 1),
    (entry_module("  x = f32[] parameter(0)\n  ROOT c = f32[] call(x), to_apply=nowhere"),
     "nowhere", 5),
])
def test_malformed_text_raises_hlo_parse_error(text: str, fragment: str,
                                               line: int | None) -> None:
    with pytest.raises(HloParseError) as info:
        parse_hlo_text(text, source="m.hlo")
    assert fragment in str(info.value)
    assert info.value.line == line
    assert str(info.value).startswith("m.hlo" if line is None else f"m.hlo:{line}:")


def test_from_file_reports_parse_errors_with_the_file_path(write_file) -> None:
    path = write_file("bad.hlo", entry_module("  x = f32[] parameter(0)\n  oops"))
    with pytest.raises(HloParseError) as info:
        from_file(path)
    # XLA's own verdict and line: it notices at the '}' after 'oops'
    assert str(info.value) == f"{path}:6: XLA refuses the module: expects '=' in instruction"


def test_stack_frame_tables_of_newer_xla_are_skipped() -> None:
    text = PLAIN.replace("HloModule styles\n", """HloModule styles

FileNames
1 "/src/model.py"

FunctionNames
1 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=8 end_column=22}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
""")
    assert summary(parse_hlo_text(text)) == STYLES_EXPECTED


def test_any_token_layout_xla_accepts_reads_the_same() -> None:
    """Comments and line breaks between any two tokens (XLA's parser reads tokens)."""
    odd = """HloModule styles /* header */ ,
  entry_computation_layout={(f32[2,3]{1,0})->f32[2]{0}}
add_f32 { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }
ENTRY main {
  x = f32[2,3]{1,0}
      parameter(0)  // the input
  y = f32[2,3]{1,0} exponential(x), metadata={op_name="e"
      source_line=2}
  m = f32[2,3]{1,0} multiply(x,
                             y)
  z = f32[] constant(0) ROOT r = f32[2]{0} reduce(m, z), dimensions={1},
      to_apply=add_f32
}
"""
    from tpugraphs_tools._xla_compat import hlo_bindings

    hlo_bindings().hlo_module_from_text(odd)  # XLA accepts it
    module = parse_hlo_text(odd)
    assert summary(module) == STYLES_EXPECTED
    assert module.header == {"entry_computation_layout": "{(f32[2,3]{1,0})->f32[2]{0}}"}
    a, b = featurize(module).arrays(), featurize(parse_hlo_text(PLAIN)).arrays()
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_scanner_errors_name_the_line_of_the_problem() -> None:
    text = "HloModule m ENTRY main { x = f32[4]{0} parameter(0)\n ROOT y = f32[4]{0} add(x, x\n}"
    with pytest.raises(HloParseError) as info:
        parse_hlo_text(text, source="m.hlo")
    assert str(info.value) == "m.hlo:2: '(' is not closed (found '}' at line 3)"
