"""Turn a model into the program ``--mode`` asks for: a forward pass or a full training step.

Every zoo model provides ``forward(params, *inputs)``, a ``loss(params, *inputs, *targets)`` and
the specs of its params, inputs and targets. This module wraps them so all programs share one
signature convention:

* infer: ``fn(params, *inputs) -> outputs``
* train: ``fn(params, opt_state, *inputs, *targets) -> (new_params, new_opt_state, loss)``

The training step is what a real trainer jits: loss, ``jax.value_and_grad`` and an optax update,
so the HLO holds the backward pass and the optimiser arithmetic for every parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from tpugraphs_tools.programs.registry import ProgramArgs, UnknownPresetError

F32 = jnp.float32
# Nested dicts/lists/tuples of jax.ShapeDtypeStruct (params, inputs, caches).
PyTree = Any


class AdamState(NamedTuple):
    """Same fields as optax's ScaleByAdamState: step count, first and second moments."""

    # optax's field name; it shadows tuple.count, which nothing here calls.
    count: jax.Array  # type: ignore[assignment]
    mu: optax.Updates
    nu: optax.Updates


def scale_by_safe_adam(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> optax.GradientTransformation:
    """Adam's scaling, robust to a *random* optimiser state.

    Measurement fills every argument with random normals, including Adam's second moment, where a
    negative value would make ``sqrt`` return NaN. Taking ``abs`` of the stored moment costs one
    elementwise op per parameter and is a no-op on any state Adam itself produced.
    """

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return AdamState(jnp.zeros((), jnp.int32), zeros, jax.tree.map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        del params
        count = state.count + 1
        mu = jax.tree.map(lambda g, m: b1 * m + (1 - b1) * g, updates, state.mu)
        nu = jax.tree.map(lambda g, v: b2 * jnp.abs(v) + (1 - b2) * g * g, updates, state.nu)
        c1 = 1 - b1 ** count.astype(jnp.float32)
        c2 = 1 - b2 ** count.astype(jnp.float32)

        def step(m, v):
            m_hat = m / c1.astype(m.dtype)
            v_hat = v / c2.astype(v.dtype)
            return m_hat / (jnp.sqrt(v_hat) + jnp.asarray(eps, m.dtype))

        return jax.tree.map(step, mu, nu), AdamState(count, mu, nu)

    return optax.GradientTransformation(init, update)


def make_optimizer(kind: str) -> optax.GradientTransformation:
    """The optimisers models are usually trained with: SGD+momentum for convnets, AdamW else."""
    if kind == "sgd":
        return optax.sgd(learning_rate=0.1, momentum=0.9, nesterov=False)
    if kind == "adam":
        return optax.chain(scale_by_safe_adam(), optax.scale(-1e-3))
    if kind == "adamw":
        return optax.chain(
            scale_by_safe_adam(), optax.add_decayed_weights(0.01), optax.scale(-1e-4)
        )
    raise ValueError(f"unknown optimizer {kind!r}")


def softmax_xent(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Mean cross-entropy against int labels, in float32 (labels clipped into range)."""
    labels = jnp.clip(labels, 0, logits.shape[-1] - 1)
    return optax.softmax_cross_entropy_with_integer_labels(logits.astype(F32), labels).mean()


def mse(pred: jax.Array, target: jax.Array) -> jax.Array:
    """Mean squared error in float32 (regression heads, the plain transformer stack)."""
    return jnp.mean(jnp.square(pred.astype(F32) - target.astype(F32)))


def sigmoid_xent(logits: jax.Array, targets: jax.Array) -> jax.Array:
    """Mean binary cross-entropy; log-sigmoid based, so finite for any real targets."""
    return optax.sigmoid_binary_cross_entropy(logits.astype(F32), targets.astype(F32)).mean()


def build_program(
    args: ProgramArgs,
    params: PyTree,
    inputs: Sequence[PyTree],
    forward: Callable,
    targets: Sequence[PyTree] = (),
    loss: Callable | None = None,
    optimizer: str = "adam",
) -> tuple[Callable, tuple]:
    """Return ``(fn, example_args)`` for ``args.mode``; see the module docstring for signatures.

    ``loss(params, *inputs, *targets) -> scalar``; it defaults to
    ``softmax_xent(forward(params, *inputs), targets[0])``.
    """
    inputs, targets = tuple(inputs), tuple(targets)
    if args.mode == "infer":
        return forward, (params, *inputs)
    if args.mode != "train":
        raise UnknownPresetError(f"mode {args.mode!r} not supported; choose infer or train")
    if loss is None:
        n_in = len(inputs)

        def loss(p, *batch):
            return softmax_xent(forward(p, *batch[:n_in]), batch[n_in])

    opt = make_optimizer(optimizer)
    opt_state = jax.eval_shape(opt.init, params)

    def train_step(p, state, *batch):
        value, grads = jax.value_and_grad(loss)(p, *batch)
        updates, new_state = opt.update(grads, state, p)
        return optax.apply_updates(p, updates), new_state, value

    return train_step, (params, opt_state, *inputs, *targets)


def resolve(presets: dict, args: ProgramArgs, name: str):
    """Pick the preset config or fail with the choices (programs call this first)."""
    if args.preset not in presets:
        raise UnknownPresetError(
            f"program {name!r} has no preset {args.preset!r}; choose one of {', '.join(presets)}"
        )
    return presets[args.preset]
