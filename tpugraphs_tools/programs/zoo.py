"""Imports every built-in program module so each registers itself with the registry."""

from tpugraphs_tools.programs import (  # noqa: F401
    detector,
    efficientnet,
    mlp,
    resnet,
    transformers,
    unet,
    vit,
)
