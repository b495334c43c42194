"""``tgt export`` and ``tgt publish`` write the same bytes as the recorded golden run.

The golden files (one per jax version: the 0.9.2, 0.10.2 and 0.12.0.1 ones of CI and the
dev venv) were written by ``tests/format/golden.py`` from the code before the format
module existed, so this proves the refactor changed no published byte (npz: member payloads).
They are re-recorded only for a change meant to alter published bytes, with the diff checked
by hand: the configs column ``process_sd`` (2026-12-01) changed the configs shards, the card,
croissant.json and SHA256SUMS, and no export or npz byte.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import golden


def test_export_and_publish_bytes_match_the_golden_run(tmp_path: Path):
    path = golden.golden_path(golden.jax_version())
    if not path.exists():
        pytest.skip(f"no golden for jax {golden.jax_version()} (its lowering differs): "
                    "record one with golden.py from the code to compare against")
    expected = json.loads(path.read_text())
    assert expected.pop("jax") == golden.jax_version()
    got = golden.exports(tmp_path)
    for run, files in expected.items():
        assert sorted(got[run]) == sorted(files), run
        for rel, digest in files.items():
            assert got[run][rel] == digest, f"{run}: {rel} changed"
