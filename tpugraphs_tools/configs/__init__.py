"""Configuration spaces (what may be chosen per graph/kernel), encodings and search strategies."""

from tpugraphs_tools.configs.kernel_config import (
    NUM_TILE_FEATURES,
    KernelConfig,
    KernelConfigSpace,
    bounds_features,
)
from tpugraphs_tools.configs.layout import (
    NUM_LAYOUT_FEATURES,
    SLOTS,
    Layout,
    LayoutConfig,
    LayoutSpace,
    LayoutTensor,
    layout_space,
    physical_order,
)
from tpugraphs_tools.configs.search import STRATEGIES, generate_configs
from tpugraphs_tools.configs.tile import default_space

__all__ = [
    "NUM_LAYOUT_FEATURES", "NUM_TILE_FEATURES", "SLOTS", "STRATEGIES", "KernelConfig",
    "KernelConfigSpace", "Layout", "LayoutConfig", "LayoutSpace", "LayoutTensor", "bounds_features",
    "default_space",
    "generate_configs", "layout_space", "physical_order",
]
