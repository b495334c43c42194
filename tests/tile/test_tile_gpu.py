"""GPU Triton tiles without a GPU: how a tile reaches XLA (compile options, since the HLO→MLIR
route drops backend_config) and what is read back from hand-written GPU-optimized HLO."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tpugraphs_tools import _xla_compat
from tpugraphs_tools.collect.kernels import extract_kernels
from tpugraphs_tools.configs.tile import KernelConfig
from tpugraphs_tools.configs.tile_gpu import (
    TritonGemmTiles,
    override_key,
    override_textproto,
    tile,
)
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.hlo import parse_hlo_text

DATA = Path(__file__).parent / "data"
GPU_HLO = (DATA / "gpu_triton_gemm.hlo").read_text()
NESTED = (DATA / "gpu_nested_splitk.hlo").read_text()
LOOP = """\
HloModule k
ENTRY loop {
  x = f32[64]{0} parameter(0)
  ROOT n = f32[64]{0} negate(x)
}
"""


@pytest.fixture(scope="module")
def gemm_kernels():
    return extract_kernels(parse_hlo_text(GPU_HLO)).kernels


def test_override_mechanism_is_the_default_and_profiles_nothing():
    space = TritonGemmTiles()
    config = tile(64, 32, 16, split_k=2, num_stages=2, num_warps=4)
    assert space.mechanism == "override" and space.kernel_form == "inlined"
    assert space.fresh_compiler_per_config  # XLA's autotune cache is per process
    opts = space.compile_options(config)
    assert opts == {"xla_gpu_override_gemm_autotuner":
                    "block_m: 64 block_n: 32 block_k: 16 split_k: 2 num_stages: 2 "
                    "num_warps: 4 num_ctas: 1",
                    "xla_gpu_cublas_fallback": False}
    assert override_key(config) == opts["xla_gpu_override_gemm_autotuner"]
    assert space.compile_options(KernelConfig()) == {}  # the default: XLA's autotuner picks
    assert space.apply("hlo", config) == "hlo"


def test_override_file_mechanism_writes_one_config(tmp_path):
    space = TritonGemmTiles(mechanism="override_file", override_dir=tmp_path)
    config = tile(64, 32, 16, split_k=1, num_stages=2, num_warps=4)
    text = override_textproto(config)
    assert text.startswith("config {") and "block_m: 64" in text and "num_ctas: 1" in text
    opts = space.compile_options(config)
    path = Path(opts["xla_gpu_gemm_autotuner_override_file"])
    assert path.parent == tmp_path and path.read_text() == text
    assert space.compile_options(config) == opts  # content-addressed: same file again


def test_backend_config_mechanism_refused_while_the_route_drops_it(gemm_kernels):
    space = TritonGemmTiles(mechanism="backend_config")
    assert space.kernel_form == "wrapped" and not space.fresh_compiler_per_config
    with pytest.raises(ConfigError, match="drops fusion backend_config"):
        space.apply(gemm_kernels[0].wrapped_text, tile(16, 32, 64))
    with pytest.raises(ValueError):
        TritonGemmTiles(mechanism="magic")


def test_backend_config_rewrite_where_a_route_keeps_it(gemm_kernels, monkeypatch):
    """The branch a jaxlib keeping backend_config would take."""
    monkeypatch.setattr(_xla_compat, "mlir_route_keeps_backend_config", lambda: True)
    space = TritonGemmTiles(mechanism="backend_config")
    config = tile(16, 32, 64, split_k=4, num_stages=1, num_warps=2)
    text = space.apply(gemm_kernels[0].wrapped_text, config)
    fbc = json.loads(parse_hlo_text(text).entry.root.attrs["backend_config"])[
        "fusion_backend_config"]
    assert fbc["triton_gemm_config"]["block_k"] == "64"
    assert space.realized(parse_hlo_text(text), config)[1]["matches_request"] is True
    with pytest.raises(ConfigError, match="no __triton_gemm"):
        space.apply(gemm_kernels[1].wrapped_text, config)


def test_realized_from_triton_gemm_config_observes_every_field(gemm_kernels):
    space = TritonGemmTiles()
    module = parse_hlo_text(gemm_kernels[2].wrapped_text)
    realized, facts = space.realized(module, KernelConfig())
    assert realized == tile(32, 64, 64, split_k=4, num_stages=2, num_warps=4)
    assert facts["matches_request"] is None and facts["unobserved"] == []
    realized, facts = space.realized(module, tile(64, 64, 64, split_k=4))
    assert facts["matches_request"] is False and facts["agreement"]["block_m"] is False
    assert realized.as_dict()["block_m"] == 32  # what ran, not what was asked


def test_realized_nested_split_k_form_reads_block_k_and_split_k():
    space = TritonGemmTiles()
    asked = tile(16, 64, 32, split_k=4, num_stages=3, num_warps=4)
    realized, facts = space.realized(parse_hlo_text(NESTED), asked)
    assert facts["gemm_fusion"] == "gemm_fusion_dot"  # not a nested operand fusion
    assert realized == asked and facts["matches_request"] is True
    _, facts = space.realized(parse_hlo_text(NESTED), tile(16, 64, 64, split_k=2))
    assert facts["agreement"]["block_k"] is False and facts["agreement"]["split_k"] is False


def test_unobservable_field_is_null_never_the_request():
    """Without the operand fusion's tile, block_k cannot be seen: stored None, encoded 0."""
    text = NESTED.replace('"output_tiles":[{"sizes":["16","1","32"]}]', '"output_tiles":[]')
    space = TritonGemmTiles()
    asked = tile(16, 64, 32, split_k=4, num_stages=3, num_warps=4)
    realized, facts = space.realized(parse_hlo_text(text), asked)
    assert facts["tile"]["block_k"] is None and facts["unobserved"] == ["block_k"]
    assert "block_k" not in realized.as_dict()
    assert facts["agreement"]["block_k"] is None and facts["matches_request"] is None
    feat = space.encode(realized)
    assert feat[0] == 0 and feat[1] == 4  # kernel_bounds: block_k unobserved, split_k seen


def test_no_gemm_fusion_reads_back_nothing():
    realized, facts = TritonGemmTiles().realized(parse_hlo_text(LOOP), tile(16, 16, 16))
    assert realized.is_default
    assert facts == {"gemm_fusion": None, "tile": None, "matches_request": False}
