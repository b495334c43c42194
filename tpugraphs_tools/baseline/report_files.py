"""Where a baseline report goes: beside the data it scores, as JSON and Markdown, with its models.

In a tgt dataset the files are committed through the dataset's transaction, so they are
listed in the manifest and ``tgt validate`` stays clean; in an official tree they are plain
files in ``baseline/`` (tree readers only look at ``*.npz``).
"""

from __future__ import annotations

import json
from pathlib import Path

from tpugraphs_tools.baseline.markdown import report_markdown
from tpugraphs_tools.baseline.report import BaselineReport
from tpugraphs_tools.store import MANIFEST, Dataset

REPORT_DIR = "baseline"
REPORT_JSON = f"{REPORT_DIR}/report.json"
REPORT_MD = f"{REPORT_DIR}/report.md"


def report_bytes(report: BaselineReport) -> tuple[bytes, bytes]:
    """(JSON, Markdown) of one report."""
    return ((json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n").encode(),
            report_markdown(report).encode())


def model_files(report: BaselineReport) -> dict[str, bytes]:
    """File name → bytes of every evaluation's saved model (parameters + sidecar)."""
    return {name: data for _, ev in report.evaluations() if ev.model is not None
            for name, data in ev.model.files().items()}


def write_report(report: BaselineReport, path: str | Path) -> list[Path]:
    """JSON at ``path``, Markdown beside it (same name, ``.md``), then the saved models in the
    same folder; the models are written first, so a report never names a missing model."""
    data, markdown = report_bytes(report)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    models = [path.parent / name for name in model_files(report)]
    for target, body in zip(models, model_files(report).values(), strict=True):
        target.write_bytes(body)
    path.write_bytes(data)
    md = path.with_suffix(".md")
    md.write_bytes(markdown)
    return [path, md, *models]


def save_report(report: BaselineReport, data: str | Path) -> list[Path]:
    """Store the report and models inside ``data`` (a tgt dataset or an official tree):
    [report.json, report.md, model files...]."""
    root = Path(data)
    if not (root / MANIFEST).exists():
        return write_report(report, root / REPORT_JSON)
    body, markdown = report_bytes(report)
    models = model_files(report)
    with Dataset.open(root).transaction() as tx:
        for name, model in models.items():
            tx.put_file(f"{REPORT_DIR}/{name}", model)
        tx.put_file(REPORT_JSON, body)
        tx.put_file(REPORT_MD, markdown)
    return [root / REPORT_JSON, root / REPORT_MD, *(root / REPORT_DIR / n for n in models)]
