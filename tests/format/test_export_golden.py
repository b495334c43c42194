"""``tgt export`` and ``tgt publish`` write the same bytes as the recorded golden run.

The golden files (one per jax version: the 0.9.2, 0.10.2 and 0.12.0.1 ones of CI and the
dev venv) were written by ``tests/format/golden.py`` from the code before the format
module existed, so this proves the refactor changed no published byte (npz: member payloads).
They are re-recorded only for a change meant to alter published bytes, with the diff checked
by hand: the configs column ``process_sd`` (2026-12-01) changed the configs shards, the card,
croissant.json and SHA256SUMS, and no export or npz byte; fixing the machine the manifest
records (2026-12-03: the card printed the recording host's kernel release, so the check failed
on every other machine) changed the card only; the configs column ``timing_cpus`` (2026-12-03) changed the configs
shards, the card, croissant.json and SHA256SUMS again, and no export or npz byte; the configs
column ``timer`` (2026-12-05: which clock timed a row) changed the same four and nothing else;
one wording of the counts (2026-12-05: "N configs (M labels) + K control rows") changed the card
and croissant.json only; the configs columns ``kernels_per_run`` and ``timer_fallback`` and the
status ``infeasible`` (2026-12-06) changed the configs shards, the card, croissant.json and
SHA256SUMS, and no export or npz byte (re-recorded for jax 0.10.2 only: 0.9.2 and 0.12.0.1
need their CI venvs).

It never skips: CI pins jax in both venvs (.ci/lowest.txt, .ci/newest.txt) to versions with a
golden, and a jax without one fails, saying how to record it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import golden

CI_PINS = Path(__file__).resolve().parents[2] / ".ci"


def test_export_and_publish_bytes_match_the_golden_run(tmp_path: Path):
    path = golden.golden_path(golden.jax_version())
    # Never a skip: a byte-identity check that silently stops running proves nothing.
    assert path.exists(), (
        f"no export golden for jax {golden.jax_version()} (its lowering changes graph bytes): "
        "record one with `python tests/format/golden.py` from a commit known to write the "
        "right bytes, check its diff by hand, and commit it (CI pins jax in .ci/*.txt)")
    expected = json.loads(path.read_text())
    assert expected.pop("jax") == golden.jax_version()
    got = golden.exports(tmp_path)
    for run, files in expected.items():
        assert sorted(got[run]) == sorted(files), run
        for rel, digest in files.items():
            assert got[run][rel] == digest, f"{run}: {rel} changed"


@pytest.mark.parametrize("pins", ["lowest.txt", "newest.txt"])
def test_every_ci_venv_pins_a_jax_with_a_golden(pins: str):
    """Both CI venvs install a jax the golden check has a recording for."""
    lines = (CI_PINS / pins).read_text().splitlines()
    versions = [line.split("==", 1)[1].strip() for line in lines if line.startswith("jax==")]
    assert len(versions) == 1, f".ci/{pins} must pin jax== exactly once"
    assert golden.golden_path(versions[0]).exists(), f".ci/{pins}: no golden for {versions[0]}"
