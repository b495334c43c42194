"""The version-compat layer: each binding tgt needs works on the installed jax, whichever branch
(``xla_client.hlo`` of jaxlib >= 0.10 or ``_xla`` of 0.9) it takes. CI runs this file on the
lowest and the newest supported jax (.ci/run)."""

from __future__ import annotations

import numpy as np
import pytest

from tpugraphs_tools import _xla_compat as X
from tpugraphs_tools.compiler import compile as C

NEG = """\
HloModule neg, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}

ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  ROOT n = f32[2,3]{1,0} negate(a)
}
"""


def test_versions_are_the_installed_ones() -> None:
    import jax
    import jaxlib

    assert X.versions() == (jax.__version__, jaxlib.__version__)


def test_text_proto_round_trip(tiny_hlo: str) -> None:
    proto = X.hlo_module_from_text(tiny_hlo).as_serialized_hlo_module_proto()
    text = X.hlo_module_from_proto(proto).to_string()
    assert "dot(" in text and "reduce(" in text


def test_lowered_and_compiled_protos_parse() -> None:
    import jax
    import jax.numpy as jnp

    lowered = jax.jit(lambda x: jnp.tanh(x) * 2).lower(jax.ShapeDtypeStruct((4,), jnp.float32))
    assert "tanh" in X.hlo_module_from_proto(X.lowered_hlo_proto(lowered)).to_string()
    compiled = lowered.compile()
    assert "ENTRY" in X.hlo_module_from_proto(X.compiled_hlo_proto(compiled)).to_string()


def test_lowered_proto_fallback_through_stablehlo() -> None:
    """jax releases without ``compiler_ir("hlo")`` take the StableHLO conversion branch."""
    import jax
    import jax.numpy as jnp

    lowered = jax.jit(lambda x: x + 1).lower(jax.ShapeDtypeStruct((3,), jnp.float32))

    class NoHloDialect:
        def compiler_ir(self, dialect: str) -> None:
            raise ValueError(f"unknown dialect {dialect}")

        def as_text(self) -> str:
            return lowered.as_text()

    text = X.hlo_module_from_proto(X.lowered_hlo_proto(NoHloDialect())).to_string()
    assert "add(" in text


def test_compile_run_serialize_round_trip() -> None:
    import jax

    from tpugraphs_tools.hlo import parse_hlo_text

    sig = C.entry_signature(parse_hlo_text(NEG))
    exe = C.compile_text(NEG, sig, {"xla_cpu_enable_fast_math": False}, "cpu")
    assert "negate" in X.executable_hlo_text(exe)
    device = jax.devices("cpu")[0]
    inputs = C.make_inputs(sig, seed=0, backend="cpu")
    again = X.deserialize_executable(X.serialize_executable(exe, device), device)
    out = [np.asarray(o) for o in X.execute(again, inputs)]
    np.testing.assert_array_equal(out[0], -np.asarray(inputs[0]))


def test_unknown_compile_option_is_rejected_by_xla() -> None:
    from tpugraphs_tools.hlo import parse_hlo_text

    sig = C.entry_signature(parse_hlo_text(NEG))
    with pytest.raises(Exception, match="xla_tgt_no_such_flag"):
        C.compile_text(NEG, sig, {"xla_tgt_no_such_flag": 1}, "cpu")


@pytest.mark.parametrize("flag, value", [
    ("xla_gpu_override_gemm_autotuner", "block_m: 16 block_n: 16 block_k: 16 split_k: 1 "
                                        "num_stages: 1 num_warps: 4 num_ctas: 1"),
    ("xla_gpu_gemm_autotuner_override_file", ""),
    ("xla_gpu_autotune_level", 0),
    ("xla_gpu_cublas_fallback", False),
])
def test_gpu_tile_flags_exist_in_this_jaxlib(flag: str, value: object) -> None:
    """The GPU tile route relies on these DebugOptions; XLA accepts them on any backend."""
    from tpugraphs_tools.hlo import parse_hlo_text

    sig = C.entry_signature(parse_hlo_text(NEG))
    C.compile_text(NEG, sig, {flag: value}, "cpu")


def test_mlir_route_drops_fusion_backend_config() -> None:
    """Why tile configs travel as compile options: the HLO→MLIR import drops backend_config.
    If a jaxlib starts keeping it, this fails and configs/tile_gpu.py can allow that route."""
    assert X.mlir_route_keeps_backend_config() is False


def test_hlo_bindings_branch_of_this_jaxlib() -> None:
    """jaxlib >= 0.10 has ``xla_client.hlo``; 0.9 only ``_xla`` (CI's lowest venv runs this)."""
    xc = X.xla_client()
    ns = X.hlo_bindings()
    assert ns is (xc.hlo if hasattr(xc, "hlo") else xc._xla)


def test_missing_binding_fails_with_a_clear_error(monkeypatch) -> None:
    class Bare:
        _xla = object()

    monkeypatch.setattr(X, "xla_client", lambda: Bare())
    with pytest.raises(X.XlaCompatError, match=r"no XLA binding for HloModule.*docs/versions\.md"):
        X.hlo_module_from_text(NEG)


def test_compile_option_probe() -> None:
    assert X.compile_option_exists("xla_backend_optimization_level", 2) is True
    assert X.compile_option_exists("xla_tgt_no_such_flag", 1) is False


def test_cpu_space_offers_only_options_this_xla_knows() -> None:
    """``fusion_emitters`` (gone in jaxlib 0.12) and ``preset`` (not in 0.9) come and go."""
    from tpugraphs_tools.configs.tile import CpuKernelOptions
    from tpugraphs_tools.hlo import parse_hlo_text

    space = CpuKernelOptions(include_presets=True)
    knobs = space.knobs(parse_hlo_text(NEG))
    assert {"library", "opt_level"} <= set(knobs)
    assert ("fusion_emitters" in knobs) == X.compile_option_exists(
        "xla_cpu_use_fusion_emitters", False)
    assert ("preset" in knobs) == X.compile_option_exists(
        "xla_cpu_opt_preset", "CPU_OPT_PRESET_FAST_COMPILE")
