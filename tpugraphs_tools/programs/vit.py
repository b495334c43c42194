"""Patch-based vision models: ViT (attention) and MLP-Mixer (token- and channel-mixing MLPs).

They share the patch embedding and the classifier so their HLO differs only where the
architectures do: attention ``dot_general`` with batch dims versus transposes feeding plain MLPs.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp

from tpugraphs_tools.programs import layers as L
from tpugraphs_tools.programs.registry import Program, ProgramArgs, ProgramArgsError, register
from tpugraphs_tools.programs.train import build_program, resolve


@dataclass(frozen=True)
class PatchPreset:
    """Patch side, image side, width, depth, heads (ViT), MLP widths, classes."""

    patch: int
    image: int
    d: int
    layers: int
    mlp: int
    classes: int
    heads: int = 1
    token_mlp: int = 0  # Mixer only


VIT = {
    "tiny": PatchPreset(patch=8, image=32, d=32, layers=2, mlp=64, classes=10, heads=2),
    "small": PatchPreset(patch=16, image=224, d=384, layers=12, mlp=1536, classes=1000, heads=6),
    "base": PatchPreset(patch=16, image=224, d=768, layers=12, mlp=3072, classes=1000, heads=12),
}
MIXER = {
    "tiny": PatchPreset(patch=8, image=32, d=32, layers=2, mlp=64, classes=10, token_mlp=16),
    "small": PatchPreset(
        patch=16, image=224, d=512, layers=8, mlp=2048, classes=1000, token_mlp=256
    ),
    "base": PatchPreset(
        patch=16, image=224, d=768, layers=12, mlp=3072, classes=1000, token_mlp=384
    ),
}


def _tokens(cfg: PatchPreset, size: int, name: str) -> int:
    if size % cfg.patch:
        raise ProgramArgsError(f"{name}: image_size must be a multiple of {cfg.patch}, got {size}")
    return (size // cfg.patch) ** 2


def build_vit(args: ProgramArgs):
    """ViT classifier: patch conv, class token, learned positions, pre-LN encoder, linear head."""
    cfg = resolve(VIT, args, "vit")
    dtype = L.dtype_of(args.dtype)
    size = args.image_size or cfg.image
    n = _tokens(cfg, size, "vit") + 1
    params = {
        "patch": L.patchify_spec(cfg.patch, 3, cfg.d, dtype),
        "cls": L.spec((1, 1, cfg.d), dtype),
        "pos": L.spec((n, cfg.d), dtype),
        "layers": [L.encoder_layer_spec(cfg.d, cfg.mlp, dtype) for _ in range(cfg.layers)],
        "ln": L.ln_spec(cfg.d, dtype),
        "head": L.dense_spec(cfg.d, cfg.classes, dtype),
    }

    def forward(p, images):
        x = L.patchify(images, p["patch"], cfg.patch)
        cls = jnp.broadcast_to(p["cls"], (x.shape[0], 1, cfg.d))
        x = jnp.concatenate([cls, x], axis=1) + p["pos"]
        for lp in p["layers"]:
            x = L.encoder_layer(x, lp, cfg.heads)
        return L.dense(L.layer_norm(x[:, 0], p["ln"]), p["head"])

    images = L.spec((args.batch, size, size, 3), dtype)
    labels = L.ids_spec((args.batch,))
    return build_program(args, params, [images], forward, [labels], optimizer="adamw")


def build_mixer(args: ProgramArgs):
    """MLP-Mixer: per layer a token-mixing MLP (over patches) and a channel-mixing MLP."""
    cfg = resolve(MIXER, args, "mlp_mixer")
    dtype = L.dtype_of(args.dtype)
    size = args.image_size or cfg.image
    n = _tokens(cfg, size, "mlp_mixer")
    layer = {
        "ln1": L.ln_spec(cfg.d, dtype),
        "token": L.mlp_spec(n, cfg.token_mlp, dtype),
        "ln2": L.ln_spec(cfg.d, dtype),
        "channel": L.mlp_spec(cfg.d, cfg.mlp, dtype),
    }
    params = {
        "patch": L.patchify_spec(cfg.patch, 3, cfg.d, dtype),
        "layers": [layer for _ in range(cfg.layers)],
        "ln": L.ln_spec(cfg.d, dtype),
        "head": L.dense_spec(cfg.d, cfg.classes, dtype),
    }

    def forward(p, images):
        x = L.patchify(images, p["patch"], cfg.patch)  # [B, N, D]
        for lp in p["layers"]:
            y = jnp.swapaxes(L.layer_norm(x, lp["ln1"]), 1, 2)  # mix along tokens
            x = x + jnp.swapaxes(L.mlp_block(y, lp["token"]), 1, 2)
            x = x + L.mlp_block(L.layer_norm(x, lp["ln2"]), lp["channel"])
        return L.dense(jnp.mean(L.layer_norm(x, p["ln"]), axis=1), p["head"])

    images = L.spec((args.batch, size, size, 3), dtype)
    labels = L.ids_spec((args.batch,))
    return build_program(args, params, [images], forward, [labels], optimizer="adamw")


register(
    Program(
        name="vit",
        description="Vision Transformer (ViT-B/16 at base): patch conv + pre-LN encoder",
        presets=tuple(VIT),
        build=build_vit,
        defaults={k: {"image_size": v.image} for k, v in VIT.items()},
    )
)
register(
    Program(
        name="mlp_mixer",
        description="MLP-Mixer (Mixer-B/16 at base): token- and channel-mixing MLPs",
        presets=tuple(MIXER),
        build=build_mixer,
        defaults={k: {"image_size": v.image} for k, v in MIXER.items()},
    )
)
