"""The one place tgt imports keras and keras-hub: on the jax backend, with shape-only weights.

Keras picks its backend once, when it is first imported, from ``KERAS_BACKEND`` (or
``~/.keras/keras.json``). Catalog programs lower through jax, so this module sets
``KERAS_BACKEND=jax`` before the first import and refuses, with one line naming the fix, a
process whose keras already runs another backend or whose environment asks for one: silently
getting a torch or tensorflow model would lower nothing.

Models are built inside a ``keras.StatelessScope(initialize_variables=False)``: keras then
creates every variable *deferred* (shape and dtype, no value), so building Llama-3-8B costs no
memory; the variables' values only ever arrive as arguments of ``stateless_call``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from tpugraphs_tools.errors import InstallError, KerasBackendError

EXTRA = "catalog"
# The keras-hub releases tested: a release can change a model's graph, like a jax release.
KERAS_HUB = "keras-hub>=0.32,<0.33"
# keras-hub's own requirements pull tensorflow and tensorflow-text, which lowering through jax
# never imports: the extra brings keras and what keras-hub imports, and keras-hub goes in
# without its requirements (docs/programs.md, "Install"; the Makefile reads KERAS_HUB).
INSTALL_HINT = f"pip install 'tpugraphs-tools[{EXTRA}]' && pip install --no-deps '{KERAS_HUB}'"


def _check_environment() -> None:
    """Fail on a keras already imported with another backend, or a KERAS_BACKEND that asks one."""
    keras = sys.modules.get("keras")
    if keras is not None:
        backend = keras.backend.backend()
        if backend != "jax":
            raise KerasBackendError(
                f"keras was already imported with the {backend!r} backend; catalog programs "
                "need jax: set KERAS_BACKEND=jax before anything imports keras")
        return
    wanted = os.environ.get("KERAS_BACKEND")
    if wanted not in (None, "", "jax"):
        raise KerasBackendError(
            f"KERAS_BACKEND={wanted} is set; catalog programs lower through jax: "
            "unset it or set KERAS_BACKEND=jax")
    os.environ["KERAS_BACKEND"] = "jax"


def keras_hub(program: str = "a catalog program") -> tuple[ModuleType, ModuleType]:
    """``(keras, keras_hub)`` on the jax backend, or an InstallError naming the extra."""
    _check_environment()
    try:
        import keras
        import keras_hub as hub
    except ImportError as exc:
        raise InstallError(f"{program} needs keras-hub ({exc.name or exc} is missing): "
                           f"{INSTALL_HINT}") from exc
    if keras.backend.backend() != "jax":  # keras.json can still win if the env var was unset
        raise KerasBackendError(f"keras runs the {keras.backend.backend()!r} backend; catalog "
                                "programs need jax: set KERAS_BACKEND=jax")
    return keras, hub


def keras_hub_version() -> str | None:
    """The installed keras-hub version (None without it); read without importing keras."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("keras-hub")
    except PackageNotFoundError:
        return None


@contextlib.contextmanager
def _dtype_policy(keras: ModuleType, dtype: str) -> Iterator[None]:
    """Build under ``dtype`` as keras' global policy (sub-encoders built inside follow it)."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def build_deferred(make: Callable[[ModuleType, ModuleType], Any], dtype: str,
                   program: str) -> Any:
    """Run ``make(keras, keras_hub)`` so every variable it creates stays shape-only.

    Keras registers deferred variables in a thread-local list and would give them values when
    some later scope exits with ``initialize_variables=True``; the ones made here are taken off
    that list again, so no later keras code materialises a catalog model's weights.
    """
    keras, hub = keras_hub(program)
    pending = _pending_variables()
    before = len(pending) if pending is not None else 0
    with _dtype_policy(keras, dtype), keras.StatelessScope(initialize_variables=False):
        model = make(keras, hub)
    pending = _pending_variables()
    if pending is not None:
        del pending[before:]
    return model


def _pending_variables() -> list | None:
    """Keras' thread-local list of deferred variables (private API: None if it moved)."""
    try:
        from keras.src.backend.common import global_state
    except ImportError:
        return None
    pending = global_state.get_global_attribute("uninitialized_variables")
    return pending if isinstance(pending, list) else None
