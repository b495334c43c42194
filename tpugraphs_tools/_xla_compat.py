"""The one place tgt touches jax/jaxlib internals that move between releases.

tgt reads and compiles HLO *text* (a TpuGraphs graph is an HLO module, not a jax function), which
public jax has no API for; the XLA client bindings it needs live under ``jax._src.lib`` and change
between minor releases. Every such call goes through this module, which detects the binding that
is present (never the version number) so a new jax either works or fails here with a message
naming the missing piece. Supported range and what was tested where: docs/versions.md.

Differences handled (tests/test_xla_compat.py exercises the branch the installed jax takes):

* HLO module bindings: ``xla_client.hlo`` (jaxlib >= 0.10) or ``xla_client._xla`` (0.9).
* Lowered → HLO proto: ``Lowered.compiler_ir("hlo")`` when it exists, otherwise the StableHLO
  text converted by ``mlir_module_to_xla_computation``.
* HLO → compilable MLIR: ``xla_computation_to_mlir_module``. Its HLO→MHLO import drops every
  fusion's ``backend_config`` (checked by :func:`mlir_route_keeps_backend_config`), so compiler
  choices must reach XLA through compile options, never through HLO attributes.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from typing import Any

from tpugraphs_tools.errors import XlaCompatError as XlaCompatError


def xla_client() -> Any:
    from jax._src.lib import xla_client as xc

    return xc


def hlo_bindings() -> Any:
    """Namespace holding ``HloModule`` and ``hlo_module_from_text``."""
    xc = xla_client()
    for ns in (getattr(xc, "hlo", None), getattr(xc, "_xla", None)):
        if ns is not None and hasattr(ns, "hlo_module_from_text") and hasattr(ns, "HloModule"):
            return ns
    raise XlaCompatError(_missing("HloModule / hlo_module_from_text"))


def _missing(what: str) -> str:
    import jax

    return (f"jax {jax.__version__} has no XLA binding for {what}; tgt supports the range in "
            "docs/versions.md")


def versions() -> tuple[str, str]:
    """(jax, jaxlib) versions, recorded in every dataset."""
    import jax
    import jaxlib

    return jax.__version__, jaxlib.__version__


# -- HLO text / proto ------------------------------------------------------------------------
def hlo_module_from_text(text: str) -> Any:
    return hlo_bindings().hlo_module_from_text(text)


def hlo_module_from_proto(data: bytes) -> Any:
    return hlo_bindings().HloModule.from_serialized_hlo_module_proto(data)


def lowered_hlo_proto(lowered: Any) -> bytes:
    """Serialized un-optimized ``HloModuleProto`` of a ``jax.stages.Lowered``."""
    try:
        return lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    except (ValueError, TypeError, AttributeError, NotImplementedError):
        pass  # dialect "hlo" gone: convert the StableHLO text
    convert = getattr(xla_client()._xla.mlir, "mlir_module_to_xla_computation", None)
    if convert is None:
        raise XlaCompatError(_missing("Lowered → HLO proto"))
    comp = convert(lowered.as_text(), use_tuple_args=False, return_tuple=False)
    return comp.as_serialized_hlo_module_proto()


def compiled_hlo_proto(compiled: Any) -> bytes:
    """Serialized optimized ``HloModuleProto`` of a ``jax.stages.Compiled``."""
    return compiled.runtime_executable().hlo_modules()[0].as_serialized_hlo_module_proto()


def executable_hlo_text(executable: Any) -> str:
    """Optimized HLO text of a loaded executable (what the compiler really made)."""
    return executable.hlo_modules()[0].to_string()


# -- compiling HLO text ----------------------------------------------------------------------
def array_shape(dtype: Any, dims: Sequence[int], minor_to_major: Sequence[int]) -> Any:
    return xla_client().Shape.array_shape(dtype, tuple(dims), tuple(minor_to_major))


def tuple_shape(shapes: Sequence[Any]) -> Any:
    return xla_client().Shape.tuple_shape(list(shapes))


def _to_mlir(text: str) -> Any:
    xc = xla_client()
    module = hlo_module_from_text(text)
    computation = xc.XlaComputation(module.as_serialized_hlo_module_proto())
    convert = getattr(xc._xla.mlir, "xla_computation_to_mlir_module", None)
    if convert is None:
        raise XlaCompatError(_missing("HLO → MLIR (xla_computation_to_mlir_module)"))
    return convert(computation)


def compile_hlo_text(text: str, device: Any, argument_shapes: Sequence[Any], result_shape: Any,
                     options: Sequence[tuple[str, Any]] = ()) -> Any:
    """HLO text → loaded executable on ``device`` with the entry layouts pinned.

    ``options`` become ``DebugOptions`` overrides (XLA flags without the ``--``); an unknown
    name is rejected by XLA ("No such compile option").
    """
    xc = xla_client()
    opts = xc.CompileOptions()
    opts.argument_layouts = list(argument_shapes)
    opts.executable_build_options.result_layout = result_shape
    if options:
        opts.env_option_overrides = list(options)
    return device.client.compile_and_load(_to_mlir(text), xc.DeviceList((device,)), opts)


_PROBE = ("HloModule probe, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n\n"
          "ENTRY e {\n  a = f32[2]{0} parameter(0)\n  ROOT n = f32[2]{0} negate(a)\n}\n")


@functools.cache
def compile_option_exists(name: str, value: Any) -> bool:
    """Does this jaxlib's XLA know the ``DebugOptions`` field ``name``? Options come and go
    between releases (``xla_cpu_use_fusion_emitters`` is gone in 0.12, ``xla_cpu_opt_preset``
    is not yet in 0.9); a probe compile on CPU tells, whatever the backend collected on."""
    import jax
    import numpy as np

    shape = array_shape(np.dtype("float32"), (2,), (0,))
    try:
        compile_hlo_text(_PROBE, jax.devices("cpu")[0], [shape], shape, [(name, value)])
    except Exception as exc:  # XLA raises its own runtime error type
        if "No such compile option" in str(exc):
            return False
        raise
    return True


@functools.cache
def mlir_route_keeps_backend_config() -> bool:
    """Does the HLO→MLIR compile route keep a fusion's ``backend_config``? (No through 0.10.)"""
    text = ("HloModule probe, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n\n"
            "fused {\n  p = f32[2]{0} parameter(0)\n  ROOT n = f32[2]{0} negate(p)\n}\n\n"
            "ENTRY e {\n  a = f32[2]{0} parameter(0)\n  ROOT f = f32[2]{0} fusion(a), kind=kLoop, "
            'calls=fused, backend_config={"tgt_probe_marker":"1"}\n}\n')
    return "tgt_probe_marker" in str(_to_mlir(text))


def _release(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def triton_override_applies_split_k() -> bool:
    """Does XLA:GPU apply a ``split_k`` given in ``xla_gpu_override_gemm_autotuner``?

    No binding tells, and a CPU machine cannot compile for a GPU, so this one is by release,
    from what was measured: on jaxlib 0.11.2 (H200) the ``TritonGemmKey`` parser warns that
    ``split_k`` is deprecated and every requested split_k > 1 compiled as 1 (XLA still splits
    on its own). Older releases were not run on a GPU: tgt keeps split_k there and reads
    back what ran (docs/versions.md)."""
    import jaxlib

    return _release(jaxlib.__version__) < (0, 11)


# -- device kernel timers (measure/engines/device_timer.py) ---------------------------------
class _CuptiRecords:
    """CUPTI kernel activity through jax's Mosaic GPU extension (what
    ``jax.experimental.mosaic.gpu.profiler.measure`` uses): ``_cupti_init()`` subscribes,
    ``_cupti_get_timings(finalize)`` returns [(kernel name, ms)] (older jaxlibs take no
    argument). CUPTI allows one subscriber: not together with the profiler timer.

    ``_cupti_init`` subscribes before it registers callbacks and enables kernel activity; on
    the jaxlibs read (0.10, 0.11) a failure after the subscription leaves it open, which
    would also keep the profiler timer (and any later start) out. A failed start therefore
    detaches: ``_cupti_get_timings(True)`` disables, finalizes and unsubscribes."""

    def __init__(self, ext: Any = None) -> None:
        if ext is None:
            from jax._src.lib import mosaic_gpu  # ImportError on a jaxlib without CUDA

            ext = getattr(mosaic_gpu, "_mosaic_gpu_ext", None)
        if ext is None or not hasattr(ext, "_cupti_init") or not hasattr(
                ext, "_cupti_get_timings"):
            raise XlaCompatError(_missing("CUPTI timings (_mosaic_gpu_ext._cupti_init)"))
        self.ext = ext

    def start(self) -> None:
        try:
            self.ext._cupti_init()
        except Exception:
            # best effort: a jaxlib that cleaned up itself says "not active" here
            with contextlib.suppress(Exception):
                self.ext._cupti_get_timings(True)
            raise

    def stop(self) -> list[tuple[str, float]]:
        try:
            timings = self.ext._cupti_get_timings(False)  # keep CUPTI attached: cheaper
        except TypeError:
            timings = self.ext._cupti_get_timings()
        return [(str(name), float(ms) * 1e6) for name, ms in (timings or [])]


def cupti_kernel_records(ext: Any = None) -> Any:
    """CUPTI kernel records through ``ext`` (default: jax's Mosaic GPU extension)."""
    return _CuptiRecords(ext)


_CUDA_VERSION_CALLS = (("cuda_runtime", "cuda_runtime_get_version"),
                       ("cuda_runtime_build", "cuda_runtime_build_version"),
                       ("cuda_driver", "cuda_driver_get_version"),
                       ("cupti", "cupti_get_version"), ("cupti_build", "cupti_build_version"))


def cuda_versions() -> dict[str, Any]:
    """The CUDA runtime, driver and CUPTI versions jax's CUDA plugin reads (``_versions``:
    13000 is 13.0; CUPTI's is its API version), each next to the one jax was built with. Both
    device timers load one libcupti: a CUPTI newer than the driver fails both, so these say
    which ran. A value that cannot be read is the reason why; {"error": ...} without a CUDA
    plugin."""
    try:
        from jax._src.lib import cuda_versions as plugin
    except ImportError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}
    if plugin is None:
        return {"error": "jax has no CUDA plugin here"}
    out: dict[str, Any] = {}
    for key, call in _CUDA_VERSION_CALLS:
        try:
            out[key] = getattr(plugin, call)()
        except Exception as exc:  # a missing library is a finding, not a crash
            out[key] = f"{type(exc).__name__}: {exc}"[:200]
    return out


class _ProfilerRecords:
    """A ``jax.profiler`` trace around the runs, read back with ``jax.profiler.ProfileData``:
    kernel events on the stream lines of ``/device:GPU:*`` planes (the planes' derived lines,
    "XLA Ops" and the like, repeat the same time and are skipped, as are memcpy/memset)."""

    def __init__(self) -> None:
        import tempfile

        import jax

        self.profiler = jax.profiler
        if not hasattr(jax.profiler, "ProfileData"):
            raise XlaCompatError(_missing("jax.profiler.ProfileData"))
        self.directory = tempfile.mkdtemp(prefix="tgt-trace-")

    def start(self) -> None:
        self.profiler.start_trace(self.directory)

    def stop(self) -> list[tuple[str, float]]:
        import shutil
        from pathlib import Path

        self.profiler.stop_trace()
        files = sorted(Path(self.directory).rglob("*.xplane.pb"))
        try:
            if not files:
                return []
            data = self.profiler.ProfileData.from_file(str(files[-1]))
            out = []
            for plane in data.planes:
                if not plane.name.startswith("/device:GPU"):
                    continue
                for line in plane.lines:
                    if not line.name.lower().startswith("stream"):
                        continue
                    out += [(e.name, float(e.duration_ns)) for e in line.events
                            if not e.name.lower().startswith(("memcpy", "memset"))]
            return out
        finally:
            for path in Path(self.directory).iterdir():
                shutil.rmtree(path, ignore_errors=True)


def profiler_kernel_records() -> Any:
    return _ProfilerRecords()


# -- executables -----------------------------------------------------------------------------
def serialize_executable(executable: Any, device: Any) -> bytes:
    return device.client.serialize_executable(executable)


def deserialize_executable(data: bytes, device: Any) -> Any:
    xc = xla_client()
    return device.client.deserialize_executable(data, xc.DeviceList((device,)), None)


def execute(executable: Any, inputs: list[Any]) -> list[Any]:
    """Run once on the executable's single device; outputs blocked until ready."""
    outputs = executable.execute_sharded(inputs).disassemble_into_single_device_arrays()
    flat = [o[0] for o in outputs]
    for o in flat:
        o.block_until_ready()
    return flat
