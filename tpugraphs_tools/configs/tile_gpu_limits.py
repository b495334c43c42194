"""Which Triton GEMM tiles a GPU can run at all: registers and shared memory against its limits.

A tile XLA cannot run still costs a compile in a fresh worker and a multi-line autotuner error
(``All configs failed during profiling or were excluded``). On the first H200 run 8 of the 9
``compile_error`` tiles asked for more than a thread or a block has:

* **registers**: the fp32 accumulator of a block_m × block_n tile is spread over the block's
  32 · num_warps threads, ``block_m · block_n / (32 · num_warps)`` registers each, and a thread
  has at most 255 (every NVIDIA GPU since sm_50). 128×128 at 2 warps asks 256; XLA drops a
  tile whose kernel spills. Every tile that compiled there asked ≤ 128.
* **shared memory**: each pipeline stage holds a block_m × block_k and a block_k × block_n
  operand tile, ``(block_m · block_k · lhs bytes + block_k · block_n · rhs bytes) · stages``,
  which must fit the block's opt-in shared memory (227 KiB on an H100/H200). 256×256×128 bf16
  at 4 stages asks 512 KiB; the largest that compiled asked 204 KiB.

The limits are read from the device through the CUDA driver (``cuDeviceGetAttribute``); where
that cannot be done (no driver, a CPU machine) a recorded table by device kind stands in, and
an unknown kind gets the H100/H200 figures (tests/tile/data/gpu_h200/tile_outcomes.json holds
the recorded tiles these rules are checked against).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

MAX_REGISTERS_PER_THREAD = 255  # an architectural limit since sm_50, not a device attribute
_WARP = 32
# cuDeviceGetAttribute ids (CUDA driver API, cuda.h: CUdevice_attribute)
_ATTR_SHARED_OPTIN = 97
_ATTR_CC_MAJOR, _ATTR_CC_MINOR = 75, 76


@dataclass(frozen=True)
class DeviceLimits:
    """What one thread block may use; ``source`` says where the figures came from."""

    shared_memory_per_block: int  # bytes, the opt-in maximum a kernel may ask for
    registers_per_thread: int = MAX_REGISTERS_PER_THREAD
    source: str = "recorded"


_HOPPER = DeviceLimits(shared_memory_per_block=227 * 1024, source="recorded: sm_90")
# device_kind (jax) -> limits; CUDA C Programming Guide, compute capability table.
RECORDED: dict[str, DeviceLimits] = {
    "NVIDIA H100 80GB HBM3": _HOPPER, "NVIDIA H100": _HOPPER, "NVIDIA H200": _HOPPER,
}
DEFAULT = _HOPPER
_ELEMENT_BYTES = {"f64": 8, "s64": 8, "u64": 8, "f32": 4, "s32": 4, "u32": 4, "bf16": 2,
                  "f16": 2, "s16": 2, "u16": 2, "s8": 1, "u8": 1, "f8e4m3fn": 1, "f8e5m2": 1,
                  "f8e4m3fnuz": 1, "f8e5m2fnuz": 1, "pred": 1}


def element_bytes(element_type: str) -> int:
    """Bytes of one element of an HLO element type (2 where unknown: bf16, the common case)."""
    return _ELEMENT_BYTES.get(element_type, 2)


def read_device_limits(ordinal: int = 0) -> DeviceLimits | None:
    """The limits of CUDA device ``ordinal`` read through the driver; None where no driver
    answers (a CPU machine, a driver without the attribute)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    device, value = ctypes.c_int(), ctypes.c_int()
    if lib.cuInit(0) != 0 or lib.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
        return None
    read = {}
    for attr in (_ATTR_SHARED_OPTIN, _ATTR_CC_MAJOR, _ATTR_CC_MINOR):
        if lib.cuDeviceGetAttribute(ctypes.byref(value), attr, device) != 0:
            return None
        read[attr] = value.value
    if read[_ATTR_SHARED_OPTIN] <= 0:
        return None
    return DeviceLimits(shared_memory_per_block=read[_ATTR_SHARED_OPTIN],
                        source=f"device: sm_{read[_ATTR_CC_MAJOR]}{read[_ATTR_CC_MINOR]}")


def device_limits(device_kind: str | None) -> DeviceLimits:
    """Read from the device; else the recorded figures of ``device_kind``; else H100/H200's."""
    read = read_device_limits()
    if read is not None:
        return read
    return RECORDED.get(device_kind or "", DEFAULT)


def accumulator_registers(block_m: int, block_n: int, num_warps: int) -> float:
    """fp32 accumulator registers per thread of a block_m × block_n tile."""
    return block_m * block_n / (_WARP * max(1, num_warps))


def stage_bytes(block_m: int, block_n: int, block_k: int, lhs_bytes: int,
                rhs_bytes: int) -> int:
    """Shared memory of one pipeline stage: one lhs and one rhs operand tile."""
    return block_m * block_k * lhs_bytes + block_k * block_n * rhs_bytes


def infeasible_reason(tile: dict[str, int], lhs_bytes: int, rhs_bytes: int,
                      limits: DeviceLimits) -> str | None:
    """Why ``tile`` (block_m/n/k, num_stages, num_warps) cannot run within ``limits``; None
    when it fits."""
    bm, bn, bk = tile["block_m"], tile["block_n"], tile["block_k"]
    warps, stages = tile.get("num_warps", 4), max(1, tile.get("num_stages", 1))
    registers = accumulator_registers(bm, bn, warps)
    if registers > limits.registers_per_thread:
        return (f"infeasible: a {bm}x{bn} tile at {warps} warps needs {registers:.0f} fp32 "
                f"accumulator registers a thread, over {limits.registers_per_thread} "
                f"({limits.source})")
    shared = stage_bytes(bm, bn, bk, lhs_bytes, rhs_bytes) * stages
    if shared > limits.shared_memory_per_block:
        return (f"infeasible: {bm}x{bn}x{bk} at {stages} stages needs {shared // 1024} KiB of "
                f"shared memory, over {limits.shared_memory_per_block // 1024} KiB "
                f"({limits.source})")
    return None
