"""Transformer programs: an encoder stack, BERT, GPT (full sequence and one KV-cache decode step).

Layers are unrolled Python loops (no ``lax.scan``), as most production JAX models lower to: every
layer's ops appear in the HLO, which is what a per-layer cost model has to see.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from tpugraphs_tools.programs import layers as L
from tpugraphs_tools.programs.registry import Program, ProgramArgs, register
from tpugraphs_tools.programs.train import build_program, mse, resolve, softmax_xent


@dataclass(frozen=True)
class TfPreset:
    """Sizes of a transformer stack."""

    d: int
    heads: int
    layers: int
    mlp: int
    seq: int
    vocab: int = 2


# Plain encoder stack: tiny, a small one, and the "Attention is all you need" base model.
ENCODER = {
    "tiny": TfPreset(d=32, heads=2, layers=2, mlp=64, seq=16),
    "small": TfPreset(d=256, heads=4, layers=4, mlp=1024, seq=128),
    "base": TfPreset(d=512, heads=8, layers=6, mlp=2048, seq=512),
}
# BERT-base / -large (vocab of the uncased WordPiece model).
BERT = {
    "tiny": TfPreset(d=32, heads=2, layers=2, mlp=64, seq=16, vocab=128),
    "small": TfPreset(d=512, heads=8, layers=4, mlp=2048, seq=128, vocab=30522),
    "base": TfPreset(d=768, heads=12, layers=12, mlp=3072, seq=128, vocab=30522),
    "large": TfPreset(d=1024, heads=16, layers=24, mlp=4096, seq=512, vocab=30522),
}
# GPT-2 small / medium (GPT-2 BPE vocab).
GPT = {
    "tiny": TfPreset(d=32, heads=2, layers=2, mlp=128, seq=16, vocab=128),
    "small": TfPreset(d=512, heads=8, layers=6, mlp=2048, seq=256, vocab=50257),
    "base": TfPreset(d=768, heads=12, layers=12, mlp=3072, seq=1024, vocab=50257),
    "medium": TfPreset(d=1024, heads=16, layers=24, mlp=4096, seq=1024, vocab=50257),
}


def _defaults(presets: dict) -> dict:
    return {k: {"seq_len": v.seq} for k, v in presets.items()}


def _stack_spec(cfg: TfPreset, dtype) -> list:
    return [L.encoder_layer_spec(cfg.d, cfg.mlp, dtype) for _ in range(cfg.layers)]


# --------------------------------------------------------------------------- encoder stack


def build_transformer(args: ProgramArgs):
    """Encoder stack on float embeddings [B,S,D] (post-LN, as in the original Transformer)."""
    cfg = resolve(ENCODER, args, "transformer")
    dtype = L.dtype_of(args.dtype)
    seq = args.seq_len or cfg.seq
    params = {"layers": _stack_spec(cfg, dtype)}

    def forward(p, x):
        for lp in p["layers"]:
            x = L.encoder_layer(x, lp, cfg.heads, pre_ln=False)
        return x

    def loss(p, x, target):
        return mse(forward(p, x), target)

    x = L.spec((args.batch, seq, cfg.d), dtype)
    return build_program(args, params, [x], forward, [x], loss, optimizer="adam")


# --------------------------------------------------------------------------- BERT


def build_bert(args: ProgramArgs):
    """BERT encoder with an MLM head: int32 token ids + padding mask -> vocab logits."""
    cfg = resolve(BERT, args, "bert")
    dtype = L.dtype_of(args.dtype)
    seq = args.seq_len or cfg.seq
    params = {
        "tok": L.spec((cfg.vocab, cfg.d), dtype),
        "pos": L.spec((seq, cfg.d), dtype),
        "emb_ln": L.ln_spec(cfg.d, dtype),
        "layers": _stack_spec(cfg, dtype),
        "mlm": L.dense_spec(cfg.d, cfg.d, dtype),
        "mlm_ln": L.ln_spec(cfg.d, dtype),
        "mlm_bias": L.spec((cfg.vocab,), dtype),
    }

    def forward(p, tokens, pad_mask):
        x = L.layer_norm(L.embed(p["tok"], tokens) + p["pos"], p["emb_ln"])
        mask = (pad_mask != 0)[:, None, None, :]  # [B,1,1,S]: attend to non-padding keys
        for lp in p["layers"]:
            x = L.encoder_layer(x, lp, cfg.heads, mask, pre_ln=False)
        h = L.layer_norm(jax.nn.gelu(L.dense(x, p["mlm"])), p["mlm_ln"])
        return jnp.einsum("bsd,vd->bsv", h, p["tok"]) + p["mlm_bias"]  # tied decoder

    tokens = L.ids_spec((args.batch, seq))
    pad_mask = L.ids_spec((args.batch, seq))
    labels = L.ids_spec((args.batch, seq))
    return build_program(args, params, [tokens, pad_mask], forward, [labels], optimizer="adamw")


# --------------------------------------------------------------------------- GPT


def _gpt_params(cfg: TfPreset, seq: int, dtype) -> dict:
    return {
        "tok": L.spec((cfg.vocab, cfg.d), dtype),
        "pos": L.spec((seq, cfg.d), dtype),
        "layers": _stack_spec(cfg, dtype),
        "ln_f": L.ln_spec(cfg.d, dtype),
    }


def _logits(p: dict, x: jax.Array) -> jax.Array:
    """Final LayerNorm and the tied LM head."""
    return jnp.einsum("bsd,vd->bsv", L.layer_norm(x, p["ln_f"]), p["tok"])


def build_gpt(args: ProgramArgs):
    """GPT-2 style decoder over a full sequence with a causal mask; train = next-token loss."""
    cfg = resolve(GPT, args, "gpt")
    dtype = L.dtype_of(args.dtype)
    seq = args.seq_len or cfg.seq
    params = _gpt_params(cfg, seq, dtype)

    def forward(p, tokens):
        s = tokens.shape[1]
        x = L.embed(p["tok"], tokens) + p["pos"][:s]
        causal = jnp.tril(jnp.ones((s, s), jnp.bool_))[None, None]
        for lp in p["layers"]:
            x = L.encoder_layer(x, lp, cfg.heads, causal, pre_ln=True)
        return _logits(p, x)

    tokens = L.ids_spec((args.batch, seq))
    targets = L.ids_spec((args.batch, seq))  # tokens shifted by one, prepared by the input pipe
    return build_program(args, params, [tokens], forward, [targets], optimizer="adamw")


def _decode_layer(x, lp, cache_k, cache_v, pos, heads):
    """One pre-LN layer for a single new token; writes its K/V into the cache at ``pos``."""
    h = L.layer_norm(x, lp["ln1"])
    q, k, v = jnp.split(L.dense(h, lp["attn"]["qkv"]), 3, axis=-1)
    q, k, v = (L.split_heads(t, heads) for t in (q, k, v))  # [B,H,1,Dh]
    zero = jnp.zeros((), jnp.int32)
    cache_k = jax.lax.dynamic_update_slice(
        cache_k, k.astype(cache_k.dtype), (zero, zero, pos, zero)
    )
    cache_v = jax.lax.dynamic_update_slice(
        cache_v, v.astype(cache_v.dtype), (zero, zero, pos, zero)
    )
    valid = (jnp.arange(cache_k.shape[2]) <= pos)[None, None, None, :]
    o = L.attend(q, cache_k, cache_v, valid)
    x = x + L.dense(L.merge_heads(o), lp["attn"]["out"])
    x = x + L.mlp_block(L.layer_norm(x, lp["ln2"]), lp["mlp"])
    return x, cache_k, cache_v


def build_gpt_decode(args: ProgramArgs):
    """One autoregressive step with a KV cache of ``seq_len`` slots (serving, not prefill).

    infer: ``(params, token[B,1], pos, cache) -> (logits[B,1,V], new_cache)``. ``pos`` (int32
    scalar) is clipped into the cache. train: the same step with a next-token loss, its gradient
    and an AdamW update (the cache is treated as a constant input), so both modes exist.
    """
    cfg = resolve(GPT, args, "gpt_decode")
    dtype = L.dtype_of(args.dtype)
    seq = args.seq_len or cfg.seq
    dh = cfg.d // cfg.heads
    params = _gpt_params(cfg, seq, dtype)
    kv = L.spec((args.batch, cfg.heads, seq, dh), dtype)
    cache = [{"k": kv, "v": kv} for _ in range(cfg.layers)]

    def step(p, token, pos, cache):
        pos = jnp.clip(pos, 0, seq - 1).astype(jnp.int32)
        x = L.embed(p["tok"], token) + jax.lax.dynamic_slice_in_dim(p["pos"], pos, 1)[None]
        new_cache = []
        for lp, c in zip(p["layers"], cache, strict=True):
            x, k, v = _decode_layer(x, lp, c["k"], c["v"], pos, cfg.heads)
            new_cache.append({"k": k, "v": v})
        return _logits(p, x), new_cache

    def loss(p, token, pos, cache, target):
        return softmax_xent(step(p, token, pos, cache)[0], target)

    token = L.ids_spec((args.batch, 1))
    pos = L.ids_spec(())
    target = L.ids_spec((args.batch, 1))
    return build_program(args, params, [token, pos, cache], step, [target], loss, "adamw")


register(
    Program(
        name="transformer",
        description="Transformer encoder stack (MHA with dot_general, LayerNorm, GELU MLP)",
        presets=tuple(ENCODER),
        build=build_transformer,
        defaults=_defaults(ENCODER),
    )
)
register(
    Program(
        name="bert",
        description="BERT encoder + MLM head on int32 token ids with a padding mask",
        presets=tuple(BERT),
        build=build_bert,
        defaults=_defaults(BERT),
    )
)
register(
    Program(
        name="gpt",
        description="GPT-2 style causal decoder over a full sequence (prefill / training)",
        presets=tuple(GPT),
        build=build_gpt,
        defaults=_defaults(GPT),
    )
)
register(
    Program(
        name="gpt_decode",
        description="GPT-2 style single-token decode step with a per-layer KV cache",
        presets=tuple(GPT),
        build=build_gpt_decode,
        defaults=_defaults(GPT),
    )
)
