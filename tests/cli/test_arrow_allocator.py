"""tgt validate runs with Arrow on the system allocator; other commands keep pyarrow's default;
a pool chosen in the environment stands (cli/_process.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tpugraphs_tools.cli._process import command_of

PROBE = ("import sys; sys.argv = ['tgt', *sys.argv[1:]]; import tpugraphs_tools.cli; "
         "import pyarrow as pa; print(pa.default_memory_pool().backend_name)")


def _backend(*argv: str, pool: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if pool is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = pool
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], env=env, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def test_command_is_the_first_argument_not_an_option():
    assert command_of(["--verbose", "validate", "data/"]) == "validate"
    assert command_of(["-h"]) is None


@pytest.mark.parametrize(("argv", "pool", "expected"), [
    (("validate", "data/"), None, "system"),
    (("report", "data/"), None, "mimalloc"),
    (("validate", "data/"), "jemalloc", "jemalloc"),
])
def test_allocator_per_command(argv, pool, expected):
    default = _backend("programs")
    if expected == "mimalloc":
        expected = default  # pyarrow's own default where mimalloc is not built in
    assert _backend(*argv, pool=pool) == expected
