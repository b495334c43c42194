"""Per-device measurement settings: shared GPU memory, isolation, autotuning, numerics tolerance.

A collection runs measurement workers (one times at a time) and compile workers, each a jax
process. On a
GPU, jax would preallocate most of the device memory in the first process and the others would
fail, every compile that autotunes runs kernels on the device being timed, and bf16/TF32/split-k
results legitimately differ from the default config by more than XLA:CPU's f32 results do. The
rules here (docs/gpu.md) keep each of those honest; on CPU they change nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from tpugraphs_tools.hlo import Module, Shape
from tpugraphs_tools.measure.results import AUTO, DEVICE, HOST

GPU_PLATFORMS = ("gpu", "cuda", "rocm")
# Any of these set by the user means they chose how processes share device memory.
_MEMORY_VARS = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
                "XLA_PYTHON_CLIENT_ALLOCATOR")


def share_device_memory() -> dict[str, str]:
    """Make jax processes started from here allocate on demand (several share one GPU).

    Must run before a process initializes its GPU backend; workers inherit the environment.
    A user's own setting of any memory variable wins. Returns what was set.
    """
    if any(v in os.environ for v in _MEMORY_VARS):
        return {}
    os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def is_gpu(platform: str) -> bool:
    return platform in GPU_PLATFORMS


@dataclass(frozen=True)
class Platform:
    """The device configs are compiled and timed on: jax's platform name (``cpu``, ``gpu``,
    ``cuda``, ``rocm``, ...) and its device kind (stored in graph rows)."""

    name: str
    device_kind: str


def platform_of(backend: str | None) -> Platform:
    """The platform of the jax backend that compiles and times (None: jax's default). Sets
    the shared-memory rule first (:func:`share_device_memory`): this may be the first call that
    starts a GPU backend in this process."""
    share_device_memory()
    import jax

    device = jax.devices(backend)[0]
    return Platform(device.platform, str(device.device_kind))


# --isolation: how compilation is kept off the timed runs (workers/processes.resolve_isolation
# turns ``auto`` into ``pin`` or ``pause`` by the CPUs; isolation_for first, by the platform).
ISOLATIONS = ("auto", "pin", "pause", "none")


def isolation_for(platform: str, isolation: str) -> str:
    """``auto`` on a GPU is ``pause``: compile workers share the device, not just the CPUs, so
    they are stopped for every timed round (measure/timing_side.py)."""
    return "pause" if isolation == "auto" and is_gpu(platform) else isolation


def layout_compile_options(platform: str) -> dict[str, Any]:
    """Options every layout config (the default too) is compiled with on this platform.

    GPU: autotuning off (``xla_gpu_autotune_level=0``) so a compile worker never profiles kernels
    on the GPU while the measurement worker times it; all configs get XLA's heuristic algorithm
    choice, so they stay comparable.
    """
    return {"xla_gpu_autotune_level": 0} if is_gpu(platform) else {}


# Relative tolerance (× max |default output|) by the least precise float type in the module.
_RTOL = {"f64": 1e-6, "f32": 1e-3, "f16": 1e-2, "bf16": 5e-2,
         "f8e4m3fn": 2.5e-1, "f8e5m2": 2.5e-1}
_RTOL_GPU_F32 = 1e-2  # XLA:GPU may run f32 dots as TF32 (10-bit mantissa) and split-k sums


def _element_types(shape: Shape) -> set[str]:
    if shape.is_tuple:
        return set().union(*(_element_types(s) for s in shape.tuple_shapes))
    return {shape.element_type}


def default_rtol(platform: str, module: Module) -> float:
    """Tolerance that fits the module's precision: its least precise float type decides (a
    bf16 program legitimately differs by a few bf16 ulps between configs); 1e-3 when it has
    no float type."""
    types: set[str] = set()
    for _, inst in module.instructions():
        types |= _element_types(inst.shape)
    rtol = max((_RTOL[t] for t in types if t in _RTOL), default=_RTOL["f32"])
    if is_gpu(platform) and "f32" in types:
        rtol = max(rtol, _RTOL_GPU_F32)
    return rtol


def resolve_rtol(rtol: float | None, platform: str, module: Module) -> float:
    """An explicit ``rtol`` wins; ``None`` means :func:`default_rtol`."""
    return default_rtol(platform, module) if rtol is None else rtol


def timer_for(platform: str, collection: str, choice: str) -> str:
    """``--timer auto``: a tile kernel on a GPU is timed by the device (a microsecond kernel
    under a 30–90 µs launch shows its tile only there); layout rows stay host-timed (whole
    programs of many kernels, whose host labels reproduced 30 of 30 claimed orders on an
    H200), and the CPU has no device timer."""
    if choice != AUTO:
        return choice
    return DEVICE if is_gpu(platform) and collection == "tile" else HOST
