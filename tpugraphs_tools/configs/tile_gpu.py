"""``gpu-triton-tiles``: real Triton GEMM tile configs, forced per kernel on XLA:GPU.

XLA:GPU compiles a matmul fusion with a Triton tile (block_m/n/k, split_k, num_stages,
num_warps, num_ctas) its autotuner picks. Two ways to force one, both per kernel because every
kernel is compiled as its own module:

* ``override_file`` (default): ``xla_gpu_gemm_autotuner_override_file`` names a
  ``TritonGemmConfigsProto`` textproto whose configs replace the autotuner's Triton search
  space; with a single config and ``xla_gpu_cublas_fallback=false`` that tile is the only
  candidate. Works on the inlined kernel body (XLA re-forms the GEMM fusion).
* ``backend_config``: the wrapped kernel keeps its ``__triton_gemm`` fusion and the tile is
  written into ``fusion_backend_config.triton_gemm_config``; the autotuner skips fusions
  that already carry a config.

Which one a given jaxlib honours must be checked on a GPU (``bench/gpu/run_tile_gpu.sh``): the
tile the compiler really used is read back from the optimized kernel (``realized``) and stored.
Encoding into TpuGraphs' 24 tile features: kernel_bounds = (block_k, split_k), output_bounds =
(block_m, block_n), input_bounds = (num_stages, num_warps), each followed by sum and product.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from tpugraphs_tools.configs.tile import KernelConfig, bounds_features
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.hlo import attributes as A
from tpugraphs_tools.hlo.module import Instruction, Module

FIELDS = ("block_m", "block_n", "block_k", "split_k", "num_stages", "num_warps", "num_ctas")
GRID = {
    "block_m": (16, 32, 64, 128, 256), "block_n": (16, 32, 64, 128, 256),
    "block_k": (16, 32, 64, 128), "split_k": (1, 2, 4, 8, 16),
    "num_stages": (1, 2, 3, 4), "num_warps": (2, 4, 8),
}
GEMM_KINDS = ("__triton_gemm", "__triton_nested_gemm_fusion")
_TRITON_CONFIG = re.compile(r'"triton_gemm_config"\s*:\s*\{[^{}]*\}')


def tile(block_m: int, block_n: int, block_k: int, split_k: int = 1, num_stages: int = 1,
         num_warps: int = 4, num_ctas: int = 1) -> KernelConfig:
    return KernelConfig.of(block_m=block_m, block_n=block_n, block_k=block_k, split_k=split_k,
                           num_stages=num_stages, num_warps=num_warps, num_ctas=num_ctas)


def _next_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def gemm_dims(kernel: Module) -> tuple[int, int, int] | None:
    """(m, n, k) of the kernel's dot (batch dims excluded); None when it has no dot."""
    by_name = {i.name: i for _, i in kernel.instructions()}
    for _, inst in kernel.instructions():
        if inst.opcode != "dot" or len(inst.operands) < 2:
            continue
        lhs, rhs = by_name[inst.operands[0]].shape, by_name[inst.operands[1]].shape
        lc, rc = A.int_list(inst.attrs.get("lhs_contracting_dims")), \
            A.int_list(inst.attrs.get("rhs_contracting_dims"))
        lb, rb = A.int_list(inst.attrs.get("lhs_batch_dims")), \
            A.int_list(inst.attrs.get("rhs_batch_dims"))
        m = int(np.prod([d for i, d in enumerate(lhs.dims) if i not in lc and i not in lb]))
        n = int(np.prod([d for i, d in enumerate(rhs.dims) if i not in rc and i not in rb]))
        k = int(np.prod([lhs.dims[i] for i in lc]))
        return m, n, k
    return None


def valid_tiles(m: int, n: int, k: int) -> list[KernelConfig]:
    """Grid tiles that fit the problem: blocks no larger than the padded dims, split_k | k."""
    out = []
    for bm, bn, bk, sk, st, nw in itertools.product(*GRID.values()):
        if bm > max(16, _next_pow2(m)) or bn > max(16, _next_pow2(n)):
            continue
        if k % sk or bk * sk > max(16, _next_pow2(k)):
            continue
        out.append(tile(bm, bn, bk, sk, st, nw))
    return out


def override_textproto(config: KernelConfig) -> str:
    """``TritonGemmConfigsProto`` text holding exactly ``config`` (autotuner override file)."""
    s = config.as_dict()
    body = "\n".join(f"  {f}: {int(s[f])}" for f in FIELDS if f in s)
    return f"config {{\n{body}\n}}\n"


def _write_override(text: str, directory: Path) -> Path:
    """Content-addressed file, written atomically (many workers may write the same tile)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"triton-{hashlib.sha256(text.encode()).hexdigest()[:16]}.textproto"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return path


def _backend_config(inst: Instruction) -> dict[str, Any]:
    try:
        return json.loads(inst.attrs.get("backend_config", "{}"))
    except json.JSONDecodeError:
        return {}


def _tile_of(fbc: dict[str, Any]) -> dict[str, int] | None:
    """Tile fields from a fusion backend config: ``triton_gemm_config`` or the nested form.

    The nested form (``__triton_nested_gemm_fusion``) states block_m/n in its output tile and
    block_k only in the nested operand fusions; block_k is then left out (encoded 0).
    """
    if "triton_gemm_config" in fbc:
        return {k: int(v) for k, v in fbc["triton_gemm_config"].items() if k in FIELDS}
    block = fbc.get("block_level_fusion_config")
    if fbc.get("kind") != "__triton_nested_gemm_fusion" or not block:
        return None
    sizes = [int(v) for v in block["output_tiles"][0]["sizes"]]
    out = {"block_m": sizes[-2] if len(sizes) > 1 else 1, "block_n": sizes[-1]}
    out.update({k: int(block[k]) for k in ("num_warps", "num_stages", "num_ctas") if k in block})
    return out


class TritonGemmTiles:
    """Triton GEMM tiles for kernels holding a dot; other kernels get no configs."""

    name = "gpu-triton-tiles"

    def __init__(self, seed: int = 0, mechanism: str = "override_file", max_candidates: int = 64,
                 override_dir: str | Path | None = None) -> None:
        if mechanism not in ("override_file", "backend_config"):
            raise ValueError(f"unknown mechanism {mechanism!r}")
        self.seed = seed
        self.mechanism = mechanism
        self.kernel_form = "inlined" if mechanism == "override_file" else "wrapped"
        self.max_candidates = max_candidates
        self.override_dir = Path(override_dir or Path(tempfile.gettempdir()) / "tgt-triton")

    def configs(self, kernel: Module) -> list[KernelConfig]:
        dims = gemm_dims(kernel)
        if dims is None:
            return [KernelConfig()]
        tiles = valid_tiles(*dims)
        rng = np.random.default_rng(self.seed)
        picks = rng.permutation(len(tiles))[:self.max_candidates]
        return [KernelConfig(), *(tiles[i] for i in picks)]

    def encode(self, config: KernelConfig) -> np.ndarray:
        s = config.as_dict()
        if not s:
            return bounds_features((), (), ())
        return bounds_features((s.get("block_k", 0), s.get("split_k", 1)),
                               (s.get("block_m", 0), s.get("block_n", 0)),
                               (s.get("num_stages", 1), s.get("num_warps", 4)))

    def compile_options(self, config: KernelConfig) -> dict[str, Any]:
        if config.is_default or self.mechanism != "override_file":
            return {}
        path = _write_override(override_textproto(config), self.override_dir)
        return {"xla_gpu_gemm_autotuner_override_file": str(path),
                "xla_gpu_cublas_fallback": False}

    def apply(self, text: str, config: KernelConfig) -> str:
        if config.is_default or self.mechanism != "backend_config":
            return text
        s = config.as_dict()
        fields = ",".join(f'"{f}":"{int(s[f])}"' for f in FIELDS if f in s)
        new, count = _TRITON_CONFIG.subn(f'"triton_gemm_config":{{{fields}}}', text)
        if count == 0:
            raise ConfigError("kernel has no __triton_gemm fusion with a triton_gemm_config "
                              "to rewrite (use the override_file mechanism)")
        return new

    def realized(self, optimized: Module, config: KernelConfig) -> tuple[KernelConfig,
                                                                          dict[str, Any]]:
        """The tile the optimized kernel's GEMM fusion carries (the default: zeros if none)."""
        for _, inst in optimized.instructions():
            if inst.opcode != "fusion":
                continue
            fbc = _backend_config(inst).get("fusion_backend_config", {})
            if fbc.get("kind") not in GEMM_KINDS:
                continue
            found = _tile_of(fbc)
            if found:
                merged = {**config.as_dict(), **found}
                facts = {"gemm_fusion": inst.name, "kind": fbc.get("kind"), "tile": found,
                         "matches_request": all(config.as_dict().get(k) == v
                                                for k, v in found.items())
                         if not config.is_default else None}
                return KernelConfig.of(**merged), facts
        return config, {"gemm_fusion": None, "tile": None,
                        "matches_request": None if config.is_default else False}
