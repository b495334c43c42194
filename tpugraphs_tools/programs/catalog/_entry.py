"""What a catalog entry is: a keras-hub architecture, its sizes, its inputs and its loss.

Entries are plain data (no keras import), so ``tgt programs`` lists them on a machine without
keras-hub; :mod:`._program` turns one into ``(fn, example_args)`` when it is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

PREFIX = "keras_hub/"
PRESETS = ("tiny", "small", "base")

# Family -> words for `tgt programs` and the docs; the plan and the tests pick across them.
FAMILIES = {
    "decoder": "decoder LLM",
    "encoder": "text encoder",
    "seq2seq": "encoder-decoder",
    "convnet": "vision convnet",
    "vit": "vision transformer",
    "dense": "dense prediction (detection, segmentation, depth)",
    "multimodal": "image-text",
    "audio": "audio",
    "diffusion": "diffusion",
}

# name -> (shape without batch, dtype); `inputs` callables build it from the sizes asked for.
InputSpecs = dict[str, tuple[tuple[int, ...], str]]


@dataclass(frozen=True)
class Dims:
    """Sequence length and image side an entry's inputs are built at."""

    seq: int
    image: int


@dataclass(frozen=True)
class CatalogEntry:
    """One keras-hub architecture as a tgt program (``keras_hub/<name>``).

    ``sizes[preset]`` are the backbone's constructor arguments (``base``: a published model,
    cited in ``source``; ``tiny``: the same structure scaled down for tests). ``make``, when
    set, builds the backbone from ``(keras_hub, kwargs)`` for composite models whose
    arguments are sub-models. ``task`` wraps the backbone in a keras-hub task (a causal-LM or
    classifier head) so the program has the logits a trainer's loss reads; ``target`` says what
    that loss compares against: ``tokens`` (next-token ids), ``classes`` (one id per example)
    or ``features`` (MSE against a float target shaped like every output).
    """

    name: str
    backbone: str
    family: str
    sizes: Mapping[str, Mapping[str, Any]]
    inputs: Callable[[Mapping[str, Any], Dims], InputSpecs]
    dims: Mapping[str, Dims]
    source: str
    task: str | None = None
    task_kwargs: Mapping[str, Any] = field(default_factory=dict)
    target: str = "features"
    optimizer: str = "adamw"
    make: Callable[[Any, Mapping[str, Any]], Any] | None = None
    # Why this entry cannot be built or collected on the supported versions (listed, not hidden).
    broken: str | None = None

    @property
    def program_name(self) -> str:
        return PREFIX + self.name

    def description(self) -> str:
        head = f" + {self.task}" if self.task else ""
        return f"keras-hub {self.backbone}{head} ({FAMILIES[self.family]})"


# Default sequence lengths / image sides per preset, by the kind of input.
TEXT_DIMS = {"tiny": Dims(16, 0), "small": Dims(128, 0), "base": Dims(512, 0)}
IMAGE_DIMS = {"tiny": Dims(0, 32), "small": Dims(0, 128), "base": Dims(0, 224)}


def text_inputs(*names: str) -> Callable[[Mapping[str, Any], Dims], InputSpecs]:
    """int32 ``[B, S]`` inputs, by default token ids and a padding mask."""
    names = names or ("token_ids", "padding_mask")

    def specs(_kwargs: Mapping[str, Any], dims: Dims) -> InputSpecs:
        return {n: ((dims.seq,), "int32") for n in names}

    return specs


def seq2seq_inputs(_kwargs: Mapping[str, Any], dims: Dims) -> InputSpecs:
    """Encoder and decoder token ids with their padding masks."""
    return {f"{side}_{kind}": ((dims.seq,), "int32")
            for side in ("encoder", "decoder") for kind in ("token_ids", "padding_mask")}


def image_inputs(key: str = "images", channels: int = 3
                 ) -> Callable[[Mapping[str, Any], Dims], InputSpecs]:
    """One NHWC float image batch under ``key``."""

    def specs(_kwargs: Mapping[str, Any], dims: Dims) -> InputSpecs:
        return {key: ((dims.image, dims.image, channels), "float32")}

    return specs


def scaled(base: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """``base`` with some constructor arguments replaced (how tiny/small derive from base)."""
    return {**base, **overrides}
