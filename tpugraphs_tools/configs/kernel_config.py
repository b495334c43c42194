"""The kernel config record every tile config space shares, and TpuGraphs' tile encoding.

A :class:`KernelConfig` is what one kernel is given (knob settings; none = the compiler's
default); a :class:`KernelConfigSpace` is what one backend offers. Both, with the bounds
encoding of the official tile collection (``bounds_features``), sit below the spaces
(``tile.py`` for XLA:CPU, ``tile_gpu.py`` for Triton GEMM tiles) so that the spaces import the
record and ``tile.default_space`` imports the spaces, never the other way round.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from tpugraphs_tools.format import TILE_CONFIG_WIDTH
from tpugraphs_tools.hlo import Module

NUM_TILE_FEATURES = TILE_CONFIG_WIDTH
Setting = tuple[str, Any]


@dataclass(frozen=True)
class KernelConfig:
    """Knob settings for one kernel; no settings = the compiler's default for that kernel."""

    settings: tuple[Setting, ...] = ()

    @classmethod
    def of(cls, **settings: Any) -> KernelConfig:
        return cls(tuple(sorted(settings.items())))

    @property
    def is_default(self) -> bool:
        return not self.settings

    def as_dict(self) -> dict[str, Any]:
        return dict(self.settings)

    def merged(self, other: KernelConfig) -> KernelConfig:
        return KernelConfig(tuple(sorted({**self.as_dict(), **other.as_dict()}.items())))

    def to_json(self) -> str:
        """configs.parquet ``config`` column: the settings as a JSON object (lists for tuples)."""
        return json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in self.settings},
                          sort_keys=True)

    @classmethod
    def from_json(cls, value: str | Mapping[str, Any]) -> KernelConfig:
        """The inverse of :meth:`to_json` (a JSON text or its parsed object): lists become
        tuples again, as settings are hashable."""
        settings = json.loads(value) if isinstance(value, str) else value
        return cls.of(**{k: tuple(v) if isinstance(v, list) else v for k, v in settings.items()})


@runtime_checkable
class KernelConfigSpace(Protocol):
    """What one backend lets a kernel choose, and how a choice is encoded and applied."""

    name: str         # graphs.parquet ``config_space``
    kernel_form: str  # which kernel text it configures: "inlined" body or "wrapped" fusion
    # True where the compiler caches per process what a config should change (XLA:GPU's
    # autotuning, keyed by the fusion HLO): each configured compile then needs a fresh worker.
    fresh_compiler_per_config: bool

    def configs(self, kernel: Module) -> list[KernelConfig]:
        """Candidates in the order to try them; the first is the default config."""
        ...

    def infeasible(self, kernel: Module, config: KernelConfig) -> str | None:
        """Why the device cannot run ``config`` on ``kernel`` at all (its row is then
        ``infeasible`` and it is never compiled); None when it may run."""
        ...

    def encode(self, config: KernelConfig) -> np.ndarray:
        """float32 [NUM_TILE_FEATURES] ``config_feat`` row; all zeros is the compiler's default."""
        ...

    def compile_options(self, config: KernelConfig) -> dict[str, Any]:
        """XLA debug options that carry ``config`` to the compiler."""
        ...

    def apply(self, text: str, config: KernelConfig) -> str:
        """Kernel HLO text with ``config`` written into it (unchanged if options carry it)."""
        ...

    def realized(self, optimized: Module, config: KernelConfig) -> tuple[KernelConfig,
                                                                          dict[str, Any]]:
        """(config the compiler ran, facts read back from the optimized kernel)."""
        ...


def bounds_features(kernel: Iterable[float], output: Iterable[float],
                    inputs: Iterable[float]) -> np.ndarray:
    """TpuGraphs' tile features: per group its six leading values (0-padded), then the sum and
    product of *all* its values (0 for an empty group), as the official encoder computes them
    from a kernel's bounds (a group may hold more than six, e.g. rank-7 kernel bounds)."""
    feat = np.zeros(NUM_TILE_FEATURES, dtype=np.float32)
    for start, group in ((0, kernel), (8, output), (16, inputs)):
        values = tuple(group)
        feat[start:start + min(len(values), 6)] = values[:6]
        if values:
            feat[start + 6] = sum(values)
            feat[start + 7] = float(np.prod(values, dtype=np.float64))
    return feat
