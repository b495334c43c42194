"""ResNet v1 family (18/34/50/101/152), NHWC, bias-free convs with batch norm.

Written with lax directly so the HLO is exactly what the paper describes: ResNet-50 at inference
has 53 ``convolution`` (stem + 16 bottlenecks x 3 + 4 projection shortcuts), one ``dot`` (the
classifier), BN as per-channel multiply + add, a ``reduce-window`` max-pool after the stem and a
``reduce`` for the global average pool. v1 puts the stride on the first 1x1 conv of a bottleneck.
The backbone is reused by the detector (features after each stage).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax

from tpugraphs_tools.programs import layers as L
from tpugraphs_tools.programs.registry import Program, ProgramArgs, register
from tpugraphs_tools.programs.train import build_program, resolve

# depth -> (block kind, blocks per stage)
DEPTHS: dict[int, tuple[str, tuple[int, ...]]] = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
    101: ("bottleneck", (3, 4, 23, 3)),
    152: ("bottleneck", (3, 8, 36, 3)),
}


@dataclass(frozen=True)
class ResNetPreset:
    """Width of the first stage, default image side and class count."""

    width: int
    image: int
    classes: int


PRESETS = {
    "tiny": ResNetPreset(width=8, image=32, classes=10),
    "small": ResNetPreset(width=32, image=128, classes=1000),
    "base": ResNetPreset(width=64, image=224, classes=1000),
}


def _expansion(kind: str) -> int:
    return 4 if kind == "bottleneck" else 1


def _block_spec(kind: str, cin: int, width: int, stride: int, dtype) -> dict:
    """Specs of one residual block; a projection shortcut when shape changes."""
    cout = width * _expansion(kind)
    if kind == "bottleneck":
        p = {
            "conv1": L.conv_spec((1, 1), cin, width, dtype),
            "bn1": L.bn_spec(width, dtype),
            "conv2": L.conv_spec((3, 3), width, width, dtype),
            "bn2": L.bn_spec(width, dtype),
            "conv3": L.conv_spec((1, 1), width, cout, dtype),
            "bn3": L.bn_spec(cout, dtype),
        }
    else:
        p = {
            "conv1": L.conv_spec((3, 3), cin, width, dtype),
            "bn1": L.bn_spec(width, dtype),
            "conv2": L.conv_spec((3, 3), width, cout, dtype),
            "bn2": L.bn_spec(cout, dtype),
        }
    if stride != 1 or cin != cout:
        p["proj"] = L.conv_spec((1, 1), cin, cout, dtype)
        p["proj_bn"] = L.bn_spec(cout, dtype)
    return p


def _block(x: jax.Array, p: dict, kind: str, stride: int, train: bool) -> jax.Array:
    """Residual block; v1 bottleneck strides in conv1."""
    relu = jax.nn.relu
    if kind == "bottleneck":
        y = relu(L.batch_norm(L.conv(x, p["conv1"], stride), p["bn1"], train))
        y = relu(L.batch_norm(L.conv(y, p["conv2"]), p["bn2"], train))
        y = L.batch_norm(L.conv(y, p["conv3"]), p["bn3"], train)
    else:
        y = relu(L.batch_norm(L.conv(x, p["conv1"], stride), p["bn1"], train))
        y = L.batch_norm(L.conv(y, p["conv2"]), p["bn2"], train)
    if "proj" in p:
        x = L.batch_norm(L.conv(x, p["proj"], stride), p["proj_bn"], train)
    return relu(x + y)


def stage_strides(depth: int) -> list[list[int]]:
    """Stride of every block: the first block of stages 2..4 downsamples."""
    _, blocks = DEPTHS[depth]
    return [[(2 if s > 0 and i == 0 else 1) for i in range(n)] for s, n in enumerate(blocks)]


def backbone_spec(depth: int, width: int, dtype, in_ch: int = 3) -> dict:
    """Stem + four stages (no classifier)."""
    kind, _ = DEPTHS[depth]
    p: dict = {
        "stem": L.conv_spec((7, 7), in_ch, width, dtype),
        "stem_bn": L.bn_spec(width, dtype),
        "stages": [],
    }
    cin = width
    for s, strides in enumerate(stage_strides(depth)):
        w = width * 2**s
        blocks = []
        for stride in strides:
            blocks.append(_block_spec(kind, cin, w, stride, dtype))
            cin = w * _expansion(kind)
        p["stages"].append(blocks)
    return p


def stage_channels(depth: int, width: int) -> list[int]:
    """Output channels of each stage (what an FPN's lateral convs take)."""
    kind, _ = DEPTHS[depth]
    return [width * 2**s * _expansion(kind) for s in range(4)]


def backbone(x: jax.Array, p: dict, depth: int, train: bool) -> list[jax.Array]:
    """Features after each of the four stages (strides 4, 8, 16, 32)."""
    kind, _ = DEPTHS[depth]
    x = jax.nn.relu(L.batch_norm(L.conv(x, p["stem"], 2), p["stem_bn"], train))
    x = L.max_pool(x, 3, 2)
    feats = []
    for blocks, strides in zip(p["stages"], stage_strides(depth), strict=True):
        for bp, stride in zip(blocks, strides, strict=True):
            x = _block(x, bp, kind, stride, train)
        feats.append(x)
    return feats


def make_resnet(depth: int):
    """Build function for ResNet-``depth``: images [B,H,W,3] -> logits; train: + int labels."""

    def build(args: ProgramArgs):
        cfg = resolve(PRESETS, args, f"resnet{depth}")
        dtype = L.dtype_of(args.dtype)
        size = args.image_size or cfg.image
        train = args.mode == "train"
        params = {
            "backbone": backbone_spec(depth, cfg.width, dtype),
            "fc": L.dense_spec(stage_channels(depth, cfg.width)[-1], cfg.classes, dtype),
        }

        def forward(p, images):
            feats = backbone(images, p["backbone"], depth, train)
            return L.dense(L.global_avg_pool(feats[-1]), p["fc"])

        images = L.spec((args.batch, size, size, 3), dtype)
        labels = L.ids_spec((args.batch,))
        return build_program(args, params, [images], forward, [labels], optimizer="sgd")

    return build


# --------------------------------------------------------------------------- pre-activation

# Pre-activation bottleneck ResNets for CIFAR (He et al. 2016, "Identity Mappings"): depth 9n+2,
# three stages of n blocks, widths 16/32/64 (x4 out). The base preset is ResNet-1001, the paper's
# deepest net: its training step is the zoo's >100k-instruction HLO module.
PREACT_BLOCKS = {"tiny": 1, "small": 18, "base": 111}
PREACT_PRESETS = {
    "tiny": ResNetPreset(width=4, image=16, classes=10),
    "small": ResNetPreset(width=16, image=32, classes=10),
    "base": ResNetPreset(width=16, image=32, classes=10),
}


def _preact_spec(cin: int, width: int, stride: int, dtype) -> dict:
    cout = width * 4
    p = {
        "bn1": L.bn_spec(cin, dtype),
        "conv1": L.conv_spec((1, 1), cin, width, dtype),
        "bn2": L.bn_spec(width, dtype),
        "conv2": L.conv_spec((3, 3), width, width, dtype),
        "bn3": L.bn_spec(width, dtype),
        "conv3": L.conv_spec((1, 1), width, cout, dtype),
    }
    if stride != 1 or cin != cout:
        p["proj"] = L.conv_spec((1, 1), cin, cout, dtype)
    return p


def _preact_block(x: jax.Array, p: dict, stride: int, train: bool) -> jax.Array:
    """BN-ReLU-conv x3; the shortcut taps the pre-activated input when it projects."""
    relu = jax.nn.relu
    a = relu(L.batch_norm(x, p["bn1"], train))
    shortcut = L.conv(a, p["proj"], stride) if "proj" in p else x
    y = L.conv(a, p["conv1"])
    y = L.conv(relu(L.batch_norm(y, p["bn2"], train)), p["conv2"], stride)
    y = L.conv(relu(L.batch_norm(y, p["bn3"], train)), p["conv3"])
    return shortcut + y


def build_preact(args: ProgramArgs):
    """Pre-activation ResNet-(9n+2) on CIFAR-sized images; n comes from the preset."""
    cfg = resolve(PREACT_PRESETS, args, "preact_resnet")
    n = PREACT_BLOCKS[args.preset]
    dtype = L.dtype_of(args.dtype)
    size = args.image_size or cfg.image
    train = args.mode == "train"
    strides = [[(2 if s > 0 and i == 0 else 1) for i in range(n)] for s in range(3)]
    stages, cin = [], cfg.width
    for s, row in enumerate(strides):
        blocks = []
        for stride in row:
            blocks.append(_preact_spec(cin, cfg.width * 2**s, stride, dtype))
            cin = cfg.width * 2**s * 4
        stages.append(blocks)
    params = {
        "stem": L.conv_spec((3, 3), 3, cfg.width, dtype),
        "stages": stages,
        "bn": L.bn_spec(cin, dtype),
        "fc": L.dense_spec(cin, cfg.classes, dtype),
    }

    def forward(p, images):
        x = L.conv(images, p["stem"])
        for blocks, row in zip(p["stages"], strides, strict=True):
            for bp, stride in zip(blocks, row, strict=True):
                x = _preact_block(x, bp, stride, train)
        x = jax.nn.relu(L.batch_norm(x, p["bn"], train))
        return L.dense(L.global_avg_pool(x), p["fc"])

    images = L.spec((args.batch, size, size, 3), dtype)
    labels = L.ids_spec((args.batch,))
    return build_program(args, params, [images], forward, [labels], optimizer="sgd")


register(
    Program(
        name="preact_resnet",
        description="Pre-activation bottleneck ResNet (CIFAR); depth 11/164/1001 = tiny/small/base",
        presets=tuple(PREACT_PRESETS),
        build=build_preact,
        defaults={k: {"image_size": v.image} for k, v in PREACT_PRESETS.items()},
    )
)

for _depth in DEPTHS:
    register(
        Program(
            name=f"resnet{_depth}",
            description=f"ResNet-{_depth} v1 image classifier (NHWC, batch norm, no conv bias)",
            presets=tuple(PRESETS),
            build=make_resnet(_depth),
            defaults={k: {"image_size": v.image} for k, v in PRESETS.items()},
        )
    )
