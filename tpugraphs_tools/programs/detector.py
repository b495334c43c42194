"""A Mask R-CNN-like detector: ResNet backbone, FPN, RPN head, RoI-align, box and mask heads.

RoI-align is written the way TPU implementations do it: all FPN levels are flattened into one
[B, N, C] table, each RoI picks its level from its size, and bilinear sampling is four
advanced-indexing ``gather`` ops on that table. Proposals come in as an input (``boxes``), which
stands in for the NMS stage: the heads' cost is what matters for the graph, and fixed RoI counts
are what TPUs run anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from tpugraphs_tools.programs import layers as L
from tpugraphs_tools.programs import resnet
from tpugraphs_tools.programs.registry import Program, ProgramArgs, register
from tpugraphs_tools.programs.train import build_program, resolve, sigmoid_xent, softmax_xent


@dataclass(frozen=True)
class DetPreset:
    """Backbone depth/width, FPN width, image side, RoIs per image, classes, head widths."""

    depth: int
    width: int
    fpn: int
    image: int
    rois: int
    classes: int
    fc: int
    anchors: int = 3
    box_pool: int = 7
    mask_pool: int = 14


PRESETS = {
    "tiny": DetPreset(depth=18, width=8, fpn=16, image=64, rois=8, classes=4, fc=32),
    "small": DetPreset(depth=50, width=32, fpn=128, image=256, rois=64, classes=91, fc=512),
    "base": DetPreset(depth=50, width=64, fpn=256, image=512, rois=128, classes=91, fc=1024),
}
LEVELS = (2, 3, 4, 5)  # RoI levels P2..P5; P6 only feeds the RPN


def _params(cfg: DetPreset, dtype) -> dict:
    f, k = cfg.fpn, cfg.classes
    return {
        "backbone": resnet.backbone_spec(cfg.depth, cfg.width, dtype),
        "lateral": [
            L.conv_bias_spec((1, 1), c, f, dtype)
            for c in resnet.stage_channels(cfg.depth, cfg.width)
        ],
        "smooth": [L.conv_bias_spec((3, 3), f, f, dtype) for _ in LEVELS],
        "rpn": {
            "conv": L.conv_bias_spec((3, 3), f, f, dtype),
            "obj": L.conv_bias_spec((1, 1), f, cfg.anchors, dtype),
            "delta": L.conv_bias_spec((1, 1), f, 4 * cfg.anchors, dtype),
        },
        "box": {
            "fc1": L.dense_spec(cfg.box_pool**2 * f, cfg.fc, dtype),
            "fc2": L.dense_spec(cfg.fc, cfg.fc, dtype),
            "cls": L.dense_spec(cfg.fc, k, dtype),
            "delta": L.dense_spec(cfg.fc, 4 * k, dtype),
        },
        "mask": {
            "convs": [L.conv_bias_spec((3, 3), f, f, dtype) for _ in range(4)],
            "up": L.conv_bias_spec((2, 2), f, f, dtype),
            "out": L.conv_bias_spec((1, 1), f, k, dtype),
        },
    }


def _upsample2(x: jax.Array) -> jax.Array:
    """Nearest-neighbour 2x upsampling (FPN top-down path)."""
    return jnp.repeat(jnp.repeat(x, 2, axis=1), 2, axis=2)


def fpn(feats: list[jax.Array], p: dict) -> list[jax.Array]:
    """P2..P6 from C2..C5: lateral 1x1, top-down adds, 3x3 smoothing, P6 by subsampling."""
    lat = [L.conv_bias(c, lp) for c, lp in zip(feats, p["lateral"], strict=True)]
    tops = [lat[-1]]
    for x in reversed(lat[:-1]):
        up = _upsample2(tops[0])[:, : x.shape[1], : x.shape[2]]
        tops.insert(0, x + up)
    outs = [L.conv_bias(t, sp) for t, sp in zip(tops, p["smooth"], strict=True)]
    return [*outs, L.max_pool(outs[-1], window=1, stride=2)]


def rpn(levels: list[jax.Array], p: dict) -> tuple[jax.Array, jax.Array]:
    """Shared RPN head on every level: objectness [B, A_total] and deltas [B, A_total, 4]."""
    objs, deltas = [], []
    for x in levels:
        h = jax.nn.relu(L.conv_bias(x, p["conv"]))
        b = x.shape[0]
        objs.append(L.conv_bias(h, p["obj"]).reshape(b, -1))
        deltas.append(L.conv_bias(h, p["delta"]).reshape(b, -1, 4))
    return jnp.concatenate(objs, axis=1), jnp.concatenate(deltas, axis=1)


def roi_align(levels: list[jax.Array], boxes: jax.Array, out: int) -> jax.Array:
    """Bilinear RoI-align of ``boxes`` [B,R,4] (y0,x0,y1,x1 pixels) -> [B,R,out,out,C].

    One sample per bin centre; coordinates are clipped into the level, so any box is safe.
    """
    b = boxes.shape[0]
    shapes = [(x.shape[1], x.shape[2]) for x in levels]
    table = jnp.concatenate([x.reshape(b, -1, x.shape[-1]) for x in levels], axis=1)
    sizes = [h * w for h, w in shapes]
    offsets = jnp.array([sum(sizes[:i]) for i in range(len(sizes))], jnp.int32)
    heights = jnp.array([h for h, _ in shapes], jnp.float32)
    widths = jnp.array([w for _, w in shapes], jnp.float32)
    strides = jnp.array([2.0**lv for lv in LEVELS], jnp.float32)

    boxes = boxes.astype(jnp.float32)
    y0, x0, y1, x1 = (boxes[..., i] for i in range(4))
    bh, bw = jnp.maximum(y1 - y0, 1.0), jnp.maximum(x1 - x0, 1.0)
    lvl = jnp.floor(4.0 + jnp.log2(jnp.sqrt(bh * bw) / 224.0))  # FPN paper's assignment
    lvl = jnp.clip(lvl, LEVELS[0], LEVELS[-1]).astype(jnp.int32) - LEVELS[0]  # [B,R]
    stride, hl, wl = strides[lvl], heights[lvl], widths[lvl]
    off = offsets[lvl]

    grid = (jnp.arange(out, dtype=jnp.float32) + 0.5) / out  # bin centres in [0,1]
    ys = (y0 / stride)[..., None] + (bh / stride)[..., None] * grid  # [B,R,out]
    xs = (x0 / stride)[..., None] + (bw / stride)[..., None] * grid
    ys = jnp.clip(ys, 0.0, (hl - 1.0)[..., None])
    xs = jnp.clip(xs, 0.0, (wl - 1.0)[..., None])
    ylo, xlo = jnp.floor(ys), jnp.floor(xs)
    yhi = jnp.minimum(ylo + 1.0, (hl - 1.0)[..., None])
    xhi = jnp.minimum(xlo + 1.0, (wl - 1.0)[..., None])
    ly, lx = (ys - ylo)[..., :, None, None], (xs - xlo)[..., None, :, None]

    w_int = wl.astype(jnp.int32)[..., None, None]
    bidx = jnp.arange(b)[:, None, None, None]

    def tap(yy: jax.Array, xx: jax.Array) -> jax.Array:
        flat = off[..., None, None] + yy.astype(jnp.int32)[..., :, None] * w_int
        flat = flat + xx.astype(jnp.int32)[..., None, :]
        return table[bidx, flat].astype(jnp.float32)  # gather -> [B,R,out,out,C]

    top = tap(ylo, xlo) * (1 - lx) + tap(ylo, xhi) * lx
    bottom = tap(yhi, xlo) * (1 - lx) + tap(yhi, xhi) * lx
    return (top * (1 - ly) + bottom * ly).astype(table.dtype)


def box_head(pooled: jax.Array, p: dict) -> tuple[jax.Array, jax.Array]:
    """Two shared FCs, then class logits [B,R,K] and per-class deltas [B,R,K,4]."""
    b, r = pooled.shape[:2]
    h = pooled.reshape(b, r, -1)
    h = jax.nn.relu(L.dense(jax.nn.relu(L.dense(h, p["fc1"])), p["fc2"]))
    return L.dense(h, p["cls"]), L.dense(h, p["delta"]).reshape(b, r, -1, 4)


def mask_head(pooled: jax.Array, p: dict) -> jax.Array:
    """Four 3x3 convs, a 2x transposed conv, per-class mask logits [B,R,2M,2M,K]."""
    b, r, m, _, c = pooled.shape
    x = pooled.reshape(b * r, m, m, c)
    for cp in p["convs"]:
        x = jax.nn.relu(L.conv_bias(x, cp))
    x = jax.nn.relu(L.conv_transpose(x, p["up"], stride=2))
    x = L.conv_bias(x, p["out"])
    return x.reshape(b, r, *x.shape[1:])


def build(args: ProgramArgs):
    """infer: (params, images, boxes) -> (cls, deltas, masks, rpn_obj, rpn_deltas).

    train targets: class labels [B,R] int32, box targets [B,R,4], mask targets [B,R,2M,2M],
    RPN objectness targets [B,A_total]; loss = class xent + box L2 + mask and RPN sigmoid xent.
    """
    cfg = resolve(PRESETS, args, "detector")
    dtype = L.dtype_of(args.dtype)
    size = args.image_size or cfg.image
    train = args.mode == "train"
    params = _params(cfg, dtype)

    def forward(p, images, boxes):
        feats = resnet.backbone(images, p["backbone"], cfg.depth, train)
        levels = fpn(feats, p)
        obj, deltas = rpn(levels, p["rpn"])
        roi_levels = levels[: len(LEVELS)]
        cls, box = box_head(roi_align(roi_levels, boxes, cfg.box_pool), p["box"])
        masks = mask_head(roi_align(roi_levels, boxes, cfg.mask_pool), p["mask"])
        return cls, box, masks, obj, deltas

    images = L.spec((args.batch, size, size, 3), dtype)
    boxes = L.spec((args.batch, cfg.rois, 4), jnp.float32)
    shapes = jax.eval_shape(forward, params, images, boxes) if train else None
    m = 2 * cfg.mask_pool
    targets = [
        L.ids_spec((args.batch, cfg.rois)),
        L.spec((args.batch, cfg.rois, 4), jnp.float32),
        L.spec((args.batch, cfg.rois, m, m), jnp.float32),
        L.spec(shapes[3].shape if shapes else (args.batch, 1), jnp.float32),
    ]

    def loss(p, images, boxes, labels, box_t, mask_t, obj_t):
        cls, box, masks, obj, _ = forward(p, images, boxes)
        labels = jnp.clip(labels, 0, cfg.classes - 1)
        pick = labels[:, :, None, None]  # only the labelled class's box and mask are trained
        box_sel = jnp.take_along_axis(box, pick, axis=2)[:, :, 0]
        mask_sel = jnp.take_along_axis(masks, pick[..., None], axis=-1)[..., 0]
        box_loss = jnp.mean(jnp.square(box_sel.astype(jnp.float32) - box_t))
        return (
            softmax_xent(cls, labels)
            + box_loss
            + sigmoid_xent(mask_sel, mask_t)
            + sigmoid_xent(obj, obj_t)
        )

    return build_program(args, params, [images, boxes], forward, targets, loss, "sgd")


register(
    Program(
        name="detector",
        description="Mask R-CNN-like detector: ResNet+FPN, RPN, gather-based RoI-align, heads",
        presets=tuple(PRESETS),
        build=build,
        defaults={k: {"image_size": v.image} for k, v in PRESETS.items()},
    )
)
