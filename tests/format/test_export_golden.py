"""``tgt export`` and ``tgt publish`` write the same bytes as the recorded golden run.

The golden file was written by ``tests/format/golden.py`` from the code before the format
module existed, so this proves the refactor changed no published byte (npz: member payloads).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import golden


def test_export_and_publish_bytes_match_the_golden_run(tmp_path: Path):
    expected = json.loads(golden.GOLDEN.read_text())
    if expected.pop("jax") != golden.jax_version():
        pytest.skip("golden recorded with another jax (its lowering differs); rerun golden.py")
    got = golden.exports(tmp_path)
    for run, files in expected.items():
        assert sorted(got[run]) == sorted(files), run
        for rel, digest in files.items():
            assert got[run][rel] == digest, f"{run}: {rel} changed"
