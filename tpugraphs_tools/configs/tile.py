"""Per-kernel configuration spaces of the tile collection: XLA:CPU's, and one per platform.

TpuGraphs' tile collection pairs each kernel with configs encoded as ``NUM_TILE_FEATURES``
floats (kernel, output and input bounds: six values, their sum and product each; 0 = padding).
A space (the ``KernelConfigSpace`` interface, ``kernel_config.py``) says which configs a kernel
can really be given on one backend, how each is encoded into those floats, and how it reaches
the compiler (compile options and/or an HLO rewrite). Only knobs the backend honours belong in
a space: XLA:CPU in jax 0.10.2 has no tile-size knob, so its space is ``cpu-kernel-options``
(library-vs-codegen choices and codegen options), never tiles; the GPU space (``tile_gpu.py``)
holds real Triton GEMM tiles. A later jax exposing CPU tiles adds a space, nothing else.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from tpugraphs_tools.configs.kernel_config import (
    NUM_TILE_FEATURES,
    KernelConfig,
    KernelConfigSpace,
)
from tpugraphs_tools.configs.tile_gpu import TritonGemmTiles
from tpugraphs_tools.hlo import Module

# ---- XLA:CPU kernel options ------------------------------------------------------------------

# LibraryFusionType values accepted by xla_cpu_experimental_ynn_fusion_type (jax 0.10.2).
LIBRARY_TYPES = ("INDIVIDUAL_DOT", "INDIVIDUAL_CONVOLUTION", "DOT", "ELTWISE", "REDUCE")
_DEFAULT_LIBRARY = ("INDIVIDUAL_DOT", "INDIVIDUAL_CONVOLUTION")
LIBRARY_CHOICES: tuple[tuple[str, ...], ...] = (
    (),                                          # library fusion off: every op is codegen'd
    ("INDIVIDUAL_DOT",),
    ("INDIVIDUAL_CONVOLUTION",),
    _DEFAULT_LIBRARY,
    (*_DEFAULT_LIBRARY, "DOT"),
    (*_DEFAULT_LIBRARY, "ELTWISE"),
    (*_DEFAULT_LIBRARY, "REDUCE"),
)
OPT_LEVELS = (0, 1, 2)                           # XLA's default is 3
PASS_CHOICES = (("fusion",), ("algsimp",), ("fusion", "algsimp"))
PASSES = ("fusion", "algsimp")
PRESETS = ("FAST_COMPILE", "FAST_RUNTIME")
_TRIVIAL_OPS = frozenset({"parameter", "constant"})


class CpuKernelOptions:
    """``cpu-kernel-options``: per-kernel compile options that change XLA:CPU's code.

    Knobs (see docs/tile-collection.md for what each changed on resnet kernels):
    ``library`` (which ops YNNPACK takes: ``xla_cpu_experimental_ynn_fusion_type``),
    ``opt_level`` (``xla_backend_optimization_level``, LLVM), ``fusion_emitters``
    (``xla_cpu_use_fusion_emitters``), ``disable_passes`` (``xla_disable_hlo_passes``) and
    ``preset`` (``xla_cpu_opt_preset``; a no-op on every resnet kernel measured, so offered
    only with ``include_presets``).
    """

    name = "cpu-kernel-options"
    kernel_form = "inlined"
    fresh_compiler_per_config = False  # XLA:CPU keeps no per-process tuning cache

    def __init__(self, seed: int = 0, include_presets: bool = False) -> None:
        self.seed = seed
        self.include_presets = include_presets

    def knobs(self, kernel: Module) -> dict[str, list[Any]]:
        """Non-default values of each knob that can matter for ``kernel``."""
        ops = [i.opcode for _, i in kernel.instructions() if i.opcode not in _TRIVIAL_OPS]
        knobs: dict[str, list[Any]] = {
            # Every choice for every kernel: ``+ELTWISE`` hands loop kernels to YNNPACK, and
            # multi-conv fusions react to choices single convolutions ignore.
            "library": list(LIBRARY_CHOICES),
            "opt_level": list(OPT_LEVELS),
            "fusion_emitters": [False],
        }
        if len(ops) > 1:
            knobs["disable_passes"] = list(PASS_CHOICES)
        if self.include_presets:
            knobs["preset"] = list(PRESETS)
        return {k: v for k, v in knobs.items() if self._supported(k, v[0])}

    def _supported(self, knob: str, value: Any) -> bool:
        """A knob whose option this jaxlib's XLA lacks is not offered (docs/versions.md)."""
        from tpugraphs_tools._xla_compat import compile_option_exists

        options = self.compile_options(KernelConfig.of(**{knob: value}))
        return all(compile_option_exists(k, v) for k, v in options.items())

    def configs(self, kernel: Module) -> list[KernelConfig]:
        """Default, then every one-knob change (knobs interleaved), then seeded two-knob pairs."""
        knobs = self.knobs(kernel)
        singles = [[KernelConfig.of(**{k: v}) for v in values] for k, values in knobs.items()]
        order = [c for group in itertools.zip_longest(*singles) for c in group if c is not None]
        pairs = [KernelConfig.of(**{a: va, b: vb})
                 for a, b in itertools.combinations(knobs, 2)
                 for va in knobs[a] for vb in knobs[b]]
        rng = np.random.default_rng(self.seed)
        return [KernelConfig(), *order, *(pairs[i] for i in rng.permutation(len(pairs)))]

    def infeasible(self, kernel: Module, config: KernelConfig) -> str | None:
        """Every XLA:CPU option value runs (an unsupported one fails its compile)."""
        return None

    def encode(self, config: KernelConfig) -> np.ndarray:
        """Layout ``cpu-kernel-options`` v1 (docs/tile-collection.md); zeros = compiler default.

        0: library set explicitly; 1–5: each LIBRARY_TYPES member in the set; 6: set size;
        8: 3 − opt_level; 9: fusion emitters off; 10: preset (1 FAST_COMPILE, 2 FAST_RUNTIME);
        16–17: fusion / algsimp disabled; 22: passes disabled. Others 0.
        """
        s = config.as_dict()
        feat = np.zeros(NUM_TILE_FEATURES, dtype=np.float32)
        if "library" in s:
            types = tuple(s["library"])
            feat[0] = 1.0
            for i, t in enumerate(LIBRARY_TYPES):
                feat[1 + i] = float(t in types)
            feat[6] = len(types)
        if "opt_level" in s:
            feat[8] = 3 - int(s["opt_level"])
        if s.get("fusion_emitters") is False:
            feat[9] = 1.0
        if "preset" in s:
            feat[10] = PRESETS.index(s["preset"]) + 1
        passes = tuple(s.get("disable_passes", ()))
        for i, p in enumerate(PASSES):
            feat[16 + i] = float(p in passes)
        feat[22] = len(passes)
        return feat

    def compile_options(self, config: KernelConfig) -> dict[str, Any]:
        s = config.as_dict()
        opts: dict[str, Any] = {}
        if "library" in s:
            opts["xla_cpu_experimental_ynn_fusion_type"] = ",".join(
                f"LIBRARY_FUSION_TYPE_{t}" for t in s["library"])
        if "opt_level" in s:
            opts["xla_backend_optimization_level"] = int(s["opt_level"])
        if "fusion_emitters" in s:
            opts["xla_cpu_use_fusion_emitters"] = bool(s["fusion_emitters"])
        if "disable_passes" in s:
            opts["xla_disable_hlo_passes"] = ",".join(s["disable_passes"])
        if "preset" in s:
            opts["xla_cpu_opt_preset"] = f"CPU_OPT_PRESET_{s['preset']}"
        return opts

    def apply(self, text: str, config: KernelConfig) -> str:
        return text

    def realized(self, optimized: Module, config: KernelConfig) -> tuple[KernelConfig,
                                                                          dict[str, Any]]:
        """Options leave no trace in the HLO; report which kernels went to a library."""
        fusions = [i for _, i in optimized.instructions() if i.opcode == "fusion"]
        library = sum(1 for i in fusions if "__ynn_fusion" in i.attrs.get("backend_config", ""))
        return config, {"fusions": len(fusions), "library_fusions": library}


def default_space(platform: str, seed: int = 0) -> KernelConfigSpace:
    """The config space of a jax platform (``cpu``, ``gpu``/``cuda``)."""
    if platform == "cpu":
        return CpuKernelOptions(seed=seed)
    if platform in ("gpu", "cuda", "rocm"):
        return TritonGemmTiles(seed=seed)
    raise ValueError(f"no kernel config space for platform {platform!r}")
