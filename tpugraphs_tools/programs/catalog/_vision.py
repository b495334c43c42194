"""Vision backbones from keras-hub: convnets and vision transformers.

Where keras-hub has an image-classifier task the entry uses it (global pooling + a 1000-way
head, trained with cross-entropy, SGD + momentum for convnets, AdamW for transformers);
feature extractors without one (DINO, ViTDet) train against an MSE target on their features.
``base`` sizes are the ImageNet models named per entry (the convnets' numbers are those
keras-hub's timm converters map each timm architecture to); ``tiny`` keeps each block type at
a few channels, 32 px.
"""

from __future__ import annotations

from typing import Any

from tpugraphs_tools.programs.catalog._entry import (
    IMAGE_DIMS,
    CatalogEntry,
    Dims,
    image_inputs,
    scaled,
)

IMAGES = image_inputs()
CLASSES = 1000


def _vision(name: str, backbone: str, family: str, base: dict, small: dict, tiny: dict,
            source: str, classifier: bool = True, **extra: Any) -> CatalogEntry:
    prefix = backbone.removesuffix("Backbone")
    head: dict[str, Any] = {"task": f"{prefix}ImageClassifier",
                            "task_kwargs": {"num_classes": CLASSES},
                            "target": "classes"} if classifier else {}
    fields: dict[str, Any] = {"inputs": IMAGES, "dims": IMAGE_DIMS,
                              "optimizer": "sgd" if family == "convnet" else "adamw",
                              **head, **extra}
    return CatalogEntry(
        name=name, backbone=backbone, family=family,
        sizes={"tiny": scaled(base, **tiny), "small": scaled(base, **small), "base": base},
        source=source, **fields)


def _resnet(filters: list[int], blocks: list[int], block: str, stem: int = 64) -> dict:
    return {"input_conv_filters": [stem], "input_conv_kernel_sizes": [7],
            "stackwise_num_filters": filters, "stackwise_num_blocks": blocks,
            "stackwise_num_strides": [1] + [2] * (len(filters) - 1), "block_type": block}


EFFICIENTNET_B0: dict[str, Any] = {
    "stackwise_width_coefficients": [1.0] * 7, "stackwise_depth_coefficients": [1.0] * 7,
    "stackwise_squeeze_and_excite_ratios": [0.25] * 7,
    "stackwise_kernel_sizes": [3, 3, 5, 3, 5, 5, 3],
    "stackwise_num_repeats": [1, 2, 2, 3, 3, 4, 1],
    "stackwise_input_filters": [32, 16, 24, 40, 80, 112, 192],
    "stackwise_output_filters": [16, 24, 40, 80, 112, 192, 320],
    "stackwise_expansion_ratios": [1, 6, 6, 6, 6, 6, 6],
    "stackwise_strides": [1, 2, 2, 2, 1, 2, 1], "stackwise_block_types": ["v1"] * 7,
    "min_depth": None, "use_depth_divisor_as_min_depth": True,
    "cap_round_filter_decrease": True, "dropout": 0, "batch_norm_epsilon": 1e-5,
}


def _efficientnet_cut(stages: int, repeats: int, filters: list[int]) -> dict:
    """EfficientNet-B0's first ``stages`` stages, ``repeats`` blocks each, narrower."""
    cut = {k: v[:stages] for k, v in EFFICIENTNET_B0.items()
           if k.startswith("stackwise_")}
    return {**cut, "stackwise_num_repeats": [repeats] * stages,
            "stackwise_input_filters": filters[:-1], "stackwise_output_filters": filters[1:],
            "stackwise_force_input_filters": [0] * stages,
            "stackwise_nores_option": [False] * stages, "num_features": 4 * filters[-1]}


MOBILENET_V3_SMALL = {
    "stackwise_num_blocks": [2, 3, 2, 3],
    "stackwise_expansion": [[72, 88], [96, 240, 240], [120, 144], [288, 576, 576]],
    "stackwise_num_filters": [[24, 24], [40, 40, 40], [48, 48], [96, 96, 96]],
    "stackwise_kernel_size": [[3, 3], [5, 5, 5], [5, 5], [5, 5, 5]],
    "stackwise_num_strides": [[2, 1], [2, 1, 1], [1, 1], [2, 1, 1]],
    "stackwise_se_ratio": [[None, None], [0.25] * 3, [0.25] * 2, [0.25] * 3],
    "stackwise_activation": [["relu", "relu"], ["hard_swish"] * 3, ["hard_swish"] * 2,
                             ["hard_swish"] * 3],
    "stackwise_padding": [[1, 1], [2, 2, 2], [2, 2], [2, 2, 2]],
    "output_num_filters": 1024, "input_num_filters": 16, "depthwise_filters": 16,
    "depthwise_stride": 2, "depthwise_residual": False, "squeeze_and_excite": 0.5,
    "last_layer_filter": 576, "input_activation": "hard_swish",
    "output_activation": "hard_swish",
}

XCEPTION_41 = {
    "stackwise_conv_filters": [[32, 64], [128, 128], [256, 256], [728, 728],
                               *[[728, 728, 728]] * 8, [728, 1024], [1536, 2048]],
    "stackwise_pooling": [False, True, True, True, *[False] * 8, True, False],
}

HGNETV2_B0 = {
    "stem_channels": [3, 16, 16],
    "stackwise_stage_filters": [[16, 16, 64, 1, 3, 3], [64, 32, 256, 1, 3, 3],
                                [256, 64, 512, 2, 3, 5], [512, 128, 1024, 1, 3, 5]],
    "apply_downsample": [False, True, True, True],
    "use_lightweight_conv_block": [False, False, True, True], "embedding_size": 16,
    "hidden_sizes": [64, 256, 512, 1024], "depths": [1, 1, 2, 1], "hidden_act": "relu",
    "use_learnable_affine_block": True,
}

CSPDARKNET_53 = {
    "stem_filters": 32, "stem_kernel_size": 3, "stem_strides": 1,
    "stackwise_depth": [1, 2, 8, 8, 4], "stackwise_num_filters": [64, 128, 256, 512, 1024],
    "stackwise_strides": [2, 2, 2, 2, 2], "bottle_ratio": (0.5, 1.0),
    "block_ratio": (1.0, 0.5), "expand_ratio": (2.0, 1.0), "stem_padding": "same",
    "stage_type": "csp", "block_type": "dark_block", "down_growth": True,
}

CONVNETS = [
    _vision("resnet", "ResNetBackbone", "convnet",
            _resnet([64, 128, 256, 512], [3, 4, 6, 3], "bottleneck_block"),
            _resnet([64, 128, 256, 512], [2, 2, 2, 2], "basic_block"),
            _resnet([64, 32], [1, 1], "bottleneck_block", stem=16),
            "ResNet-50 v1 (He et al. 2015; timm resnet50); small = ResNet-18"),
    _vision("resnet_v2", "ResNetBackbone", "convnet",
            {**_resnet([64, 128, 256, 512], [3, 4, 6, 3], "bottleneck_block"),
             "use_pre_activation": True},
            {**_resnet([64, 128, 256, 512], [2, 2, 2, 2], "basic_block"),
             "use_pre_activation": True},
            {**_resnet([64, 32], [1, 1], "bottleneck_block", stem=16),
             "use_pre_activation": True},
            "ResNet-50 v2, pre-activation (He et al. 2016)", task="ResNetImageClassifier"),
    _vision("efficientnet", "EfficientNetBackbone", "convnet", EFFICIENTNET_B0,
            _efficientnet_cut(5, 2, [32, 16, 24, 40, 80, 112]),
            _efficientnet_cut(3, 1, [8, 8, 16, 24]),
            "EfficientNet-B0 (Tan & Le 2019; timm efficientnet_b0)"),
    _vision("mobilenet", "MobileNetBackbone", "convnet", MOBILENET_V3_SMALL,
            {"output_num_filters": 512},
            {"stackwise_num_blocks": [1, 1],
             "stackwise_expansion": [[16], [24]], "stackwise_num_filters": [[8], [16]],
             "stackwise_kernel_size": [[3], [5]], "stackwise_num_strides": [[2], [2]],
             "stackwise_se_ratio": [[None], [0.25]],
             "stackwise_activation": [["relu"], ["hard_swish"]],
             "stackwise_padding": [[1], [2]], "output_num_filters": 64,
             "input_num_filters": 8, "depthwise_filters": 8, "last_layer_filter": 32},
            "MobileNetV3-Small 1.0 (Howard et al. 2019; timm mobilenetv3_small_100)"),
    _vision("densenet", "DenseNetBackbone", "convnet",
            {"stackwise_num_repeats": [6, 12, 24, 16], "growth_rate": 32},
            {"stackwise_num_repeats": [2, 4, 8, 4]},
            {"stackwise_num_repeats": [1, 2], "growth_rate": 8},
            "DenseNet-121 (Huang et al. 2017)"),
    _vision("vgg", "VGGBackbone", "convnet",
            {"stackwise_num_repeats": [2, 2, 3, 3, 3],
             "stackwise_num_filters": [64, 128, 256, 512, 512]},
            {"stackwise_num_repeats": [1, 1, 2, 2, 2]},
            {"stackwise_num_repeats": [1, 1], "stackwise_num_filters": [8, 16]},
            "VGG-16 (Simonyan & Zisserman 2014); small = VGG-11's depth",
            task_kwargs={"num_classes": CLASSES, "pooling": "avg"}),
    _vision("xception", "XceptionBackbone", "convnet", XCEPTION_41,
            {"stackwise_conv_filters": [[32, 64], [128, 128], [256, 256], [728, 728],
                                        [728, 728, 728], [728, 1024], [1536, 2048]],
             "stackwise_pooling": [False, True, True, True, False, True, False]},
            {"stackwise_conv_filters": [[8, 16], [32, 32], [32, 32, 32], [48, 64]],
             "stackwise_pooling": [False, True, False, False]},
            "Xception-41 (Chollet 2017; keras-hub xception_41_imagenet)"),
    _vision("cspnet", "CSPNetBackbone", "convnet", CSPDARKNET_53,
            {"stackwise_depth": [1, 1, 2, 2, 1]},
            {"stem_filters": 8, "stackwise_depth": [1, 1],
             "stackwise_num_filters": [16, 32], "stackwise_strides": [2, 2]},
            "CSPDarkNet-53 (Wang et al. 2019; timm cspdarknet53)"),
    _vision("hgnetv2", "HGNetV2Backbone", "convnet", HGNETV2_B0,
            {"depths": [1, 1, 1, 1]},
            {"stem_channels": [3, 8, 8],
             "stackwise_stage_filters": [[8, 8, 16, 1, 2, 3], [16, 8, 32, 1, 2, 3]],
             "apply_downsample": [False, True], "use_lightweight_conv_block": [False, True],
             "embedding_size": 8, "hidden_sizes": [16, 32], "depths": [1, 1]},
            "HGNetV2-B0 (PaddlePaddle; timm hgnetv2_b0)"),
]


def _vit(layers: int, heads: int, d: int, mlp: int, patch: int, image: int) -> dict:
    return {"image_shape": (image, image, 3), "patch_size": patch, "num_layers": layers,
            "num_heads": heads, "hidden_dim": d, "mlp_dim": mlp}


def _deit(layers: int, heads: int, d: int, mlp: int, patch: int, image: int) -> dict:
    vit = _vit(layers, heads, d, mlp, patch, image)
    return {**{k: v for k, v in vit.items() if k != "mlp_dim"}, "intermediate_dim": mlp}


def _dino(layers: int, heads: int, d: int, mlp: int, patch: int, image: int) -> dict:
    return {"patch_size": patch, "num_layers": layers, "num_heads": heads, "hidden_dim": d,
            "intermediate_dim": mlp, "image_shape": (image, image, 3)}


VIT_DIMS = {"tiny": Dims(0, 32), "small": Dims(0, 112), "base": Dims(0, 224)}

TRANSFORMERS = [
    _vision("vit", "ViTBackbone", "vit", _vit(12, 12, 768, 3072, 16, 224),
            _vit(4, 8, 512, 2048, 16, 112), _vit(2, 2, 32, 64, 8, 32),
            "ViT-B/16 (Dosovitskiy et al. 2021; google/vit-base-patch16-224)", dims=VIT_DIMS),
    _vision("deit", "DeiTBackbone", "vit",
            _deit(12, 12, 768, 3072, 16, 224), _deit(4, 8, 512, 2048, 16, 112),
            _deit(2, 2, 32, 64, 8, 32),
            "DeiT-B/16 (Touvron et al. 2021; facebook/deit-base-distilled-patch16-224)",
            dims=VIT_DIMS),
    _vision("dinov2", "DINOV2Backbone", "vit", _dino(12, 6, 384, 1536, 14, 224),
            _dino(4, 6, 384, 1536, 14, 112), _dino(2, 2, 32, 64, 8, 32),
            "DINOv2 ViT-S/14 (facebook/dinov2-small config.json)", classifier=False,
            dims={"tiny": Dims(0, 32), "small": Dims(0, 112), "base": Dims(0, 224)}),
    _vision("dinov3", "DINOV3Backbone", "vit", _dino(12, 6, 384, 1536, 16, 224),
            _dino(4, 6, 384, 1536, 16, 112), _dino(2, 2, 32, 64, 8, 32),
            "DINOv3 ViT-S/16 (facebook/dinov3-vits16-pretrain-lvd1689m config.json)",
            classifier=False, dims=VIT_DIMS),
    _vision("swin_transformer", "SwinTransformerBackbone", "vit",
            {"image_shape": (224, 224, 3), "embed_dim": 96, "depths": [2, 2, 6, 2],
             "num_heads": [3, 6, 12, 24], "window_size": 7},
            {"image_shape": (112, 112, 3), "depths": [2, 2, 2, 2]},
            {"image_shape": (32, 32, 3), "embed_dim": 16, "depths": [1, 1],
             "num_heads": [1, 2], "window_size": 4},
            "Swin-T (Liu et al. 2021; microsoft/swin-tiny-patch4-window7-224)",
            dims={"tiny": Dims(0, 32), "small": Dims(0, 112), "base": Dims(0, 224)}),
    _vision("mit", "MiTBackbone", "vit",
            {"layerwise_depths": [2, 2, 2, 2], "num_layers": 4,
             "layerwise_num_heads": [1, 2, 5, 8], "layerwise_sr_ratios": [8, 4, 2, 1],
             "max_drop_path_rate": 0.1, "layerwise_patch_sizes": [7, 3, 3, 3],
             "layerwise_strides": [4, 2, 2, 2], "hidden_dims": [32, 64, 160, 256],
             "image_shape": (224, 224, 3)},
            {"layerwise_depths": [1, 1, 1, 1], "image_shape": (128, 128, 3)},
            {"layerwise_depths": [1, 1], "num_layers": 2, "layerwise_num_heads": [1, 2],
             "layerwise_sr_ratios": [4, 2], "layerwise_patch_sizes": [7, 3],
             "layerwise_strides": [4, 2], "hidden_dims": [8, 16], "image_shape": (32, 32, 3)},
            "MiT-B0, SegFormer's encoder (Xie et al. 2021; nvidia/mit-b0)"),
    _vision("vit_det", "ViTDetBackbone", "vit",
            {"hidden_size": 768, "num_layers": 12, "intermediate_dim": 3072, "num_heads": 12,
             "global_attention_layer_indices": [2, 5, 8, 11], "image_shape": (1024, 1024, 3),
             "patch_size": 16, "window_size": 14},
            {"num_layers": 4, "global_attention_layer_indices": [1, 3],
             "image_shape": (256, 256, 3)},
            {"hidden_size": 32, "num_layers": 2, "intermediate_dim": 64, "num_heads": 2,
             "global_attention_layer_indices": [1], "image_shape": (64, 64, 3),
             "patch_size": 8, "window_size": 4, "num_output_channels": 16},
            "SAM ViT-B image encoder (Kirillov et al. 2023; facebook/sam-vit-base)",
            classifier=False,
            dims={"tiny": Dims(0, 64), "small": Dims(0, 256), "base": Dims(0, 1024)}),
]

ENTRIES = [*CONVNETS, *TRANSFORMERS]
