"""Byte-level fingerprint of ``tgt export`` and ``tgt publish`` on the publish tests' dataset.

Run as a script to (re)write ``data/export_golden-<jax version>.json`` (one per jax: the
lowering, and so every graph byte, depends on it; CI's two venvs each have theirs); the test
compares a fresh export with it, which proves a refactor left every written byte as it was. npz files are zips whose entries
carry the write time, so an npz is fingerprinted by its members (name and sha256 of each
``.npy`` payload, in order); every other file by its bytes. ``tgt publish`` stamps today's date
into the card and croissant.json and their checksums, so those three are recorded with the date
replaced by a placeholder. The dataset is built with the store's clock frozen.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner

GOLDEN_DIR = Path(__file__).parent / "data"


def golden_path(version: str) -> Path:
    return GOLDEN_DIR / f"export_golden-{version}.json"
_CONFTEST = Path(__file__).resolve().parents[1] / "publish" / "conftest.py"
_DATED = ("README.md", "croissant.json", "SHA256SUMS")


FROZEN_TIME = "2026-01-01T00:00:00+00:00"
# The machine the manifest records (and the card prints): the recording machine's kernel
# release, Python and NumPy are not what the golden checks, and made it fail on any other host.
FROZEN_ENVIRONMENT: dict[str, Any] = {
    "python_version": "3.x", "numpy_version": "2.x",
    "host": {"hostname": "golden", "platform": "Linux-golden-x86_64", "machine": "x86_64",
             "processor": "", "cpu_count": 2},
}


def build_dataset(root: Path) -> Path:
    """The publish tests' dataset (jax lowering and featurizing, no XLA compile), with the
    store's clock frozen so its ``created_at`` stamps (published columns) are the same each
    run, and the host/Python/NumPy the manifest records fixed (the card prints them)."""
    from tpugraphs_tools.store import manifest as store_manifest
    from tpugraphs_tools.store import transaction as store_transaction

    spec = importlib.util.spec_from_file_location("_publish_conftest", _CONFTEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    saved = (store_transaction.now, store_manifest.now, store_manifest.new_manifest)
    real_manifest = store_manifest.new_manifest
    store_transaction.now = store_manifest.now = lambda: FROZEN_TIME  # type: ignore[assignment]
    store_manifest.new_manifest = lambda: {  # type: ignore[assignment]
        **real_manifest(), **json.loads(json.dumps(FROZEN_ENVIRONMENT))}
    try:
        return module.build_dataset(root)
    finally:
        store_transaction.now, store_manifest.now, store_manifest.new_manifest = saved


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint(tree: Path) -> dict[str, Any]:
    """rel path → sha256 of the bytes, or, for a zip, [[member, sha256], ...] in zip order."""
    today = _dt.date.today().isoformat().encode()
    out: dict[str, Any] = {}
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        rel = path.relative_to(tree).as_posix()
        if zipfile.is_zipfile(path) and path.suffix == ".npz":
            with zipfile.ZipFile(path) as zf:
                out[rel] = [[i.filename, _digest(zf.read(i))] for i in zf.infolist()]
            continue
        data = path.read_bytes()
        if path.name in _DATED:
            data = data.replace(today, b"<today>")
        if path.name == "SHA256SUMS":  # the dated files' sums change daily; their bytes are
            data = b"".join(_undated_sum(line) for line in data.splitlines(keepends=True))
        out[rel] = _digest(data)
    return out


def _undated_sum(line: bytes) -> bytes:
    """A ``SHA256SUMS`` line with the sum of a dated file (fingerprinted on its own, with the
    date replaced) blanked: otherwise the golden would hold only on the day it was recorded."""
    _sum, _, name = line.rstrip(b"\n").partition(b"  ")
    if name.rsplit(b"/", 1)[-1].decode() in _DATED:
        return b"<dated>  " + name + b"\n"
    return line


def jax_version() -> str:
    """The lowering (and so every graph byte) depends on jax: the golden holds for one version."""
    import jax

    return str(jax.__version__)


def _run(args: list[str]) -> None:
    from tpugraphs_tools.cli import main

    result = CliRunner().invoke(main, args, catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"tgt {' '.join(args)} failed: {result.output}")


def exports(work: Path, data: Path | None = None) -> dict[str, Any]:
    """Fingerprints of ``tgt export`` (two seeds/ratios) and ``tgt publish`` of the dataset."""
    data = data or build_dataset(work / "data")
    runs = {
        "export": ["export", str(data), "--out", str(work / "export")],
        "export-fingerprint": ["export", str(data), "--out", str(work / "export-fp"),
                               "--split-by", "fingerprint", "--seed", "3",
                               "--ratios", "0.5,0.25,0.25"],
        "publish": ["publish", str(data), "--out", str(work / "publish"), "--name", "golden",
                    "--license", "cc-by-4.0"],
    }
    out: dict[str, Any] = {}
    for name, args in runs.items():
        _run(args)
        out[name] = fingerprint(Path(args[args.index("--out") + 1]))
    return out


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        result = {"jax": jax_version(), **exports(Path(tmp))}
    path = golden_path(result["jax"])
    path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}: " + ", ".join(f"{k} {len(v)} files" for k, v in result.items() if k != "jax"),
          file=sys.stderr)
