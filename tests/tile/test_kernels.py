"""Kernel extraction on hand-written optimized-style HLO: structure, constants, dedupe, bitcasts."""

from __future__ import annotations

import numpy as np
import pytest

from tpugraphs_tools.compiler import compile as C
from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import fingerprint, parse_hlo_text
from tpugraphs_tools.hlo.kernels import (
    compilable_text,
    extract_kernels,
    kernel_cost,
    kernel_text,
)

# The shape of an XLA:CPU optimized module: two identical loop fusions, a reduce-window fed by
# an entry constant (its -inf init), a standalone dot and a bitcast-only fusion.
OPTIMIZED = """\
HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[4,8]{1,0}, f32[4,8]{1,0}, f32[8,3]{1,0})->(f32[4,3]{1,0}, f32[2,4]{1,0})}

%max_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}

%fused_exp (param_0: f32[4,8]) -> f32[4,8] {
  %param_0 = f32[4,8]{1,0} parameter(0)
  %c2 = f32[] constant(2)
  %b2 = f32[4,8]{1,0} broadcast(%c2), dimensions={}
  %mul = f32[4,8]{1,0} multiply(%param_0, %b2), metadata={op_name="mul" stack_frame_id=3}
  ROOT %e = f32[4,8]{1,0} exponential(%mul)
}

%fused_exp.1 (param_0.1: f32[4,8]) -> f32[4,8] {
  %param_0.1 = f32[4,8]{1,0} parameter(0)
  %c2.1 = f32[] constant(2)
  %b2.1 = f32[4,8]{1,0} broadcast(%c2.1), dimensions={}
  %mul.1 = f32[4,8]{1,0} multiply(%param_0.1, %b2.1)
  ROOT %e.1 = f32[4,8]{1,0} exponential(%mul.1)
}

%wrapped_rw_computation (param_0.2: f32[4,8], param_1.2: f32[]) -> f32[2,4] {
  %param_0.2 = f32[4,8]{1,0} parameter(0)
  %param_1.2 = f32[] parameter(1)
  ROOT %rw = f32[2,4]{1,0} reduce-window(%param_0.2, %param_1.2), window={size=2x2 stride=2x2}, to_apply=%max_f32
}

%fused_transpose_bitcast (param_0.3: f32[4,3]) -> f32[4,3] {
  %param_0.3 = f32[4,3]{1,0} parameter(0)
  %bt = f32[3,4]{0,1} bitcast(%param_0.3)
  %tr = f32[4,3]{1,0} transpose(%bt), dimensions={1,0}
  ROOT %neg = f32[4,3]{1,0} negate(%tr)
}

ENTRY %main.9 (x: f32[4,8], y: f32[4,8], w: f32[8,3]) -> (f32[4,3], f32[2,4]) {
  %x = f32[4,8]{1,0} parameter(0)
  %y = f32[4,8]{1,0} parameter(1)
  %w = f32[8,3]{1,0} parameter(2)
  %ninf = f32[] constant(-inf)
  %exp_fusion = f32[4,8]{1,0} fusion(%x), kind=kLoop, calls=%fused_exp
  %exp_fusion.1 = f32[4,8]{1,0} fusion(%y), kind=kLoop, calls=%fused_exp.1
  %wrapped_rw = f32[2,4]{1,0} fusion(%exp_fusion.1, %ninf), kind=kLoop, calls=%wrapped_rw_computation
  %dot.2 = f32[4,3]{1,0} dot(%exp_fusion, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bitcast_fusion = f32[4,3]{1,0} fusion(%dot.2), kind=kLoop, calls=%fused_transpose_bitcast
  ROOT %out = (f32[4,3]{1,0}, f32[2,4]{1,0}) tuple(%bitcast_fusion, %wrapped_rw)
}
"""


@pytest.fixture(scope="module")
def module():
    return parse_hlo_text(OPTIMIZED)


def test_every_kernel_extracted_once_with_parent_links(module):
    ex = extract_kernels(module)
    names = [k.name for k in ex.kernels]
    # exp_fusion.1 is exp_fusion under another name: one kernel, two parent instructions.
    assert names == ["exp_fusion", "wrapped_rw", "dot.2", "bitcast_fusion"]
    assert ex.kernels[0].instances == ["exp_fusion", "exp_fusion.1"]
    assert len({k.fingerprint for k in ex.kernels}) == 4
    assert ex.skipped == {}
    for k in ex.kernels:
        assert fingerprint(parse_hlo_text(k.text)) == k.fingerprint
        assert "stack_frame_id" not in k.text  # metadata is dropped
        graph = featurize(k.module)
        assert graph.num_nodes == k.module.instruction_count


def test_entry_constant_is_copied_in_and_parameters_renumbered(module):
    inst = next(i for i in module.entry.instructions if i.name == "wrapped_rw")
    kernel = parse_hlo_text(kernel_text(module, inst))
    entry = {i.name: i for i in kernel.entry.instructions}
    assert entry["param_1.2"].opcode == "constant"
    assert entry["param_1.2"].attrs["literal"] == "-inf"
    assert [i.parameter_number for i in kernel.entry.instructions
            if i.opcode == "parameter"] == [0]
    assert [c.name for c in kernel.computations] == ["max_f32", "wrapped_rw"]


def test_standalone_op_gets_one_parameter_per_operand(module):
    inst = next(i for i in module.entry.instructions if i.name == "dot.2")
    kernel = parse_hlo_text(kernel_text(module, inst))
    params = [i for i in kernel.entry.instructions if i.opcode == "parameter"]
    assert [p.shape.dims for p in params] == [(4, 8), (8, 3)]
    assert kernel.entry.root.opcode == "dot"
    assert kernel.entry.root.operands == ["arg0", "arg1"]


def test_max_kernels_keeps_the_costliest_in_program_order(module):
    ex = extract_kernels(module, max_kernels=2)
    costs = {k.name: kernel_cost(k.module) for k in extract_kernels(module).kernels}
    top = sorted(costs, key=lambda n: -costs[n])[:2]
    assert [k.name for k in ex.kernels] == [n for n in costs if n in top]
    assert costs["dot.2"] == 4 * 3 * 8
    assert ex.left_out == [n for n in costs if n not in top]  # named, so a summary can say
    assert extract_kernels(module).left_out == []


def test_wrapped_form_keeps_the_fusion(module):
    ex = extract_kernels(module)
    wrapped = parse_hlo_text(ex.kernels[0].wrapped_text)
    assert wrapped.entry.root.opcode == "fusion"
    assert wrapped.entry.root.attrs["kind"] == "kLoop"
    assert next(k for k in ex.kernels if k.name == "dot.2").wrapped_text is None


def test_layout_changing_bitcast_is_compiled_with_its_meaning(module):
    """XLA's text→MLIR route drops layouts; the rewritten bitcast must still compute the same."""
    kernel = next(k for k in extract_kernels(module).kernels if k.name == "bitcast_fusion")
    text = compilable_text(kernel.module)
    assert " bitcast(" not in text and "transpose(" in text
    sig = C.entry_signature(kernel.module)
    exe = C.compile_text(text, sig)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    (out,) = C.run(exe, [_put(x)])
    # f32[4,3]{1,0} bits read as f32[3,4]{0,1} is the same logical matrix transposed, so the
    # transpose back gives x again: the kernel computes -x.
    np.testing.assert_array_equal(np.asarray(out), -x)


def _put(value):
    import jax

    return jax.device_put(value, jax.devices()[0])


NESTED = """\
HloModule gpu_nested

%lhs_fusion_comp (p0: f32[16,32]) -> f32[16,32] {
  %p0 = f32[16,32]{1,0} parameter(0)
  ROOT %neg = f32[16,32]{1,0} negate(%p0)
}

%gemm_comp (param_0: f32[16,32], param_1: f32[32,8]) -> f32[16,8] {
  %param_0 = f32[16,32]{1,0} parameter(0)
  %lhs = f32[16,32]{1,0} fusion(%param_0), kind=kCustom, calls=%lhs_fusion_comp, backend_config={"fusion_backend_config":{"kind":"__triton_nested_gemm_fusion","block_level_fusion_config":{"output_tiles":[{"sizes":["16","32"]}]}}}
  %param_1 = f32[32,8]{1,0} parameter(1)
  ROOT %d = f32[16,8]{1,0} dot(%lhs, %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %main (a: f32[16,32], b: f32[32,8]) -> f32[16,8] {
  %a = f32[16,32]{1,0} parameter(0)
  %b = f32[32,8]{1,0} parameter(1)
  ROOT %gemm = f32[16,8]{1,0} fusion(%a, %b), kind=kCustom, calls=%gemm_comp, backend_config={"fusion_backend_config":{"kind":"__triton_nested_gemm_fusion","block_level_fusion_config":{"output_tiles":[{"sizes":["16","8"]}],"num_warps":"4","num_stages":"1","num_ctas":"1"}}}
}
"""


def test_nested_fusions_are_inlined_into_the_kernel_body():
    """XLA:GPU nests operand fusions inside a Triton GEMM fusion; the inlined kernel is flat,
    so the compiler re-forms (and re-tiles) the GEMM from plain ops."""
    (kernel,) = extract_kernels(parse_hlo_text(NESTED)).kernels
    entry = kernel.module.entry
    assert [i.opcode for i in entry.instructions] == ["parameter", "negate", "parameter", "dot"]
    assert entry.root.name == "d" and entry.root.operands == ["lhs", "param_1"]
    assert [c.name for c in kernel.module.computations] == ["gemm"]
    sig = C.entry_signature(kernel.module)
    a = np.ones((16, 32), np.float32)
    b = np.full((32, 8), 0.5, np.float32)
    (out,) = C.run(C.compile_text(kernel.measure_text, sig), [_put(a), _put(b)])
    np.testing.assert_allclose(np.asarray(out), -(a @ b))
