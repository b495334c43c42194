"""Entry point: detect what a path holds and run every check family over it, file by file."""

from __future__ import annotations

from pathlib import Path

from tpugraphs_tools.store.manifest import MANIFEST
from tpugraphs_tools.validate import dataset_checks, npz_checks
from tpugraphs_tools.validate.report import Finding, Report


def validate_path(path: str | Path, max_errors: int | None = None) -> Report:
    """Validate a tgt dataset directory; never writes anything."""
    root = Path(path)
    report = Report(root=str(root), max_errors=max_errors)
    if not root.is_dir():
        report.add(Finding("dataset.not_a_directory", "not a directory", str(root)))
        return report
    if not (root / MANIFEST).exists():
        report.add(Finding("dataset.manifest_missing", "no manifest.json", MANIFEST))
        return report
    manifest = dataset_checks.check_manifest(root, report)
    if manifest is None:
        return report
    dataset_checks.check_files(root, manifest, report)
    graphs = dataset_checks.read_table(root, manifest, "graphs", report)
    dataset_checks.read_table(root, manifest, "configs", report)
    if graphs is None:
        return report
    for row in graphs.select(["graph_id", "collection", "npz_file"]).to_pylist():
        rel = row["npz_file"]
        path = root / rel if rel else None
        if path is None or not path.is_file():
            report.add(Finding("dataset.npz_missing", f"graph {row['graph_id']} has no npz",
                               rel or "graphs.parquet", key="npz_file"))
            continue
        collection = row["collection"] if row["collection"] in ("layout", "tile") else "layout"
        if npz_checks.check_structure(path, rel, collection, report) is None:
            continue
        npz_checks.load_arrays(path, rel, report)
    return report
