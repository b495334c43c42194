"""What a tile collection is told on top of the shared measurement options."""

from __future__ import annotations

from dataclasses import dataclass, field

from tpugraphs_tools.configs import KernelConfigSpace
from tpugraphs_tools.measure import MeasureOptions


@dataclass(frozen=True)
class TileOptions:
    """The tile collection's own knobs on top of the shared :class:`MeasureOptions`
    (``measure.configs`` is the measured configs per kernel, at least 2)."""

    measure: MeasureOptions = field(default_factory=lambda: MeasureOptions(configs=8))
    max_attempts: int | None = None    # configs tried per kernel; default 3 × configs_per_kernel
    min_distinct: int = 2              # kernels with fewer ok configs are reported, not stored
    space: KernelConfigSpace | None = None  # default: the backend's space (configs/tile.py)
    # Kernels share their worker processes (measure/measurer.py); False: fresh ones per kernel,
    # as before (for measuring what sharing saves).
    share_workers: bool = True

    @property
    def configs_per_kernel(self) -> int:
        """Measured (ok) configs per kernel, the default included."""
        return max(2, self.measure.configs)
