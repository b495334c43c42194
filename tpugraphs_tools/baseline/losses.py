"""Ranking losses over the config axis, with a validity mask for padded configs.

Shapes: ``pred`` and ``runtime`` are ``[B, C]`` (B graphs, C configs each); ``valid`` is 1.0
for real configs. ``pred`` is a cost (lower = faster), matching ``metrics.py``. ``bounds``
``[B, C, 2]`` is each label's 95% CI on the log-runtime scale (both ends the label itself where
the CI is unknown); only ``sure_pairs`` reads it.
"""

from __future__ import annotations

from typing import Protocol

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


class RankingLoss(Protocol):
    def __call__(self, pred: ArrayLike, runtime: ArrayLike, valid: ArrayLike,
                 bounds: ArrayLike | None = None) -> jax.Array: ...


def _f32(*arrays: ArrayLike) -> tuple[jax.Array, ...]:
    return tuple(jnp.asarray(a, jnp.float32) for a in arrays)


def pairwise_hinge(pred: ArrayLike, runtime: ArrayLike, valid: ArrayLike,
                   bounds: ArrayLike | None = None, margin: float = 0.1) -> jax.Array:
    """Mean over ordered pairs (y_i < y_j) of ``max(0, margin − (pred_j − pred_i))``."""
    pred, runtime, valid = _f32(pred, runtime, valid)
    pair = (runtime[:, :, None] < runtime[:, None, :]) & (valid[:, :, None] > 0) \
        & (valid[:, None, :] > 0)
    gap = pred[:, None, :] - pred[:, :, None]
    loss = jnp.maximum(0.0, margin - gap) * pair
    return loss.sum() / jnp.maximum(pair.sum(), 1)


def listmle(pred: ArrayLike, runtime: ArrayLike, valid: ArrayLike,
            bounds: ArrayLike | None = None) -> jax.Array:
    """Plackett-Luce negative log-likelihood of the true order (fastest first), per graph mean.

    Padded configs are sorted last and contribute neither terms nor normaliser mass.
    """
    pred, runtime, valid = _f32(pred, runtime, valid)
    big = jnp.finfo(runtime.dtype).max
    order = jnp.argsort(jnp.where(valid > 0, runtime, big), axis=-1)
    score = jnp.take_along_axis(-pred, order, axis=-1)
    mask = jnp.take_along_axis(valid, order, axis=-1) > 0
    score = jnp.where(mask, score, -1e9)  # finite: -inf would poison gradients via where()
    # log Σ_{j ≥ i} exp(s_j) through a [C, C] upper-triangular mask: C is small, and this
    # compiles in a fraction of the time of lax.cumlogsumexp's scan
    c = score.shape[-1]
    upper = jnp.triu(jnp.ones((c, c), bool))
    tail = jax.nn.logsumexp(jnp.where(upper[None], score[:, None, :], -1e9), axis=-1)
    terms = jnp.where(mask, tail - score, 0.0)
    per_graph = terms.sum(-1)
    graphs = (mask.sum(-1) > 1).astype(pred.dtype)
    return (per_graph * graphs).sum() / jnp.maximum(graphs.sum(), 1.0)


def sure_pairs(pred: ArrayLike, runtime: ArrayLike, valid: ArrayLike,
               bounds: ArrayLike | None = None) -> jax.Array:
    """Logistic pairwise loss (RankNet) over the pairs whose label CIs are disjoint only.

    Why: on XLA:CPU most of a graph's pairs lie inside the timing noise (56–78% of the
    reference plan's layout pairs overlap); ListMLE and the hinge are told an order for every
    one of them, so a model spends capacity fitting noise. Without ``bounds`` every pair of
    distinct runtimes counts, as in RankNet.
    """
    pred, runtime, valid = _f32(pred, runtime, valid)
    if bounds is None:
        lo = hi = runtime
    else:
        (b,) = _f32(bounds)
        lo, hi = b[..., 0], b[..., 1]
    real = (valid[:, :, None] > 0) & (valid[:, None, :] > 0)
    pair = (hi[:, :, None] < lo[:, None, :]) & real      # i surely faster than j
    gap = pred[:, None, :] - pred[:, :, None]              # cost_j − cost_i: should be > 0
    loss = jax.nn.softplus(-gap) * pair
    return loss.sum() / jnp.maximum(pair.sum(), 1)


LOSSES: dict[str, RankingLoss] = {"listmle": listmle, "hinge": pairwise_hinge,
                                  "sure-pairs": sure_pairs}
