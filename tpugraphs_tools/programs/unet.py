"""U-Nets: the 2-D original (conv+bias+ReLU) and a 3-D volumetric one (conv+BN+ReLU).

Both share one encoder/decoder definition parametrised by the number of spatial dims; the 3-D
variant lowers to ``convolution`` with three spatial dims (``b012f_012io->b012f``), a shape class
2-D models never produce. Upsampling is a learned stride-2 transposed conv, skips are concats.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from tpugraphs_tools.programs import layers as L
from tpugraphs_tools.programs.registry import Program, ProgramArgs, ProgramArgsError, register
from tpugraphs_tools.programs.train import build_program, resolve


@dataclass(frozen=True)
class UNetPreset:
    """First-level channels, number of downsamplings, image side, channel cap, in/out channels."""

    width: int
    depth: int
    image: int
    in_ch: int
    classes: int
    max_ch: int = 1024


UNET2D = {
    "tiny": UNetPreset(width=8, depth=3, image=32, in_ch=3, classes=2),
    "small": UNetPreset(width=32, depth=4, image=128, in_ch=3, classes=2),
    "base": UNetPreset(width=64, depth=4, image=256, in_ch=3, classes=2),  # Ronneberger et al.
}
UNET3D = {
    "tiny": UNetPreset(width=4, depth=2, image=16, in_ch=1, classes=3),
    "small": UNetPreset(width=16, depth=3, image=64, in_ch=1, classes=3),
    # MLPerf-style 3-D U-Net: 128^3 patches, channels 32 .. 320.
    "base": UNetPreset(width=32, depth=4, image=128, in_ch=1, classes=3, max_ch=320),
}


def _channels(cfg: UNetPreset) -> list[int]:
    return [min(cfg.width * 2**i, cfg.max_ch) for i in range(cfg.depth + 1)]


def _double_spec(k: tuple[int, ...], cin: int, cout: int, dtype, bn: bool) -> dict:
    """Two kxk convs; with BN the convs drop their bias (BN's shift replaces it)."""
    if bn:
        return {
            "c1": L.conv_spec(k, cin, cout, dtype),
            "n1": L.bn_spec(cout, dtype),
            "c2": L.conv_spec(k, cout, cout, dtype),
            "n2": L.bn_spec(cout, dtype),
        }
    return {
        "c1": L.conv_bias_spec(k, cin, cout, dtype),
        "c2": L.conv_bias_spec(k, cout, cout, dtype),
    }


def _double(x: jax.Array, p: dict, train: bool) -> jax.Array:
    for c, n in (("c1", "n1"), ("c2", "n2")):
        x = L.batch_norm(L.conv(x, p[c]), p[n], train) if n in p else L.conv_bias(x, p[c])
        x = jax.nn.relu(x)
    return x


def unet_spec(cfg: UNetPreset, nsp: int, dtype, bn: bool) -> dict:
    """Encoder levels, bottleneck, decoder levels (up-conv + double conv), 1x1 classifier."""
    k3, k2, k1 = (3,) * nsp, (2,) * nsp, (1,) * nsp
    ch = _channels(cfg)
    enc, cin = [], cfg.in_ch
    for c in ch[:-1]:
        enc.append(_double_spec(k3, cin, c, dtype, bn))
        cin = c
    dec = []
    for i in reversed(range(cfg.depth)):
        dec.append(
            {
                "up": L.conv_bias_spec(k2, ch[i + 1], ch[i], dtype),
                "conv": _double_spec(k3, 2 * ch[i], ch[i], dtype, bn),
            }
        )
    return {
        "enc": enc,
        "mid": _double_spec(k3, ch[-2], ch[-1], dtype, bn),
        "dec": dec,
        "out": L.conv_bias_spec(k1, ch[0], cfg.classes, dtype),
    }


def unet(x: jax.Array, p: dict, train: bool) -> jax.Array:
    """Per-pixel (per-voxel) class logits with the input's spatial shape."""
    skips = []
    for ep in p["enc"]:
        x = _double(x, ep, train)
        skips.append(x)
        x = L.max_pool(x, window=2, stride=2, padding="VALID")
    x = _double(x, p["mid"], train)
    for dp, skip in zip(p["dec"], reversed(skips), strict=True):
        x = L.conv_transpose(x, dp["up"], stride=2)
        x = _double(jnp.concatenate([skip, x], axis=-1), dp["conv"], train)
    return L.conv_bias(x, p["out"])


def make_build(presets: dict, nsp: int, bn: bool, name: str):
    """Build function for the 2-D or 3-D U-Net: images -> logits; train adds int label maps."""

    def build(args: ProgramArgs):
        cfg = resolve(presets, args, name)
        dtype = L.dtype_of(args.dtype)
        size = args.image_size or cfg.image
        multiple = 2**cfg.depth
        if size % multiple:
            raise ProgramArgsError(
                f"{name}: image_size must be a multiple of {multiple}, got {size}"
            )
        train = args.mode == "train"
        params = unet_spec(cfg, nsp, dtype, bn)
        spatial = (size,) * nsp

        def forward(p, images):
            return unet(images, p, train)

        images = L.spec((args.batch, *spatial, cfg.in_ch), dtype)
        labels = L.ids_spec((args.batch, *spatial))
        return build_program(args, params, [images], forward, [labels], optimizer="adam")

    return build


register(
    Program(
        name="unet",
        description="2-D U-Net segmenter (conv+bias+ReLU, max-pool down, transposed-conv up)",
        presets=tuple(UNET2D),
        build=make_build(UNET2D, 2, bn=False, name="unet"),
        defaults={k: {"image_size": v.image} for k, v in UNET2D.items()},
    )
)
register(
    Program(
        name="unet3d",
        description="3-D U-Net volumetric segmenter (3-D convs with batch norm)",
        presets=tuple(UNET3D),
        build=make_build(UNET3D, 3, bn=True, name="unet3d"),
        defaults={k: {"image_size": v.image} for k, v in UNET3D.items()},
    )
)
