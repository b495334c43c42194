"""keras-hub backbone classes the catalog has no entry of, and why (listed, never hidden).

``tgt programs`` prints these under the catalog and ``bench/bench_catalog.py`` puts them in
the table of every ``*Backbone`` name keras-hub exports, so a user sees what "any model in the
catalog" does not cover yet. Keys are class names; values ``(covering class, reason)``: an
alias points at the class whose entries cover it.
"""

from __future__ import annotations

NO_MODEL = "a base class, not a model"
NOT_YET = "not an entry yet: "
COMPOSITE = (NOT_YET + "built from sub-models ({}) whose published sizes the catalog "
             "does not encode yet")

NOTES: dict[str, tuple[str, str]] = {
    "Backbone": ("", NO_MODEL),
    "FeaturePyramidBackbone": ("", NO_MODEL),
    "Qwen2Backbone": ("QwenBackbone", "the same class as QwenBackbone"),
    "SmolLMBackbone": ("SmolLM3Backbone", "the same class as SmolLM3Backbone"),
    "ESM2Backbone": ("ESMBackbone", "the same class as ESMBackbone"),
    "BASNetBackbone": ("", COMPOSITE.format("a ResNet image encoder, prediction and "
                                            "refinement heads")),
    "BLIP2Backbone": ("", COMPOSITE.format("a ViT, a Q-Former and an OPT language model")),
    "DFineBackbone": ("", COMPOSITE.format("an HGNetV2 encoder and a deformable-attention "
                                           "DETR decoder, 25 size arguments")),
    "DepthAnythingBackbone": ("", COMPOSITE.format("a DINOv2 encoder and a DPT neck")),
    "MetaCLIP2Backbone": ("", COMPOSITE.format("MetaCLIP 2 vision and text encoders")),
    "PARSeqBackbone": ("", COMPOSITE.format("a ViT image encoder and a permuted decoder")),
    "SAMBackbone": ("", COMPOSITE.format("a ViTDet image encoder, a prompt encoder and a "
                                         "two-way mask decoder")),
    "SAM3PromptableConceptBackbone": ("", COMPOSITE.format(
        "vision, text and geometry encoders, a DETR encoder/decoder and a mask decoder")),
    "StableDiffusion3Backbone": ("", COMPOSITE.format("an MMDiT, a VAE and two CLIP text "
                                                      "encoders")),
    "PaliGemmaBackbone": ("", NOT_YET + "Gemma decoder + SigLIP image tower whose "
                              "image-token inputs the catalog does not build yet"),
    "Gemma3nBackbone": ("", NOT_YET + "AltUp / Laurel / per-layer-input arguments "
                            "(17 required) without a checked published configuration"),
    "Gemma4Backbone": ("", NOT_YET + "no published configuration checked for its "
                           "per-layer-input and MoE arguments"),
    "Qwen3_5Backbone": ("", NOT_YET + "no published configuration checked for its "
                            "linear-attention (gated delta net) layers"),
    "Qwen3_5MoeBackbone": ("", NOT_YET + "no published configuration checked for its "
                               "linear-attention (gated delta net) layers"),
    "MobileNetV5Backbone": ("", NOT_YET + "Gemma 3n's vision tower, 17 per-stage "
                                "argument lists without a checked published configuration"),
    "VideoPrismBackbone": ("", NOT_YET + "video input (frames x patches) without a "
                               "checked published configuration"),
}


def class_notes() -> dict[str, tuple[str, str]]:
    """keras-hub class name -> (class whose entries cover it, or "", why it has none)."""
    return dict(NOTES)


def base_classes() -> list[str]:
    """keras-hub ``*Backbone`` names that are base classes, not models (never an entry)."""
    return sorted(cls for cls, (_alias, why) in NOTES.items() if why == NO_MODEL)


def missing_entries() -> dict[str, str]:
    """Model classes with no entry yet -> what an entry still needs (an entry is a published
    configuration of the class that the catalog builds at every preset)."""
    return {cls: why.removeprefix(NOT_YET) for cls, (alias, why) in sorted(NOTES.items())
            if not alias and why.startswith(NOT_YET)}
