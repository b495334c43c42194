"""GPU Triton tiles without a GPU: how a tile reaches XLA (compile options, since the HLO→MLIR
route drops backend_config) and what is read back from hand-written GPU-optimized HLO."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tpugraphs_tools import _xla_compat
from tpugraphs_tools.configs.kernel_config import KernelConfig
from tpugraphs_tools.configs.tile_gpu import (
    TritonGemmTiles,
    override_key,
    override_textproto,
    tile,
)
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.hlo import extract_kernels, parse_hlo_text

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


# -- recorded XLA:GPU modules (jax 0.11.2, H200): tests/tile/data/gpu_h200/README.md --------
H200 = DATA / "gpu_h200"


def _read(name: str):
    return parse_hlo_text((H200 / name).read_text())


@pytest.mark.parametrize(("name", "want"), [
    ("override_32x64.hlo", tile(32, 64, 32, num_stages=3, num_warps=4)),
    ("default_4096.hlo", tile(128, 256, 64, num_stages=3, num_warps=8)),
    ("autotune0.hlo", tile(16, 8, 16, num_stages=1, num_warps=2)),
])
def test_whole_tile_read_from_recorded_nested_form(name, want):
    """Every field observed: block_k from the dot's own backend_config sizes."""
    realized, facts = TritonGemmTiles(split_k=True).realized(_read(name), KernelConfig())
    assert facts["unobserved"] == [] and realized == want


def test_forced_tile_matches_its_request_on_the_recorded_override():
    asked = tile(32, 64, 32, split_k=None, num_stages=3, num_warps=4)
    realized, facts = TritonGemmTiles(split_k=False).realized(_read("override_32x64.hlo"), asked)
    assert facts["matches_request"] is True and "split_k" not in facts["agreement"]
    assert realized.as_dict()["split_k"] == 1  # read back even when not requested
    _, facts = TritonGemmTiles().realized(_read("override_32x64.hlo"),
                                          tile(32, 64, 64, split_k=None, num_warps=4))
    assert facts["agreement"]["block_k"] is False and facts["matches_request"] is False


def test_split_k_is_a_reduce_over_the_dots_batch_dim_not_any_reduce():
    """gpt small: XLA split the QKV GEMM in 2; the attention GEMM's softmax reduce is not
    split-k (the first reader of this module took it for split_k 256)."""
    from tpugraphs_tools.configs.tile_gpu_realized import gemm_fusions, read_tile

    module = _read("gpt_split_k_and_softmax.hlo")
    tiles = {f.name: read_tile(module, f) for f in gemm_fusions(module)}
    assert tiles["gemm_fusion_dot.37"] == {"block_m": 128, "block_n": 64, "block_k": 32,
                                           "split_k": 2, "num_stages": 3, "num_warps": 2,
                                           "num_ctas": 1}
    assert tiles["gemm_fusion_dot.1"]["split_k"] == 1
    assert tiles["gemm_fusion_dot.1"]["block_k"] == 64


def test_output_tile_follows_the_root_dims_back_to_m_and_n():
    """bert's kernel whose dot (batch, m=512, n=128, layout {1,2,0}) sits under a bitcast root
    (batch, n, m): the dataset read every 128×64 request back as 64×128. The recorded kernel
    body wrapped in the nested GEMM fusion XLA makes of it, with the output tile the rows saw."""
    body = (H200 / "bert_kernel_transposed_root.hlo").read_text().splitlines()
    inner = "\n".join(body[2:-1])
    text = (
        "HloModule k\n\n%gemm_computation (parameter_0.5: bf16[128,16,128], parameter_1.5: "
        "bf16[16,128,512]) -> f32[16,128,512] {\n" + inner + "\n}\n\n"
        "ENTRY %main (a: bf16[128,16,128], b: bf16[16,128,512]) -> f32[16,128,512] {\n"
        "  %a = bf16[128,16,128]{2,1,0} parameter(0)\n"
        "  %b = bf16[16,128,512]{2,1,0} parameter(1)\n"
        "  ROOT %gemm = f32[16,128,512]{2,1,0} fusion(%a, %b), kind=kCustom, "
        "calls=%gemm_computation, backend_config={\"fusion_backend_config\":{\"kind\":"
        "\"__triton_nested_gemm_fusion\",\"block_level_fusion_config\":{\"output_tiles\":"
        "[{\"sizes\":[\"1\",\"64\",\"128\"]}],\"num_warps\":\"4\",\"num_ctas\":1,"
        "\"num_stages\":2}}}\n}\n")
    asked = tile(128, 64, 64, split_k=None, num_stages=2, num_warps=4)
    _, facts = TritonGemmTiles().realized(parse_hlo_text(text), asked)
    assert facts["tile"]["block_m"] == 128 and facts["tile"]["block_n"] == 64
    assert facts["matches_request"] is True


def test_split_k_left_out_where_the_override_does_not_apply_it(monkeypatch):
    """jax 0.11.2: split_k in the override is deprecated and ran as 1: not in the space."""
    without = TritonGemmTiles(split_k=False)
    kernel = parse_hlo_text((H200 / "bert_kernel_transposed_root.hlo").read_text())
    configs = without.configs(kernel)[1:]
    assert configs and all("split_k" not in c.as_dict() for c in configs)
    assert "split_k" not in without.compile_options(configs[0])["xla_gpu_override_gemm_autotuner"]
    assert any("split_k" in c.as_dict() for c in TritonGemmTiles(split_k=True).configs(kernel))
    monkeypatch.setattr("jaxlib.__version__", "0.11.2")
    assert _xla_compat.triton_override_applies_split_k() is False
    assert TritonGemmTiles().split_k is False
    monkeypatch.setattr("jaxlib.__version__", "0.10.2")
    assert _xla_compat.triton_override_applies_split_k() is True


def test_summary_counts_configs_that_ran_another_tile_than_asked():
    from tpugraphs_tools.collect.tile.summary import summarize
    from tpugraphs_tools.measure import traits_of

    def row(index, matches):
        return {"status": "ok", "is_default": index == 0, "relative_to_default": 1.0,
                "relative_ci_low": None, "relative_ci_high": None, "runtime_cv": 0.01,
                "config": "{}", "realized": json.dumps({"matches_request": matches}),
                "rounds": None, "stop_reason": None}

    graph = {"graph_id": "g", "parent_instruction": "k"}
    rows = [row(0, None), row(1, True), row(2, False), row(3, False)]
    summary = summarize([(graph, rows)], {}, "gpu-triton-tiles", traits_of("fixed"))
    assert summary.not_as_requested == 2
