"""Acceptance: an XLA dump ingested from disk featurizes exactly like the same jax program
taken straight from jax (before optimizations vs ``from_lowered``, after vs ``from_compiled``).

``XLA_FLAGS`` is read once when jax's backend starts, so the dump is made in a subprocess; the
direct route runs in this process on the very same program file.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import HloSource, fingerprint, from_compiled, from_file, from_lowered

PROGRAM = '''\
"""conv + relu + reshape + dot + reduce; run as a script it lowers and compiles once."""
import jax
import jax.numpy as jnp
from jax import lax


def tgt_dump_probe(x, k, w):
    y = lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.relu(y)
    y = y.reshape(y.shape[0], -1)
    return jnp.sum(y @ w, axis=1)


ARGS = [jax.ShapeDtypeStruct(s, jnp.float32) for s in [(2, 6, 6, 3), (3, 3, 3, 4), (144, 5)]]


def lower():
    return jax.jit(tgt_dump_probe).lower(*ARGS)


if __name__ == "__main__":
    lower().compile()
'''


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """(dump directory, the program module imported here)."""
    root = tmp_path_factory.mktemp("xla_dump")
    script = root / "probe_program.py"
    script.write_text(PROGRAM)
    out = root / "dump"
    env = {**os.environ, "XLA_FLAGS": f"--xla_dump_to={out}", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    spec = importlib.util.spec_from_file_location("probe_program", script)
    assert spec is not None and spec.loader is not None
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    return out, program


def dumped(directory: Path, suffix: str) -> Path:
    files = sorted(directory.glob(f"*jit_tgt_dump_probe*{suffix}"))
    assert len(files) == 1, (suffix, [p.name for p in directory.iterdir()])
    return files[0]


def assert_identical(a: HloSource, b: HloSource) -> None:
    fa, fb = featurize(a.module).arrays(), featurize(b.module).arrays()
    assert fa.keys() == fb.keys() == {"node_feat", "node_opcode", "edge_index", "node_splits",
                                      "node_config_ids"}
    for key in fa:
        assert fa[key].dtype == fb[key].dtype, key
        assert np.array_equal(fa[key], fb[key]), key
    assert fingerprint(a.module) == fingerprint(b.module)


def test_before_optimizations_dump_equals_from_lowered(dump) -> None:
    directory, program = dump
    on_disk = from_file(dumped(directory, ".before_optimizations.txt"))
    direct = from_lowered(program.lower(), origin="tgt_dump_probe")
    opcodes = {i.opcode for _, i in direct.module.instructions()}
    assert {"convolution", "dot", "reshape", "reduce", "maximum"} <= opcodes
    assert_identical(on_disk, direct)


def test_cpu_after_optimizations_dump_equals_from_compiled(dump) -> None:
    directory, program = dump
    on_disk = from_file(dumped(directory, ".cpu_after_optimizations.txt"), stage="optimized")
    direct = from_compiled(program.lower().compile(), origin="tgt_dump_probe")
    assert any(i.opcode == "fusion" for _, i in direct.module.instructions())
    assert_identical(on_disk, direct)
