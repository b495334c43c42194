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
from typing import Any

import polars as pl

from tpugraphs_tools.parallel import Pool, make_pool
from tpugraphs_tools.store import MANIFEST, Part, TableInfo
from tpugraphs_tools.validate import (
    configs_part,
    dataset_checks,
    dataset_rows,
    table_checks,
    tree_checks,
)
from tpugraphs_tools.validate.arrow_memory import release_unused_memory
from tpugraphs_tools.validate.graph_files import GraphFiles, Places
from tpugraphs_tools.validate.npz_file import check_npz
from tpugraphs_tools.validate.report import Report
from tpugraphs_tools.validate.structure_checks import MAX_ARRAY_BYTES

_TGT_MARKERS = ("graphs.parquet", "configs.parquet", "tables")


def validate_path(path: str | Path, max_errors: int | None = None, *,
                  max_array_bytes: int = MAX_ARRAY_BYTES, jobs: int = 1,
                  executor: str = "local", address: str | None = None) -> Report:
    """Validate a tgt dataset, an official TpuGraphs tree, a directory of npz or one npz.

    ``jobs`` processes check npz files, or with ``executor="ray"`` tasks on the Ray cluster
    at ``address`` (files on a filesystem every node sees); findings are the same for all.
    """
    root = Path(path)
    report = Report(root=str(root), max_errors=max_errors)
    if root.is_file():
        report.kind = "npz"
        check_npz(root, root.name, None, report, partial_layouts_ok=True,
                  max_array_bytes=max_array_bytes)
        return report
    if not root.is_dir():
        report.emit("dataset.not_a_dataset", "no such file or directory", str(root))
        return report
    if (root / MANIFEST).exists() or any((root / m).exists() for m in _TGT_MARKERS):
        report.kind = "tgt"
        with make_pool(executor, jobs, address) as pool:
            _validate_tgt(root, report, max_array_bytes, pool)
        return report
    files = tree_checks.discover(root)
    if not files:
        report.kind = "unknown"
        report.emit("dataset.not_a_dataset", "no manifest.json and no .npz files", ".")
        return report
    report.kind = "tpugraphs" if tree_checks.is_tree(files) else "npz"
    with make_pool(executor, jobs, address) as pool:
        tree_checks.check_tree(root, files, report, max_array_bytes, pool)
    return report


def _validate_tgt(root: Path, report: Report, max_array_bytes: int, pool: Pool) -> None:
    manifest = dataset_checks.check_manifest(root, report)
    if manifest is None:
        return
    hasher = dataset_checks.Hasher()
    try:
        dataset_checks.check_files(root, manifest, report, hasher)
        infos = dataset_checks.table_infos(manifest)
        tables, places = _read_small_tables(root, manifest, infos, report)
        graphs = tables.get("graphs")
        locate = places.get("graphs", Places())
        if graphs is not None:
            dataset_rows.check_split_overlap(graphs, report, locate)
        checker = GraphFiles(root, graphs, locate, manifest, report, max_array_bytes, pool)
        if STREAMED in infos and table_checks.has_schema(STREAMED):
            _stream_configs(root, manifest, infos[STREAMED], tables, checker, report)
        checker.finish()
        if tables.get("partitions") is not None:
            dataset_rows.check_partitions(root, tables["partitions"],
                                          _first_file(infos["partitions"]), report)
        hasher.finish(report)
    finally:
        hasher.close()


STREAMED = "configs"  # one row per graph × config: read one part at a time, never whole


def _first_file(info: TableInfo) -> str:
    return info.parts[0].file if info.parts else f"{info.name}.parquet"


def _check_total(manifest: dict, info: TableInfo, report: Report) -> None:
    """A format-2 table's ``rows`` is the sum of its parts' rows."""
    raw = manifest.get("tables", {}).get(info.name)
    if isinstance(raw, dict) and "parts" in raw and raw.get("rows") != info.rows:
        report.emit("dataset.row_count_mismatch", f"{info.name}: manifest says "
                    f"{raw.get('rows')} rows, its parts list {info.rows}", MANIFEST,
                    key=f"tables/{info.name}/rows")


def _present(root: Path, manifest: dict, part: Part, name: str, report: Report) -> bool:
    if (root / part.file).is_file():
        return True
    if part.file not in manifest["files"]:  # listed-but-missing is reported already
        report.emit("dataset.table_missing", f"{name} table part missing", part.file)
    return False


def _read_part(root: Path, manifest: dict, part: Part, name: str, report: Report
               ) -> pl.DataFrame | None:
    if not _present(root, manifest, part, name, report):
        return None
    return table_checks.read_table(root / part.file, part.file, name, report, part.rows)


def _read_small_tables(root: Path, manifest: dict, infos: dict[str, TableInfo],
                       report: Report) -> tuple[dict[str, pl.DataFrame], dict[str, Places]]:
    """Every table but configs, whole (one row per graph: small), each part schema-checked."""
    tables: dict[str, pl.DataFrame] = {}
    places: dict[str, Places] = {}
    for name, info in infos.items():
        if name == STREAMED or not table_checks.has_schema(name):
            continue  # a table this tgt does not know: its checksum is all we can check
        _check_total(manifest, info, report)
        frames, where, start = [], Places(), 0
        for part in info.parts:
            df = _read_part(root, manifest, part, name, report)
            if df is not None:
                frames.append(df)
                where.add(start, part.file)
                start += df.height
        places[name] = where
        if not frames:
            continue
        df = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
        if len(frames) > 1:
            table_checks.check_unique_whole(df, name, _first_file(info), report)
        tables[name] = df
    for name, df in tables.items():
        table_checks.check_foreign_keys(name, df, _first_file(infos[name]), tables, report)
    release_unused_memory()
    return tables, places


def _stream_configs(root: Path, manifest: dict, info: TableInfo,
                    tables: dict[str, pl.DataFrame], checker: GraphFiles,
                    report: Report) -> None:
    """Configs part by part (configs_part.py: never a whole part in memory); a graph's
    config rows live in one part."""
    _check_total(manifest, info, report)
    seen: dict[Any, str] = {}  # key value -> the part that holds it
    for part in info.parts:
        if report.full:
            return
        if _present(root, manifest, part, STREAMED, report):
            configs_part.check_part(root, part, info.key, tables, checker, report, seen)
            release_unused_memory()
