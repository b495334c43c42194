"""The versions a baseline's numbers depend on, recorded in every report and saved model."""

from __future__ import annotations

import platform
from importlib import metadata

_PACKAGES = ("jax", "jaxlib", "flax", "optax", "numpy", "scipy")


def versions() -> dict[str, str | None]:
    """Python and the packages whose versions change the numbers."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out
