"""EfficientNet-B0: MBConv blocks with depthwise convs, squeeze-excite and swish.

Depthwise convs lower to ``convolution`` with ``feature_group_count`` = channels, the op class
whose TPU cost differs most from dense convs, which is why the zoo carries this net.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax

from tpugraphs_tools.programs import layers as L
from tpugraphs_tools.programs.registry import Program, ProgramArgs, register
from tpugraphs_tools.programs.train import build_program, resolve

# (expand ratio, kernel, stride, output channels, repeats) of B0's seven stages.
B0_STAGES = (
    (1, 3, 1, 16, 1),
    (6, 3, 2, 24, 2),
    (6, 5, 2, 40, 2),
    (6, 3, 2, 80, 3),
    (6, 5, 1, 112, 3),
    (6, 5, 2, 192, 4),
    (6, 3, 1, 320, 1),
)


@dataclass(frozen=True)
class EffPreset:
    """Width multiplier on every channel count, default image side, class count."""

    width: float
    image: int
    classes: int


PRESETS = {
    "tiny": EffPreset(width=0.25, image=32, classes=10),
    "small": EffPreset(width=0.5, image=128, classes=1000),
    "base": EffPreset(width=1.0, image=224, classes=1000),
}


def _ch(c: int, mult: float) -> int:
    """Scale a channel count and round to a multiple of 8 (as the reference does), min 8."""
    return max(8, int(c * mult + 4) // 8 * 8)


def _blocks(mult: float) -> list[tuple[int, int, int, int, int]]:
    """Flattened (cin, expand, kernel, stride, cout) for all 16 blocks."""
    out, cin = [], _ch(32, mult)
    for expand, k, stride, c, reps in B0_STAGES:
        cout = _ch(c, mult)
        for i in range(reps):
            out.append((cin, expand, k, stride if i == 0 else 1, cout))
            cin = cout
    return out


def _mbconv_spec(cin: int, expand: int, k: int, cout: int, dtype) -> dict:
    mid = cin * expand
    se = max(1, cin // 4)  # squeeze ratio 0.25 of the block input
    p = {}
    if expand != 1:
        p["expand"] = L.conv_spec((1, 1), cin, mid, dtype)
        p["bn0"] = L.bn_spec(mid, dtype)
    p.update(
        dw=L.conv_spec((k, k), mid, mid, dtype, groups=mid),
        bn1=L.bn_spec(mid, dtype),
        se_reduce=L.dense_spec(mid, se, dtype),
        se_expand=L.dense_spec(se, mid, dtype),
        project=L.conv_spec((1, 1), mid, cout, dtype),
        bn2=L.bn_spec(cout, dtype),
    )
    return p


def _mbconv(x: jax.Array, p: dict, stride: int, train: bool) -> jax.Array:
    """Expand 1x1 -> depthwise kxk -> squeeze-excite -> project 1x1 (+ identity skip)."""
    swish = jax.nn.swish
    y = x
    if "expand" in p:
        y = swish(L.batch_norm(L.conv(y, p["expand"]), p["bn0"], train))
    mid = y.shape[-1]
    y = swish(L.batch_norm(L.conv(y, p["dw"], stride, groups=mid), p["bn1"], train))
    s = swish(L.dense(L.global_avg_pool(y), p["se_reduce"]))
    s = jax.nn.sigmoid(L.dense(s, p["se_expand"]))
    y = y * s[:, None, None, :]
    y = L.batch_norm(L.conv(y, p["project"]), p["bn2"], train)
    if stride == 1 and x.shape[-1] == y.shape[-1]:
        y = y + x  # drop-connect is a no-op at inference and omitted in training for determinism
    return y


def build(args: ProgramArgs):
    """EfficientNet-B0 classifier: images [B,H,W,3] -> logits; train adds int labels."""
    cfg = resolve(PRESETS, args, "efficientnet_b0")
    dtype = L.dtype_of(args.dtype)
    size = args.image_size or cfg.image
    train = args.mode == "train"
    blocks = _blocks(cfg.width)
    stem, head = _ch(32, cfg.width), _ch(1280, cfg.width)
    params = {
        "stem": L.conv_spec((3, 3), 3, stem, dtype),
        "stem_bn": L.bn_spec(stem, dtype),
        "blocks": [_mbconv_spec(ci, e, k, co, dtype) for ci, e, k, _, co in blocks],
        "head": L.conv_spec((1, 1), blocks[-1][-1], head, dtype),
        "head_bn": L.bn_spec(head, dtype),
        "fc": L.dense_spec(head, cfg.classes, dtype),
    }

    def forward(p, images):
        x = jax.nn.swish(L.batch_norm(L.conv(images, p["stem"], 2), p["stem_bn"], train))
        for bp, (_, _, _, stride, _) in zip(p["blocks"], blocks, strict=True):
            x = _mbconv(x, bp, stride, train)
        x = jax.nn.swish(L.batch_norm(L.conv(x, p["head"]), p["head_bn"], train))
        return L.dense(L.global_avg_pool(x), p["fc"])

    images = L.spec((args.batch, size, size, 3), dtype)
    labels = L.ids_spec((args.batch,))
    return build_program(args, params, [images], forward, [labels], optimizer="adam")


register(
    Program(
        name="efficientnet_b0",
        description="EfficientNet-B0 (MBConv: depthwise conv, squeeze-excite, swish)",
        presets=tuple(PRESETS),
        build=build,
        defaults={k: {"image_size": v.image} for k, v in PRESETS.items()},
    )
)
