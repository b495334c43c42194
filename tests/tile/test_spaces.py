"""Kernel config spaces: the shared interface, CPU options and GPU Triton tiles (no GPU needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tpugraphs_tools._xla_compat import compile_option_exists
from tpugraphs_tools.configs.kernel_config import (
    NUM_TILE_FEATURES,
    KernelConfig,
    KernelConfigSpace,
    bounds_features,
)
from tpugraphs_tools.configs.tile import CpuKernelOptions, default_space
from tpugraphs_tools.configs.tile_gpu import (
    TritonGemmTiles,
    gemm_dims,
    tile,
    valid_tiles,
)
from tpugraphs_tools.hlo import extract_kernels, parse_hlo_text

GPU_HLO = (Path(__file__).parent / "data" / "gpu_triton_gemm.hlo").read_text()

CONV = """\
HloModule k
ENTRY conv {
  x = f32[1,8,8,4]{3,2,1,0} parameter(0)
  w = f32[3,3,4,8]{3,2,1,0} parameter(1)
  ROOT c = f32[1,8,8,8]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
"""
LOOP = """\
HloModule k
ENTRY loop {
  x = f32[64]{0} parameter(0)
  e = f32[64]{0} exponential(x)
  ROOT n = f32[64]{0} negate(e)
}
"""


def test_both_spaces_implement_the_protocol():
    assert isinstance(CpuKernelOptions(), KernelConfigSpace)
    assert isinstance(TritonGemmTiles(), KernelConfigSpace)
    assert default_space("cpu").name == "cpu-kernel-options"
    assert default_space("gpu").name == "gpu-triton-tiles"
    with pytest.raises(ValueError):
        default_space("tpu")


def test_every_space_declares_whether_configs_need_a_fresh_compiler():
    """collect/tile/ reads the attribute directly: a space must say it, not rely on a
    getattr default."""
    assert "fresh_compiler_per_config" in KernelConfigSpace.__annotations__
    assert CpuKernelOptions().fresh_compiler_per_config is False
    assert TritonGemmTiles(mechanism="override").fresh_compiler_per_config is True
    assert TritonGemmTiles(mechanism="backend_config").fresh_compiler_per_config is False


def test_bounds_features_follow_tpugraphs_layout():
    feat = bounds_features((32, 2), (64, 128), (3, 4))
    assert feat.dtype == np.float32 and feat.shape == (NUM_TILE_FEATURES,)
    assert list(feat[:8]) == [32, 2, 0, 0, 0, 0, 34, 64]
    assert list(feat[8:16]) == [64, 128, 0, 0, 0, 0, 192, 8192]
    assert list(feat[16:]) == [3, 4, 0, 0, 0, 0, 7, 12]
    assert not bounds_features((), (), ()).any()  # empty lists: sum 0 and product 0


def test_cpu_configs_default_first_then_single_knobs_then_pairs():
    space = CpuKernelOptions(seed=3)
    conv = space.configs(parse_hlo_text(CONV))
    assert conv[0].is_default
    singles = [c for c in conv if len(c.settings) == 1]
    pairs = [c for c in conv if len(c.settings) == 2]
    assert conv[1:1 + len(singles)] == singles  # every one-knob change before any pair
    assert len(set(conv)) == len(conv)
    # fusion_emitters only where this jaxlib still has the option (gone in 0.12).
    emitters = compile_option_exists("xla_cpu_use_fusion_emitters", False)
    assert {"library", "opt_level", *(["fusion_emitters"] if emitters else [])} == {
        c.settings[0][0] for c in singles}
    # One op: no pass to disable; several ops: fusion/algsimp can be disabled.
    loop = space.configs(parse_hlo_text(LOOP))
    assert len([c for c in loop if "library" in c.as_dict() and len(c.settings) == 1]) == 7
    assert any("disable_passes" in c.as_dict() for c in loop)
    assert not any("disable_passes" in c.as_dict() for c in conv)
    assert pairs and CpuKernelOptions(seed=3).configs(parse_hlo_text(CONV)) == conv
    assert not any("preset" in c.as_dict() for c in conv)
    presets = compile_option_exists("xla_cpu_opt_preset", "CPU_OPT_PRESET_FAST_COMPILE")
    assert presets == any("preset" in c.as_dict() for c in CpuKernelOptions(
        include_presets=True).configs(parse_hlo_text(CONV)))  # not in jaxlib 0.9


def test_cpu_encoding_and_options():
    space = CpuKernelOptions()
    assert not space.encode(KernelConfig()).any()
    off = KernelConfig.of(library=())
    assert space.compile_options(off) == {"xla_cpu_experimental_ynn_fusion_type": ""}
    feat = space.encode(off)
    assert feat[0] == 1 and feat[1:8].sum() == 0  # set explicitly, to the empty set
    both = KernelConfig.of(library=("INDIVIDUAL_DOT", "INDIVIDUAL_CONVOLUTION"), opt_level=0,
                           fusion_emitters=False, disable_passes=("fusion", "algsimp"),
                           preset="FAST_COMPILE")
    feat = space.encode(both)
    assert list(np.flatnonzero(feat)) == [0, 1, 2, 6, 8, 9, 10, 16, 17, 22]
    assert (feat[6], feat[8], feat[22]) == (2, 3, 2)
    assert space.compile_options(both) == {
        "xla_cpu_experimental_ynn_fusion_type":
            "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION",
        "xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False,
        "xla_disable_hlo_passes": "fusion,algsimp", "xla_cpu_opt_preset": "CPU_OPT_PRESET_FAST_COMPILE",
    }
    assert space.apply("text", both) == "text"
    # Distinct configs of a kernel encode to distinct rows (labels stay distinguishable).
    rows = {space.encode(c).tobytes() for c in space.configs(parse_hlo_text(CONV))}
    assert len(rows) == len(space.configs(parse_hlo_text(CONV)))
    assert json.loads(both.to_json())["library"] == ["INDIVIDUAL_DOT", "INDIVIDUAL_CONVOLUTION"]


def test_cpu_realized_counts_library_fusions():
    opt = parse_hlo_text(GPU_HLO.replace("__triton_gemm", "__ynn_fusion"))
    config, facts = CpuKernelOptions().realized(opt, KernelConfig())
    assert config.is_default and facts == {"fusions": 3, "library_fusions": 2}


@pytest.fixture(scope="module")
def gemm_kernels():
    return extract_kernels(parse_hlo_text(GPU_HLO)).kernels


def test_gpu_kernels_and_gemm_dims(gemm_kernels):
    assert [k.label for k in gemm_kernels] == ["__triton_gemm", "__loop_fusion", "__triton_gemm"]
    assert [gemm_dims(k.module) for k in gemm_kernels] == [(128, 512, 256), None, (128, 64, 512)]
    # split_k pinned: whether the installed XLA applies it is by release (_xla_compat).
    space = TritonGemmTiles(seed=1, max_candidates=10, split_k=True)
    assert space.configs(gemm_kernels[1].module) == [KernelConfig()]  # no dot: no tiles
    configs = space.configs(gemm_kernels[2].module)
    assert configs[0].is_default and len(configs) == 11 and len(set(configs)) == 11
    for c in configs[1:]:
        s = c.as_dict()
        assert s["block_n"] <= 64 and 512 % s["split_k"] == 0
        assert s["block_k"] * s["split_k"] <= 512
    # Where XLA ignores split_k, no candidate sends it (the row says what ran).
    plain = TritonGemmTiles(seed=1, max_candidates=10, split_k=False).configs(
        gemm_kernels[2].module)
    assert len(plain) == 11 and all("split_k" not in c.as_dict() for c in plain)


def test_gpu_space_follows_installed_xla_on_split_k(monkeypatch):
    import tpugraphs_tools._xla_compat as compat

    for applies in (True, False):
        monkeypatch.setattr(compat, "triton_override_applies_split_k", lambda a=applies: a)
        assert TritonGemmTiles().split_k is applies


def test_valid_tiles_respect_problem_size():
    tiles = valid_tiles(16, 16, 16)
    assert tiles and all(t.as_dict()["block_m"] == 16 and t.as_dict()["split_k"] == 1
                         for t in tiles)


def test_gpu_encoding_in_tile_layout():
    space = TritonGemmTiles()
    feat = space.encode(tile(64, 128, 32, split_k=2, num_stages=3, num_warps=8))
    assert list(feat[[0, 1, 6, 7]]) == [32, 2, 34, 64]          # kernel_bounds: block_k, split_k
    assert list(feat[[8, 9, 14, 15]]) == [64, 128, 192, 8192]   # output_bounds: block_m, block_n
    assert list(feat[[16, 17, 22, 23]]) == [3, 8, 11, 24]       # input_bounds: stages, warps
    assert not space.encode(KernelConfig()).any()
