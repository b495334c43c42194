"""Pure jax.numpy / lax building blocks shared by the zoo.

Parameters are plain dicts of arrays; their *specs* are dicts of :class:`jax.ShapeDtypeStruct`
built by the ``*_spec`` helpers, so no weight is ever materialised to lower a program. Using lax
directly (rather than a layer library) keeps the HLO predictable: one ``convolution`` per conv,
one ``dot`` per dense layer, no hidden bias adds.

Weights are multiplied by ``1/sqrt(fan_in)`` inside the graph so that standard-normal random
weights (what the measurement code feeds) keep activations O(1) through deep stacks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import DTypeLike

Params = dict
F32 = jnp.float32


def dtype_of(name: str) -> jnp.dtype:
    """Map the ProgramArgs dtype string to a jnp dtype."""
    return jnp.dtype({"float32": jnp.float32, "bfloat16": jnp.bfloat16}[name])


def spec(shape: Sequence[int], dtype: DTypeLike) -> jax.ShapeDtypeStruct:
    """A ShapeDtypeStruct; the one way the zoo declares an array."""
    return jax.ShapeDtypeStruct(tuple(int(s) for s in shape), jnp.dtype(dtype))


def ids_spec(shape: Sequence[int]) -> jax.ShapeDtypeStruct:
    """Integer ids/labels are always int32 (measurement fills them with values in [0, 2))."""
    return spec(shape, jnp.int32)


def scaled(w: jax.Array, fan_in: int) -> jax.Array:
    """Rescale a weight by 1/sqrt(fan_in) so N(0,1) weights act like a variance-scaled init."""
    return w * jnp.asarray(1.0 / math.sqrt(max(fan_in, 1)), w.dtype)


# --------------------------------------------------------------------------- convolutions


def conv_spec(kernel: Sequence[int], cin: int, cout: int, dtype, groups: int = 1) -> dict:
    """Kernel spec in HWIO (or DHWIO for 3-D); grouped convs have cin // groups input features."""
    return {"w": spec((*kernel, cin // groups, cout), dtype)}


def _dim_numbers(ndim: int) -> tuple[str, str, str]:
    """Channels-last layouts for 1/2/3 spatial dims (NHWC is what TPUs like)."""
    return {
        3: ("NWC", "WIO", "NWC"),
        4: ("NHWC", "HWIO", "NHWC"),
        5: ("NDHWC", "DHWIO", "NDHWC"),
    }[ndim]


def conv(
    x: jax.Array, p: Params, stride: int = 1, padding: str = "SAME", groups: int = 1
) -> jax.Array:
    """Bias-free convolution: exactly one HLO ``convolution``."""
    w = p["w"]
    nsp = x.ndim - 2
    fan_in = math.prod(w.shape[:-1])
    return lax.conv_general_dilated(
        x,
        scaled(w, fan_in),
        window_strides=(stride,) * nsp,
        padding=padding,
        dimension_numbers=_dim_numbers(x.ndim),
        feature_group_count=groups,
    )


def conv_bias_spec(kernel: Sequence[int], cin: int, cout: int, dtype) -> dict:
    """Conv with bias, for nets without batch norm (U-Net, FPN, heads)."""
    return {**conv_spec(kernel, cin, cout, dtype), "b": spec((cout,), dtype)}


def conv_bias(x: jax.Array, p: Params, stride: int = 1) -> jax.Array:
    """Convolution followed by a per-channel bias add."""
    return conv(x, p, stride) + p["b"]


def conv_transpose(x: jax.Array, p: Params, stride: int = 2) -> jax.Array:
    """Learned upsampling (U-Net decoder, mask head): lhs-dilated convolution in HLO."""
    w = p["w"]
    nsp = x.ndim - 2
    fan_in = math.prod(w.shape[:-1]) // stride**nsp
    y = lax.conv_transpose(
        x,
        scaled(w, fan_in),
        strides=(stride,) * nsp,
        padding="SAME",
        dimension_numbers=_dim_numbers(x.ndim),
    )
    return y + p["b"] if "b" in p else y


def max_pool(x: jax.Array, window: int = 3, stride: int = 2, padding: str = "SAME") -> jax.Array:
    """Spatial max pool over all non-batch, non-channel dims (one ``reduce-window``)."""
    nsp = x.ndim - 2
    dims = (1, *(window,) * nsp, 1)
    strides = (1, *(stride,) * nsp, 1)
    # A Python -inf init lets JAX pick its differentiable max-pool primitive.
    return lax.reduce_window(x, -jnp.inf, lax.max, dims, strides, padding)


def global_avg_pool(x: jax.Array) -> jax.Array:
    """Mean over spatial dims: a ``reduce`` then a divide."""
    return jnp.mean(x, axis=tuple(range(1, x.ndim - 1)))


# --------------------------------------------------------------------------- normalisation


def bn_spec(c: int, dtype) -> dict:
    """Batch norm as scale & shift: folded stats at inference, gamma/beta in training."""
    return {"scale": spec((c,), dtype), "shift": spec((c,), dtype)}


def batch_norm(x: jax.Array, p: Params, train: bool, eps: float = 1e-5) -> jax.Array:
    """Inference: ``x*scale + shift`` (stats folded in). Training: normalise by batch stats.

    Training does not track running averages: that state is not needed to time a step and would
    only add outputs to the signature.
    """
    if not train:
        return x * p["scale"] + p["shift"]
    axes = tuple(range(x.ndim - 1))
    xf = x.astype(F32)
    mean = jnp.mean(xf, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=axes, keepdims=True)
    y = (xf - mean) * lax.rsqrt(var + eps)
    return y.astype(x.dtype) * p["scale"] + p["shift"]


def ln_spec(d: int, dtype) -> dict:
    """LayerNorm gain and bias."""
    return {"g": spec((d,), dtype), "b": spec((d,), dtype)}


def layer_norm(x: jax.Array, p: Params, eps: float = 1e-6) -> jax.Array:
    """LayerNorm over the last dim, statistics in float32 even for bf16 activations."""
    xf = x.astype(F32)
    mean = jnp.mean(xf, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=-1, keepdims=True)
    y = ((xf - mean) * lax.rsqrt(var + eps)).astype(x.dtype)
    return y * p["g"] + p["b"]


# --------------------------------------------------------------------------- dense & attention


def dense_spec(din: int, dout: int, dtype, bias: bool = True) -> dict:
    """Dense weight (and bias)."""
    p = {"w": spec((din, dout), dtype)}
    if bias:
        p["b"] = spec((dout,), dtype)
    return p


def dense(x: jax.Array, p: Params) -> jax.Array:
    """``x @ w (+ b)`` over the last dim: one HLO ``dot``."""
    w = p["w"]
    y = jnp.matmul(x, scaled(w, w.shape[0]))
    return y + p["b"] if "b" in p else y


def mha_spec(d: int, dtype) -> dict:
    """Fused QKV projection plus output projection."""
    return {"qkv": dense_spec(d, 3 * d, dtype), "out": dense_spec(d, d, dtype)}


def split_heads(x: jax.Array, heads: int) -> jax.Array:
    """[B, S, D] -> [B, H, S, D/H]."""
    b, s, d = x.shape
    return x.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)


def merge_heads(x: jax.Array) -> jax.Array:
    """[B, H, S, Dh] -> [B, S, H*Dh]."""
    b, h, s, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, h * dh)


def attend(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array | None) -> jax.Array:
    """Scaled dot-product attention; batched ``dot_general`` (lhs_batch_dims) in HLO.

    ``mask`` is boolean, broadcastable to [B, H, Sq, Sk], True where attending is allowed.
    """
    scale = jnp.asarray(1.0 / math.sqrt(q.shape[-1]), q.dtype)
    logits = jnp.einsum("bhqd,bhkd->bhqk", q * scale, k).astype(F32)
    if mask is not None:
        logits = jnp.where(mask, logits, jnp.asarray(-1e9, F32))
    probs = jax.nn.softmax(logits, axis=-1).astype(v.dtype)
    return jnp.einsum("bhqk,bhkd->bhqd", probs, v)


def mha(x: jax.Array, p: Params, heads: int, mask: jax.Array | None = None) -> jax.Array:
    """Multi-head self-attention."""
    q, k, v = jnp.split(dense(x, p["qkv"]), 3, axis=-1)
    o = attend(split_heads(q, heads), split_heads(k, heads), split_heads(v, heads), mask)
    return dense(merge_heads(o), p["out"])


def mlp_spec(d: int, hidden: int, dtype) -> dict:
    """Two-layer feed-forward block."""
    return {"fc1": dense_spec(d, hidden, dtype), "fc2": dense_spec(hidden, d, dtype)}


def mlp_block(x: jax.Array, p: Params) -> jax.Array:
    """Dense -> GELU -> dense (transformer / mixer feed-forward)."""
    return dense(jax.nn.gelu(dense(x, p["fc1"])), p["fc2"])


def encoder_layer_spec(d: int, hidden: int, dtype) -> dict:
    """One transformer layer: attention + MLP, each with its LayerNorm."""
    return {
        "ln1": ln_spec(d, dtype),
        "attn": mha_spec(d, dtype),
        "ln2": ln_spec(d, dtype),
        "mlp": mlp_spec(d, hidden, dtype),
    }


def encoder_layer(
    x: jax.Array, p: Params, heads: int, mask: jax.Array | None = None, pre_ln: bool = True
) -> jax.Array:
    """Transformer layer; pre-LN (GPT/ViT) or post-LN (original Transformer/BERT)."""
    if pre_ln:
        x = x + mha(layer_norm(x, p["ln1"]), p["attn"], heads, mask)
        return x + mlp_block(layer_norm(x, p["ln2"]), p["mlp"])
    x = layer_norm(x + mha(x, p["attn"], heads, mask), p["ln1"])
    return layer_norm(x + mlp_block(x, p["mlp"]), p["ln2"])


def embed(table: jax.Array, ids: jax.Array) -> jax.Array:
    """Embedding lookup (a ``gather``); ids are clipped so any int input stays in range."""
    ids = jnp.clip(ids, 0, table.shape[0] - 1)
    return jnp.take(table, ids, axis=0)


def patchify_spec(patch: int, cin: int, d: int, dtype) -> dict:
    """Patch embedding as a strided conv (what ViT / Mixer do)."""
    return conv_bias_spec((patch, patch), cin, d, dtype)


def patchify(x: jax.Array, p: Params, patch: int) -> jax.Array:
    """[B, H, W, C] -> [B, H/p * W/p, D] via a patch-sized, patch-strided convolution."""
    y = lax.conv_general_dilated(
        x,
        scaled(p["w"], math.prod(p["w"].shape[:-1])),
        window_strides=(patch, patch),
        padding="VALID",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    y = y + p["b"]
    b, h, w, d = y.shape
    return y.reshape(b, h * w, d)
