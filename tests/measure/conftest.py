"""A small conv net lowered once per test module: real HLO with conv, dot and reshape."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def convnet_source():
    import jax
    import jax.numpy as jnp
    from jax import lax

    from tpugraphs_tools.hlo import from_lowered

    def convnet(x, w1, w2, m):
        y = lax.conv_general_dilated(x, w1, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.nn.relu(y)
        y = lax.conv_general_dilated(y, w2, (2, 2), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return y.reshape(y.shape[0], -1) @ m

    shapes = [(2, 16, 16, 8), (3, 3, 8, 16), (3, 3, 16, 16), (8 * 8 * 16, 10)]
    args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    return from_lowered(jax.jit(convnet).lower(*args), "convnet")
