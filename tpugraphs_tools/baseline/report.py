"""Where a baseline report goes: beside the data it scores, as JSON and Markdown.

In a tgt dataset the two files are committed through the dataset's transaction, so they are
listed in the manifest and ``tgt validate`` stays clean; in an official tree they are plain
files in ``baseline/`` (tree readers only look at ``*.npz``).
"""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

REPORT_DIR = "baseline"
REPORT_JSON = f"{REPORT_DIR}/report.json"
REPORT_MD = f"{REPORT_DIR}/report.md"
_PACKAGES = ("jax", "jaxlib", "flax", "optax", "numpy", "scipy")


def versions() -> dict[str, str | None]:
    """Python and the packages whose versions change the numbers."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def report_bytes(report: dict[str, Any]) -> tuple[bytes, bytes]:
    """(JSON, Markdown) of one report."""
    from tpugraphs_tools.baseline.markdown import report_markdown

    return ((json.dumps(report, indent=2, sort_keys=True) + "\n").encode(),
            report_markdown(report).encode())


def write_report(report: dict[str, Any], path: str | Path) -> list[Path]:
    """JSON at ``path`` and Markdown beside it (same name, ``.md``)."""
    data, markdown = report_bytes(report)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    md = path.with_suffix(".md")
    md.write_bytes(markdown)
    return [path, md]


def save_report(report: dict[str, Any], data: str | Path) -> list[Path]:
    """Store the report inside ``data`` (a tgt dataset or an official tree)."""
    from tpugraphs_tools.store import MANIFEST, Dataset

    root = Path(data)
    if not (root / MANIFEST).exists():
        return write_report(report, root / REPORT_JSON)
    body, markdown = report_bytes(report)
    with Dataset.open(root).transaction() as tx:
        tx.put_file(REPORT_JSON, body)
        tx.put_file(REPORT_MD, markdown)
    return [root / REPORT_JSON, root / REPORT_MD]
