"""keras-hub models assembled from sub-models: dense prediction, image-text, diffusion.

Their constructor arguments include other keras models (an image encoder, a text encoder), so
each entry's ``sizes`` hold plain numbers and ``make`` builds the sub-models from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpugraphs_tools.programs.catalog._entry import (
    IMAGE_DIMS,
    CatalogEntry,
    Dims,
    InputSpecs,
    image_inputs,
    scaled,
)
from tpugraphs_tools.programs.catalog._vision import _resnet


def _entry(name: str, backbone: str, family: str, base: dict, small: dict, tiny: dict,
           source: str, **fields: Any) -> CatalogEntry:
    fields.setdefault("inputs", image_inputs())
    fields.setdefault("dims", IMAGE_DIMS)
    return CatalogEntry(
        name=name, backbone=backbone, family=family,
        sizes={"tiny": scaled(base, **tiny), "small": scaled(base, **small), "base": base},
        source=source, **fields)


def _sub(kwargs: Mapping[str, Any], prefix: str) -> dict:
    """The ``prefix_*`` arguments, without the prefix (a sub-model's constructor arguments)."""
    return {k[len(prefix) + 1:]: v for k, v in kwargs.items() if k.startswith(prefix + "_")}


def _own(kwargs: Mapping[str, Any], *prefixes: str) -> dict:
    return {k: v for k, v in kwargs.items()
            if not any(k.startswith(p + "_") for p in prefixes)}


# -- dense prediction on a ResNet / MiT encoder --------------------------------------------

def _resnet_encoder(hub: Any, kwargs: Mapping[str, Any]) -> Any:
    return hub.models.ResNetBackbone(**_sub(kwargs, "encoder"))


def _make_deeplab(hub: Any, kwargs: Mapping[str, Any]) -> Any:
    return hub.models.DeepLabV3Backbone(image_encoder=_resnet_encoder(hub, kwargs),
                                        **_own(kwargs, "encoder"))


def _make_retinanet(hub: Any, kwargs: Mapping[str, Any]) -> Any:
    return hub.models.RetinaNetBackbone(image_encoder=_resnet_encoder(hub, kwargs),
                                        **_own(kwargs, "encoder"))


def _make_segformer(hub: Any, kwargs: Mapping[str, Any]) -> Any:
    encoder = hub.models.MiTBackbone(**_sub(kwargs, "encoder"))
    return hub.models.SegFormerBackbone(image_encoder=encoder, **_own(kwargs, "encoder"))


def _prefixed(prefix: str, kwargs: Mapping[str, Any]) -> dict:
    return {f"{prefix}_{k}": v for k, v in kwargs.items()}


RESNET50 = _prefixed("encoder", _resnet([64, 128, 256, 512], [3, 4, 6, 3],
                                        "bottleneck_block"))
RESNET_TINY = _prefixed("encoder", _resnet([64, 32, 32], [1, 1, 1], "bottleneck_block", stem=16))
RESNET18 = _prefixed("encoder", _resnet([64, 128, 256, 512], [2, 2, 2, 2], "basic_block"))
MIT_B0 = _prefixed("encoder", {
    "layerwise_depths": [2, 2, 2, 2], "num_layers": 4, "layerwise_num_heads": [1, 2, 5, 8],
    "layerwise_sr_ratios": [8, 4, 2, 1], "max_drop_path_rate": 0.1,
    "layerwise_patch_sizes": [7, 3, 3, 3], "layerwise_strides": [4, 2, 2, 2],
    "hidden_dims": [32, 64, 160, 256], "image_shape": (224, 224, 3)})
MIT_TINY = _prefixed("encoder", {
    "layerwise_depths": [1, 1], "num_layers": 2, "layerwise_num_heads": [1, 2],
    "layerwise_sr_ratios": [4, 2], "layerwise_patch_sizes": [7, 3],
    "layerwise_strides": [4, 2], "hidden_dims": [8, 16], "image_shape": (32, 32, 3)})

DENSE = [
    _entry("deeplab_v3", "DeepLabV3Backbone", "dense",
           {**RESNET50, "spatial_pyramid_pooling_key": "P5", "upsampling_size": 8,
            "dilation_rates": [6, 12, 18], "low_level_feature_key": "P2",
            "projection_filters": 48},
           RESNET18,
           {**RESNET_TINY, "spatial_pyramid_pooling_key": "P4", "upsampling_size": 4,
            "low_level_feature_key": "P2", "projection_filters": 8},
           "DeepLabV3+ on ResNet-50 (Chen et al. 2018; keras-hub deeplab_v3_plus_resnet50)",
           make=_make_deeplab, task="DeepLabV3ImageSegmenter",
           task_kwargs={"num_classes": 21}, target="tokens", optimizer="sgd"),
    _entry("retinanet", "RetinaNetBackbone", "dense",
           {**RESNET50, "min_level": 3, "max_level": 7, "use_p5": False},
           RESNET18, {**RESNET_TINY, "min_level": 3, "max_level": 4},
           "RetinaNet ResNet-50 FPN (Lin et al. 2017; keras-hub retinanet_resnet50_fpn_coco)",
           make=_make_retinanet, optimizer="sgd",
           dims={"tiny": Dims(0, 64), "small": Dims(0, 256), "base": Dims(0, 512)}),
    _entry("segformer", "SegFormerBackbone", "dense", {**MIT_B0, "projection_filters": 256},
           {"encoder_layerwise_depths": [1, 1, 1, 1], "encoder_image_shape": (128, 128, 3)},
           {**MIT_TINY, "projection_filters": 16},
           "SegFormer-B0 (Xie et al. 2021; nvidia/segformer-b0-finetuned-ade-512-512)",
           make=_make_segformer, task="SegFormerImageSegmenter",
           task_kwargs={"num_classes": 150}, target="tokens"),
]


# -- image-text: CLIP, SigLIP ------------------------------------------------------------

def _two_tower(vision_cls: str, text_cls: str, backbone_cls: str, *own: str):
    def make(hub: Any, kwargs: Mapping[str, Any]) -> Any:
        vision = getattr(hub.models, vision_cls)(**_sub(kwargs, "vision"))
        text = getattr(hub.models, text_cls)(**_sub(kwargs, "text"))
        return getattr(hub.models, backbone_cls)(
            vision_encoder=vision, text_encoder=text, **{k: kwargs[k] for k in own})

    return make


def _image_text_inputs(kwargs: Mapping[str, Any], dims: Dims) -> InputSpecs:
    """Images at the vision tower's size and token ids at the text tower's length."""
    side = kwargs["vision_image_shape"][0]
    return {"images": ((side, side, 3), "float32"),
            "token_ids": ((kwargs["text_max_sequence_length"],), "int32")}


def _towers(patch: int, d: int, layers: int, heads: int, ffn: int, image: int, vocab: int,
            td: int, tlayers: int, theads: int, tffn: int, seq: int) -> dict:
    vision = {"patch_size": patch, "hidden_dim": d, "num_layers": layers, "num_heads": heads,
              "intermediate_dim": ffn, "image_shape": (image, image, 3)}
    text = {"vocabulary_size": vocab, "embedding_dim": td, "hidden_dim": td,
            "num_layers": tlayers, "num_heads": theads, "intermediate_dim": tffn,
            "max_sequence_length": seq}
    return {**_prefixed("vision", vision), **_prefixed("text", text)}


MULTIMODAL = [
    _entry("clip", "CLIPBackbone", "multimodal",
           {**_towers(32, 768, 12, 12, 3072, 224, 49408, 512, 12, 8, 2048, 77),
            "projection_dim": 512},
           _towers(32, 384, 4, 6, 1536, 224, 49408, 256, 4, 4, 1024, 77),
           {**_towers(8, 32, 2, 2, 64, 32, 256, 32, 2, 2, 64, 16), "projection_dim": 16},
           "CLIP ViT-B/32 (Radford et al. 2021; openai/clip-vit-base-patch32 config.json)",
           make=_two_tower("CLIPVisionEncoder", "CLIPTextEncoder", "CLIPBackbone",
                           "projection_dim"), inputs=_image_text_inputs),
    _entry("siglip", "SigLIPBackbone", "multimodal",
           _towers(16, 768, 12, 12, 3072, 224, 32000, 768, 12, 12, 3072, 64),
           _towers(16, 384, 4, 6, 1536, 224, 32000, 384, 4, 6, 1536, 64),
           _towers(8, 32, 2, 2, 64, 32, 256, 32, 2, 2, 64, 16),
           "SigLIP base patch16 224 (Zhai et al. 2023; google/siglip-base-patch16-224)",
           make=_two_tower("SigLIPVisionEncoder", "SigLIPTextEncoder", "SigLIPBackbone"),
           inputs=_image_text_inputs),
]


# -- diffusion: Flux's rectified-flow transformer ----------------------------------------

def _flux_inputs(kwargs: Mapping[str, Any], _dims: Dims) -> InputSpecs:
    """Packed latent tokens, T5 text states, their 3-axis position ids, pooled CLIP vector."""
    return {"image": (tuple(kwargs["image_shape"]), "float32"),
            "image_ids": (tuple(kwargs["image_ids_shape"]), "float32"),
            "text": (tuple(kwargs["text_shape"]), "float32"),
            "text_ids": (tuple(kwargs["text_ids_shape"]), "float32"),
            "y": (tuple(kwargs["y_shape"]), "float32"),
            "timesteps": ((), "float32"), "guidance": ((), "float32")}


def _flux_shapes(image: int, channels: int, text: int, text_dim: int, pooled: int) -> dict:
    """Input shapes for an ``image``-pixel picture: 8x VAE, 2x2 patches -> (image/16)^2."""
    tokens = (image // 16) ** 2
    return {"image_shape": (tokens, channels), "image_ids_shape": (tokens, 3),
            "text_shape": (text, text_dim), "text_ids_shape": (text, 3), "y_shape": (pooled,)}


DIFFUSION = [
    _entry("flux", "FluxBackbone", "diffusion",
           {"input_channels": 64, "hidden_size": 3072, "mlp_ratio": 4.0, "num_heads": 24,
            "depth": 19, "depth_single_blocks": 38, "axes_dim": [16, 56, 56],
            "theta": 10000, "use_bias": True, **_flux_shapes(512, 64, 256, 4096, 768)},
           {"hidden_size": 512, "num_heads": 4, "depth": 2, "depth_single_blocks": 4,
            "axes_dim": [16, 56, 56], **_flux_shapes(256, 64, 64, 512, 768)},
           {"input_channels": 16, "hidden_size": 32, "num_heads": 2, "depth": 1,
            "depth_single_blocks": 2, "axes_dim": [4, 6, 6],
            **_flux_shapes(64, 16, 8, 32, 16)},
           "FLUX.1-schnell transformer (black-forest-labs/FLUX.1-schnell "
           "transformer/config.json), 512 px, 256 T5 tokens", inputs=_flux_inputs),
]

ENTRIES = [*DENSE, *MULTIMODAL, *DIFFUSION]
