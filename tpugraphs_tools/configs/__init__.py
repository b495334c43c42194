"""Configuration spaces (what may be chosen per graph/kernel), encodings and search strategies."""

from tpugraphs_tools.configs.layout import (
    NUM_LAYOUT_FEATURES,
    LayoutConfig,
    LayoutSpace,
    LayoutTensor,
    layout_space,
)
from tpugraphs_tools.configs.search import STRATEGIES, generate_configs

__all__ = ["NUM_LAYOUT_FEATURES", "STRATEGIES", "LayoutConfig", "LayoutSpace", "LayoutTensor",
           "generate_configs", "layout_space"]
