"""Compile HLO text on a jax backend with the entry interface pinned, and make its inputs.

Entry layouts are pinned to the module's stated (row-major) layouts so every config of a graph
has the same calling convention: inputs are placed once and reused, and a config only changes
what happens inside the program. Compiler options pass through ``env_option_overrides``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tpugraphs_tools import _xla_compat as X
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.hlo import HloSource, Module, Shape, parse_hlo_text

_NUMPY_TYPES = {
    "pred": "bool", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16",
    "c64": "complex64", "c128": "complex128",
}


def numpy_dtype(element_type: str) -> np.dtype:
    name = _NUMPY_TYPES.get(element_type)
    if name is None:
        raise ConfigError(f"element type {element_type} cannot be fed from numpy")
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _row_major(rank: int) -> tuple[int, ...]:
    return tuple(range(rank - 1, -1, -1))


def _xla_shape(shape: Shape) -> Any:
    if shape.is_tuple:
        return X.tuple_shape([_xla_shape(s) for s in shape.tuple_shapes])
    layout = shape.minor_to_major if shape.minor_to_major else _row_major(shape.rank)
    return X.array_shape(numpy_dtype(shape.element_type), shape.dims, layout)


def _leaves(shape: Shape) -> list[Shape]:
    if not shape.is_tuple:
        return [shape]
    return [leaf for s in shape.tuple_shapes for leaf in _leaves(s)]


def result_layout(shape: Shape) -> Any:
    """The entry result as the compiled program returns it: a flat tuple of its array leaves.

    The route through MLIR flattens nested result tuples and returns a 1-element tuple as its
    element, so the stated tuple shape itself would be refused ("not compatible with result
    shape").
    """
    leaves = _leaves(shape)
    if len(leaves) == 1:
        return _xla_shape(leaves[0])
    return X.tuple_shape([_xla_shape(s) for s in leaves])


@dataclass(frozen=True)
class EntrySignature:
    parameters: tuple[Shape, ...]
    result: Shape


def entry_signature(module: Module) -> EntrySignature:
    params = sorted((i for i in module.entry.instructions if i.opcode == "parameter"),
                    key=lambda i: i.parameter_number)
    for p in params:
        if p.shape.is_tuple:
            raise ConfigError(f"entry parameter {p.name} is a tuple; tgt feeds array "
                              "parameters only")
    return EntrySignature(tuple(p.shape for p in params), module.entry.root.shape)


def compile_text(text: str, signature: EntrySignature, options: dict[str, Any] | None = None,
                 backend: str | None = None) -> Any:
    """HLO text → loaded executable on the first device of ``backend``."""
    import jax

    device = jax.devices(backend)[0]
    overrides = [(k, _option_value(v)) for k, v in (options or {}).items()]
    return X.compile_hlo_text(text, device, [_xla_shape(s) for s in signature.parameters],
                              result_layout(signature.result), overrides)


# Generated-code artifacts XLA writes under ``xla_dump_to``: CPU object files, GPU PTX/cubins.
CODE_SUFFIXES = (".o", ".ptx", ".cubin")


def compile_with_code_hash(text: str, signature: EntrySignature,
                           options: dict[str, Any] | None = None,
                           backend: str | None = None) -> tuple[Any, str | None]:
    """Compile like :func:`compile_text` and hash the machine code XLA generated.

    Options such as ``xla_backend_optimization_level`` change the code but not the optimized
    HLO, so HLO alone cannot tell a no-op option from a real one; the code can. The hash covers
    the contents of every dumped object/PTX file (names carry a per-compile counter and are
    ignored); ``None`` when the backend dumped none.
    """
    import hashlib
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="tgt-code-") as tmp:
        exe = compile_text(text, signature, {**(options or {}), "xla_dump_to": tmp}, backend)
        digests = sorted(hashlib.sha256(p.read_bytes()).hexdigest()
                         for p in Path(tmp).rglob("*") if p.suffix in CODE_SUFFIXES)
    if not digests:
        return exe, None
    return exe, hashlib.sha256("\n".join(digests).encode()).hexdigest()


def _option_value(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value
    return str(value)


def make_inputs(signature: EntrySignature, seed: int, backend: str | None = None) -> list[Any]:
    """Random device arrays for the entry parameters (normal floats, ints in [0, 2))."""
    import jax

    rng = np.random.default_rng(seed)
    device = jax.devices(backend)[0]
    arrays = []
    for shape in signature.parameters:
        dtype = numpy_dtype(shape.element_type)
        if dtype == np.bool_:
            value = rng.integers(0, 2, size=shape.dims).astype(bool)
        elif np.issubdtype(dtype, np.integer):
            value = rng.integers(0, 2, size=shape.dims).astype(dtype)
        elif np.issubdtype(dtype, np.complexfloating):
            value = (rng.standard_normal(shape.dims) + 1j * rng.standard_normal(shape.dims))
            value = value.astype(dtype)
        else:
            value = rng.standard_normal(shape.dims).astype(np.float32).astype(dtype)
        arrays.append(jax.device_put(value, device))
    return arrays


def input_bytes(signature: EntrySignature) -> int:
    """Bytes of one set of entry arguments."""
    return sum(math.prod(shape.dims) * np.dtype(numpy_dtype(shape.element_type)).itemsize
               for shape in signature.parameters)


def run(executable: Any, inputs: list[Any]) -> list[Any]:
    """Execute once and return output arrays (blocked until ready)."""
    return X.execute(executable, inputs)


def compile_hlo_source(src: HloSource, backend: str | None = None) -> HloSource:
    """The optimized module XLA makes of an un-optimized source (for kernel extraction)."""
    exe = compile_text(src.text, entry_signature(src.module), None, backend)
    text = X.executable_hlo_text(exe)
    return HloSource(parse_hlo_text(text, source=src.origin), text, None, src.kind,
                     "optimized", src.origin)
