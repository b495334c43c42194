"""``gpu-triton-tiles``: real Triton GEMM tile configs, forced per kernel on XLA:GPU.

XLA:GPU compiles a matmul fusion with a Triton tile (block_m/n/k, split_k, num_stages,
num_warps, num_ctas) its GEMM autotuner picks. tgt compiles HLO *text* through the HLO→MLIR
route, which drops every fusion's ``backend_config`` (``_xla_compat``), so a tile must reach
the compiler as a compile option (docs/gpu.md has the XLA sources this relies on):

* ``override`` (default): ``xla_gpu_override_gemm_autotuner`` = one ``TritonGemmKey`` textproto.
  With autotuning enabled (XLA's default level) every Triton GEMM fusion gets exactly that tile
  and nothing is profiled, so a compile worker never runs kernels on the GPU.
* ``override_file``: ``xla_gpu_gemm_autotuner_override_file`` = a ``TritonGemmConfigsProto``
  with one config; XLA treats it as a hint mapped onto its search space and *profiles* the
  result on the GPU (use only with compile workers paused while timing).
* ``backend_config``: the tile written into the wrapped fusion; refused while the compile
  route drops it (every jaxlib tgt supports so far).

XLA caches autotuning results per process keyed by the fusion's HLO, not by these options, so
each configured compile runs in a fresh compile worker (``fresh_compiler_per_config``).
``realized`` reads the whole tile back from the optimized kernel (configs/tile_gpu_realized.py);
a field the module does not show is stored as ``None`` (unobserved) and encodes as 0, never
copied from the request. Two configs that compile to one tile compile to one program and the
engine's (optimized HLO, machine code) key makes the second a ``duplicate``: labels are keyed
on the tile that ran. split_k is in the space only where the installed XLA applies it
(``_xla_compat.triton_override_applies_split_k``; not on jax 0.11, docs/versions.md).
A tile the GPU cannot run (its accumulator over 255 registers a thread, its pipeline stages
over the block's shared memory: configs/tile_gpu_limits.py) is ``infeasible`` and never
compiled. Encoding into TpuGraphs' tile features: kernel_bounds = (block_k, split_k),
output_bounds = (block_m, block_n), input_bounds = (num_stages, num_warps), each followed by sum
and product.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from tpugraphs_tools.configs.kernel_config import KernelConfig, bounds_features
from tpugraphs_tools.configs.tile_gpu_limits import (
    DeviceLimits,
    device_limits,
    element_bytes,
    infeasible_reason,
)
from tpugraphs_tools.configs.tile_gpu_realized import (
    FIELDS,
    backend_config,
    gemm_fusions,
    read_tile,
)
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.hlo import Module
from tpugraphs_tools.hlo import attributes as A

GRID = {
    "block_m": (16, 32, 64, 128, 256), "block_n": (16, 32, 64, 128, 256),
    "block_k": (16, 32, 64, 128), "split_k": (1, 2, 4, 8, 16),
    "num_stages": (1, 2, 3, 4), "num_warps": (2, 4, 8),
}
_TRITON_CONFIG = re.compile(r'"triton_gemm_config"\s*:\s*\{[^{}]*\}')


def tile(block_m: int, block_n: int, block_k: int, split_k: int | None = 1,
         num_stages: int = 1, num_warps: int = 4, num_ctas: int = 1) -> KernelConfig:
    """One tile; ``split_k=None`` leaves split_k out (XLA decides; see TritonGemmTiles)."""
    fields = {"block_m": block_m, "block_n": block_n, "block_k": block_k,
              "num_stages": num_stages, "num_warps": num_warps, "num_ctas": num_ctas}
    if split_k is not None:
        fields["split_k"] = split_k
    return KernelConfig.of(**fields)


def _next_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def _gemm_dot(kernel: Module) -> tuple[Any, Any, Any] | None:
    """(dot, lhs shape, rhs shape) of the kernel's first dot; None when it has none."""
    by_name = {i.name: i for _, i in kernel.instructions()}
    for _, inst in kernel.instructions():
        if inst.opcode == "dot" and len(inst.operands) >= 2:
            return inst, by_name[inst.operands[0]].shape, by_name[inst.operands[1]].shape
    return None


def gemm_dims(kernel: Module) -> tuple[int, int, int] | None:
    """(m, n, k) of the kernel's dot (batch dims excluded); None when it has no dot."""
    found = _gemm_dot(kernel)
    if found is None:
        return None
    inst, lhs, rhs = found
    lc, rc = A.int_list(inst.attrs.get("lhs_contracting_dims")), \
        A.int_list(inst.attrs.get("rhs_contracting_dims"))
    lb, rb = A.int_list(inst.attrs.get("lhs_batch_dims")), \
        A.int_list(inst.attrs.get("rhs_batch_dims"))
    m = int(np.prod([d for i, d in enumerate(lhs.dims) if i not in lc and i not in lb]))
    n = int(np.prod([d for i, d in enumerate(rhs.dims) if i not in rc and i not in rb]))
    k = int(np.prod([lhs.dims[i] for i in lc]))
    return m, n, k


def gemm_operand_bytes(kernel: Module) -> tuple[int, int]:
    """Bytes per element of the kernel's dot operands (lhs, rhs); (2, 2) without a dot."""
    found = _gemm_dot(kernel)
    if found is None:
        return 2, 2
    _, lhs, rhs = found
    return element_bytes(lhs.element_type), element_bytes(rhs.element_type)


def valid_tiles(m: int, n: int, k: int, split_k: bool = True) -> list[KernelConfig]:
    """Grid tiles that fit the problem: blocks no larger than the padded dims, split_k | k.
    Without ``split_k`` the tiles leave it out (the field is never sent to XLA)."""
    out = []
    splits = GRID["split_k"] if split_k else (1,)
    for bm, bn, bk, sk, st, nw in itertools.product(
            GRID["block_m"], GRID["block_n"], GRID["block_k"], splits, GRID["num_stages"],
            GRID["num_warps"]):
        if bm > max(16, _next_pow2(m)) or bn > max(16, _next_pow2(n)):
            continue
        if k % sk or bk * sk > max(16, _next_pow2(k)):
            continue
        out.append(tile(bm, bn, bk, sk if split_k else None, st, nw))
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


def override_key(config: KernelConfig) -> str:
    """One-line ``TritonGemmKey`` textproto (``xla_gpu_override_gemm_autotuner``)."""
    s = config.as_dict()
    return " ".join(f"{f}: {int(s[f])}" for f in FIELDS if f in s)


class TritonGemmTiles:
    """Triton GEMM tiles for kernels holding a dot; other kernels get no configs."""

    name = "gpu-triton-tiles"
    MECHANISMS = ("override", "override_file", "backend_config")

    def __init__(self, seed: int = 0, mechanism: str = "override", max_candidates: int = 64,
                 override_dir: str | Path | None = None, split_k: bool | None = None,
                 limits: DeviceLimits | None = None, device_kind: str | None = None) -> None:
        if mechanism not in self.MECHANISMS:
            raise ValueError(f"unknown mechanism {mechanism!r} (one of {self.MECHANISMS})")
        self.seed = seed
        self.mechanism = mechanism
        self.kernel_form = "wrapped" if mechanism == "backend_config" else "inlined"
        # XLA's autotune cache is per process and keyed by the fusion HLO, not the options.
        self.fresh_compiler_per_config = mechanism != "backend_config"
        self.max_candidates = max_candidates
        self.override_dir = Path(override_dir or Path(tempfile.gettempdir()) / "tgt-triton")
        # split_k is in the space only where this XLA applies it (docs/versions.md): jax
        # 0.11.2's override parser calls it deprecated and every split_k > 1 ran as 1.
        if split_k is None:
            from tpugraphs_tools._xla_compat import triton_override_applies_split_k

            split_k = triton_override_applies_split_k()
        self.split_k = split_k
        # read on first use (tile_gpu_limits.device_limits): no driver call for a space
        # that never checks a tile
        self._limits = limits
        self.device_kind = device_kind

    @property
    def limits(self) -> DeviceLimits:
        if self._limits is None:
            self._limits = device_limits(self.device_kind)
        return self._limits

    def infeasible(self, kernel: Module, config: KernelConfig) -> str | None:
        """Why ``config`` cannot run on this GPU (registers or shared memory over its limits:
        configs/tile_gpu_limits.py), so it is never compiled; None when it may run."""
        fields = {k: int(v) for k, v in config.as_dict().items() if v is not None}
        if config.is_default or not {"block_m", "block_n", "block_k"} <= set(fields):
            return None
        return infeasible_reason(fields, *gemm_operand_bytes(kernel), self.limits)

    def configs(self, kernel: Module) -> list[KernelConfig]:
        dims = gemm_dims(kernel)
        if dims is None:
            return [KernelConfig()]
        tiles = valid_tiles(*dims, split_k=self.split_k)
        rng = np.random.default_rng(self.seed)
        picks = rng.permutation(len(tiles))[:self.max_candidates]
        return [KernelConfig(), *(tiles[i] for i in picks)]

    def encode(self, config: KernelConfig) -> np.ndarray:
        """Fields absent from ``config`` (unobserved, or the default) encode as 0."""
        s = {k: v for k, v in config.as_dict().items() if v is not None}
        if not s:
            return bounds_features((), (), ())
        return bounds_features((s.get("block_k", 0), s.get("split_k", 0)),
                               (s.get("block_m", 0), s.get("block_n", 0)),
                               (s.get("num_stages", 0), s.get("num_warps", 0)))

    def compile_options(self, config: KernelConfig) -> dict[str, Any]:
        if config.is_default or self.mechanism == "backend_config":
            return {}
        if self.mechanism == "override":
            return {"xla_gpu_override_gemm_autotuner": override_key(config),
                    "xla_gpu_cublas_fallback": False}
        path = _write_override(override_textproto(config), self.override_dir)
        return {"xla_gpu_gemm_autotuner_override_file": str(path),
                "xla_gpu_cublas_fallback": False}

    def apply(self, text: str, config: KernelConfig) -> str:
        if config.is_default or self.mechanism != "backend_config":
            return text
        from tpugraphs_tools._xla_compat import mlir_route_keeps_backend_config

        if not mlir_route_keeps_backend_config():
            raise ConfigError("this jaxlib's HLO→MLIR compile route drops fusion "
                              "backend_config: a tile written there never reaches XLA (use "
                              "the override mechanism)")
        s = config.as_dict()
        fields = ",".join(f'"{f}":"{int(s[f])}"' for f in FIELDS if f in s)
        new, count = _TRITON_CONFIG.subn(f'"triton_gemm_config":{{{fields}}}', text)
        if count == 0:
            raise ConfigError("kernel has no __triton_gemm fusion with a triton_gemm_config "
                              "to rewrite (use the override mechanism)")
        return new

    def realized(self, optimized: Module, config: KernelConfig) -> tuple[KernelConfig,
                                                                          dict[str, Any]]:
        """The tile the optimized kernel's GEMM fusion shows: observed fields only.

        facts: ``tile`` (every field, ``None`` = unobserved), ``agreement`` per requested field
        (True/False, ``None`` when unobserved), ``matches_request`` (True only when every
        requested field was observed equal; False when any differs; None for the default or a
        partly unobserved match).
        """
        wanted = config.as_dict()
        for inst in gemm_fusions(optimized):
            tile = read_tile(optimized, inst)
            assert tile is not None  # gemm_fusions holds a dot
            observed = {k: v for k, v in tile.items() if v is not None}
            agreement = {k: (None if tile.get(k) is None else tile[k] == v)
                         for k, v in wanted.items()}
            kind = backend_config(inst).get("fusion_backend_config", {}).get("kind")
            facts = {"gemm_fusion": inst.name, "kind": kind, "tile": tile,
                     "unobserved": sorted(k for k, v in tile.items() if v is None),
                     "agreement": agreement, "matches_request": _matches(config, agreement)}
            return KernelConfig.of(**observed), facts
        return KernelConfig(), {"gemm_fusion": None, "tile": None,
                                "matches_request": None if config.is_default else False}


def _matches(config: KernelConfig, agreement: dict[str, bool | None]) -> bool | None:
    if config.is_default:
        return None
    if any(v is False for v in agreement.values()):
        return False
    return True if all(v is True for v in agreement.values()) else None
