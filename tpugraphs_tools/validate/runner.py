"""Entry point: detect what a path holds and run every check family over it, file by file.

* ``manifest.json`` at the root → a tgt dataset (manifest, files, tables, every graph's npz);
* otherwise npz files under ``layout``/``tile`` path components → the official TpuGraphs tree;
* otherwise any npz files → a bare directory, each file's keys saying layout or tile;
* a single ``.npz`` path → that file.

Nothing is ever written, and ``Dataset.open`` (which may roll an interrupted commit forward) is
deliberately not used: files are read directly.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tpugraphs_tools.store.manifest import MANIFEST
from tpugraphs_tools.validate import dataset_checks, dataset_rows, table_checks, tree_checks
from tpugraphs_tools.validate.npz_file import check_npz
from tpugraphs_tools.validate.report import Report
from tpugraphs_tools.validate.structure_checks import MAX_ARRAY_BYTES

_TGT_MARKERS = ("graphs.parquet", "configs.parquet")


def validate_path(path: str | Path, max_errors: int | None = None, *,
                  max_array_bytes: int = MAX_ARRAY_BYTES) -> Report:
    """Validate a tgt dataset, an official TpuGraphs tree, a directory of npz or one npz."""
    root = Path(path)
    report = Report(root=str(root), max_errors=max_errors)
    if root.is_file():
        report.kind = "npz"
        check_npz(root, root.name, None, report, max_array_bytes=max_array_bytes)
        return report
    if not root.is_dir():
        report.emit("dataset.not_a_dataset", "no such file or directory", str(root))
        return report
    if (root / MANIFEST).exists() or any((root / m).exists() for m in _TGT_MARKERS):
        report.kind = "tgt"
        _validate_tgt(root, report, max_array_bytes)
        return report
    files = tree_checks.discover(root)
    if not files:
        report.kind = "unknown"
        report.emit("dataset.not_a_dataset", "no manifest.json and no .npz files", ".")
        return report
    report.kind = "tpugraphs" if tree_checks.is_tree(files) else "npz"
    tree_checks.check_tree(root, files, report, max_array_bytes)
    return report


def _validate_tgt(root: Path, report: Report, max_array_bytes: int) -> None:
    manifest = dataset_checks.check_manifest(root, report)
    if manifest is None:
        return
    hasher = dataset_checks.Hasher()
    try:
        dataset_checks.check_files(root, manifest, report, hasher)
        tables, rels = _read_tables(root, manifest, report)
        graphs = tables.get("graphs")
        if graphs is not None:
            dataset_rows.check_split_overlap(graphs, report)
            configs = tables.get("configs")
            refs = (dataset_rows.check_configs(configs, rels["configs"], report)
                    if configs is not None else dataset_rows.ConfigRefs(rels["configs"]))
            _check_graph_files(root, graphs, manifest, refs, report, max_array_bytes)
        if tables.get("partitions") is not None:
            dataset_rows.check_partitions(root, tables["partitions"], rels["partitions"], report)
        hasher.finish(report)
    finally:
        hasher.close()


def _read_tables(root: Path, manifest: dict, report: Report
                 ) -> tuple[dict[str, pl.DataFrame], dict[str, str]]:
    tables: dict[str, pl.DataFrame] = {}
    rels: dict[str, str] = {}
    for name, (rel, rows) in dataset_checks.table_files(manifest).items():
        rels[name] = rel
        if not table_checks.has_schema(name):
            continue  # a table this tgt does not know: its checksum is all we can check
        path = root / rel
        if not path.is_file():
            if rel not in manifest["files"]:  # listed-but-missing is reported already
                report.emit("dataset.table_missing", f"{name} table missing", rel)
            continue
        df = table_checks.read_table(path, rel, name, report, rows)
        if df is not None:
            tables[name] = df
    table_checks.check_foreign_keys(tables, rels, report)
    return tables, rels


def _check_graph_files(root: Path, graphs: pl.DataFrame, manifest: dict,
                       refs: dataset_rows.ConfigRefs, report: Report,
                       max_array_bytes: int) -> None:
    """Each graph row's npz (streamed, one at a time) and HLO file, then orphans."""
    listed = manifest["files"]
    referenced: set[str] = set()
    for index, row in enumerate(graphs.iter_rows(named=True)):
        if report.full:
            return
        hlo = row.get("hlo_file")
        if hlo and not (root / hlo).is_file() and hlo not in listed:
            report.emit("dataset.hlo_missing", f"graph {row.get('graph_id')!r} has no HLO file "
                        f"{hlo}", dataset_rows.GRAPHS, key="hlo_file", index=index)
        rel = row.get("npz_file")
        if rel:
            referenced.add(rel)
        if not rel or not (root / rel).is_file():
            if not rel or rel not in listed:
                report.emit("dataset.npz_missing", f"graph {row.get('graph_id')!r} npz "
                            f"{rel!r} does not exist", dataset_rows.GRAPHS, key="npz_file",
                            index=index)
            continue
        collection = row.get("collection")
        summary = check_npz(root / rel, rel, collection if collection in ("layout", "tile")
                            else None, report, max_array_bytes=max_array_bytes)
        if summary is not None and row.get("graph_id") is not None:
            dataset_rows.check_graph_against_npz(row, index, summary, refs, report)
    for rel in sorted(listed):
        if (rel.startswith("graphs/") and rel.endswith(".npz") and rel not in referenced
                and (root / rel).is_file()):
            report.emit("dataset.npz_orphan", "npz that no graphs.parquet row references", rel)
