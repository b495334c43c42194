"""Entry results of every tuple form compile and run with the pinned interface."""

from __future__ import annotations

import numpy as np
import pytest

from tpugraphs_tools.compiler import compile as C
from tpugraphs_tools.hlo import parse_hlo_text

_BODY = """
  p0 = f32[4]{0} parameter(0)
  p1 = f32[4]{0} parameter(1)
  add = f32[4]{0} add(p0, p1)
  mul = f32[4]{0} multiply(p0, p1)
"""
ROOTS = {
    "array": ("ROOT r = f32[4]{0} add(add, mul)", 1),
    "one-element tuple": ("ROOT t = (f32[4]{0}) tuple(add)", 1),
    "two-element tuple": ("ROOT t = (f32[4]{0}, f32[4]{0}) tuple(add, mul)", 2),
    "nested tuple": ("i = (f32[4]{0}) tuple(mul)\n  "
                     "ROOT t = (f32[4]{0}, (f32[4]{0})) tuple(add, i)", 2),
}


@pytest.mark.parametrize("kind", list(ROOTS))
def test_tuple_results_compile_and_run(kind: str):
    root, outputs = ROOTS[kind]
    text = f"HloModule m\n\nENTRY main {{{_BODY}  {root}\n}}\n"
    signature = C.entry_signature(parse_hlo_text(text))
    exe = C.compile_text(text, signature)
    inputs = C.make_inputs(signature, seed=0)
    got = C.run(exe, inputs)
    assert len(got) == outputs
    a, b = (np.asarray(x) for x in inputs)
    assert np.allclose(np.asarray(got[0]), a + b if kind != "array" else a + b + a * b)
