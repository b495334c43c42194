"""Example user program: lower it with ``tgt ... --program examples.my_program:make_fn``.

A user program is any importable callable that takes :class:`ProgramArgs` and returns
``(fn, example_args)``: ``fn`` a pure JAX function, ``example_args`` a tuple of pytrees of
``jax.ShapeDtypeStruct`` (weights included, so nothing is materialised to lower it). Give it as
``"pkg.module:make_fn"`` or ``"path/to/file.py:make_fn"``.

Keep it safe on random inputs: measurement feeds standard-normal floats and int32 values in
``[0, 2)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from tpugraphs_tools.programs import ProgramArgs
from tpugraphs_tools.programs.train import build_program


def make_fn(args: ProgramArgs):
    """Gated MLP regressor: y = (x @ w1 * sigmoid(x @ w2)) @ w3 (a made-up block)."""
    dtype = jnp.bfloat16 if args.dtype == "bfloat16" else jnp.float32
    d, hidden = (16, 32) if args.preset == "tiny" else (512, 2048)
    seq = args.seq_len or (8 if args.preset == "tiny" else 128)

    def s(*shape, dt=dtype):
        return jax.ShapeDtypeStruct(shape, dt)

    params = {"w1": s(d, hidden), "w2": s(d, hidden), "w3": s(hidden, d)}

    def forward(p, x):
        scale = 1.0 / d**0.5  # keeps N(0, 1) random weights from blowing up activations
        h = (x @ p["w1"]) * jax.nn.sigmoid(x @ p["w2"]) * scale
        return h @ p["w3"] / hidden**0.5

    def loss(p, x, y):
        return jnp.mean(jnp.square(forward(p, x).astype(jnp.float32) - y.astype(jnp.float32)))

    x = s(args.batch, seq, d)
    # build_program returns forward for mode="infer" and a full optax step for mode="train".
    return build_program(args, params, [x], forward, [x], loss, optimizer="adam")


make_fn.presets = ("tiny", "base")  # optional: which presets this program understands
