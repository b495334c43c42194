"""Small fixtures shared by the test folders: a tiny valid HLO module, a file writer, and a
small conv net lowered once per session (real HLO with conv, dot and reshape)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

# A module XLA's own parser accepts: a reduce with a called adder, a reshape and a dot, so it
# has edges into a called computation and two configurable nodes.
TINY_HLO = """\
HloModule tiny, entry_computation_layout={(f32[2,3]{1,0}, f32[3,4]{1,0})->f32[2]{0}}

add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  w = f32[3,4]{1,0} parameter(1)
  d = f32[2,4]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[8]{0} reshape(d)
  zero = f32[] constant(0)
  s = f32[] reduce(r, zero), dimensions={0}, to_apply=add_f32
  ROOT out = f32[2]{0} broadcast(s), dimensions={}
}
"""


@pytest.fixture(scope="session")
def tiny_hlo() -> str:
    return TINY_HLO


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, str], Path]:
    """``write_file("m.hlo", text)`` → path of that file under a fresh tmp directory."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return write


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
