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

from tpugraphs_tools.format import KINDS, TPUGRAPHS_SOURCE
from tpugraphs_tools.parallel import Pool, make_pool
from tpugraphs_tools.store import MANIFEST, Part, TableInfo
from tpugraphs_tools.validate import dataset_checks, dataset_rows, table_checks, tree_checks
from tpugraphs_tools.validate.jobs import NpzJob, merge, run_npz_job
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
        locate = places.get("graphs", _Places())
        if graphs is not None:
            dataset_rows.check_split_overlap(graphs, report, locate)
        checker = _GraphFiles(root, graphs, locate, manifest, report, max_array_bytes, pool)
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


def _read_part(root: Path, manifest: dict, part: Part, name: str, report: Report,
               columns: list[str] | None = None) -> pl.DataFrame | None:
    path = root / part.file
    if not path.is_file():
        if part.file not in manifest["files"]:  # listed-but-missing is reported already
            report.emit("dataset.table_missing", f"{name} table part missing", part.file)
        return None
    return table_checks.read_table(path, part.file, name, report, part.rows, columns)


class _Places:
    """Row of a table read from several parts → (part file, row within that part)."""

    def __init__(self) -> None:
        self.starts: list[tuple[int, str]] = []

    def add(self, start: int, rel: str) -> None:
        self.starts.append((start, rel))

    def __call__(self, row: int) -> tuple[str, int]:
        place = (dataset_rows.GRAPHS, row)
        for start, rel in self.starts:
            if row >= start:
                place = (rel, row - start)
        return place


def _read_small_tables(root: Path, manifest: dict, infos: dict[str, TableInfo],
                       report: Report) -> tuple[dict[str, pl.DataFrame], dict[str, _Places]]:
    """Every table but configs, whole (one row per graph: small), each part schema-checked."""
    tables: dict[str, pl.DataFrame] = {}
    places: dict[str, _Places] = {}
    for name, info in infos.items():
        if name == STREAMED or not table_checks.has_schema(name):
            continue  # a table this tgt does not know: its checksum is all we can check
        _check_total(manifest, info, report)
        frames, where, start = [], _Places(), 0
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
            table_checks.check_unique(df, name, _first_file(info), report)
        tables[name] = df
    for name, df in tables.items():
        table_checks.check_foreign_keys(name, df, _first_file(infos[name]), tables, report)
    table_checks.release_unused_memory()
    return tables, places


def _stream_configs(root: Path, manifest: dict, info: TableInfo,
                    tables: dict[str, pl.DataFrame], checker: _GraphFiles,
                    report: Report) -> None:
    """Configs part by part: schema, row rules, foreign keys, then the npz of every graph
    whose rows the part holds (a graph's config rows live in one part)."""
    _check_total(manifest, info, report)
    seen: dict[str, str] = {}  # key value -> the part that holds it
    columns = [*dataset_rows.CONFIG_COLUMNS, info.key,
               *table_checks.foreign_key_columns(STREAMED)]
    for part in info.parts:
        if report.full:
            return
        df = _read_part(root, manifest, part, STREAMED, report, columns)
        if df is None:
            continue
        table_checks.check_foreign_keys(STREAMED, df, part.file, tables, report)
        if info.key in df.columns:
            for value in df.get_column(info.key).drop_nulls().unique().to_list():
                if value in seen:
                    report.emit("dataset.schema_duplicate_id", f"{info.key} {value!r} has rows "
                                f"in two parts: {seen[value]} and {part.file}", part.file,
                                key=info.key)
                seen.setdefault(value, part.file)
        refs = dataset_rows.check_configs(df, part.file, report)
        del df
        checker.check(list(refs.by_graph), refs)
        del refs
        table_checks.release_unused_memory()


class _GraphFiles:
    """Each graph row's npz (streamed, one at a time) and HLO file, then orphans."""

    def __init__(self, root: Path, graphs: pl.DataFrame | None, locate: _Places,
                 manifest: dict, report: Report, max_array_bytes: int, pool: Pool) -> None:
        self.root, self.manifest, self.report, self.locate = root, manifest, report, locate
        self.max_array_bytes, self.pool = max_array_bytes, pool
        # graph_id -> row position only; a row's dict is built when its graph is checked, so
        # the graphs stay in the compact columnar frame instead of one dict per graph
        self.graphs = graphs if graphs is not None else pl.DataFrame()
        has_ids = "graph_id" in self.graphs.columns
        ids = self.graphs.get_column("graph_id").to_list() if has_ids else [None] * len(self.graphs)
        self.order = [str(g) for g in ids]
        self.positions = {g: i for i, g in enumerate(self.order)}
        self.done: set[str] = set()
        self.referenced: set[str] = set()

    def _row(self, graph_id: str) -> tuple[int, dict[str, Any]]:
        position = self.positions[graph_id]
        return position, self.graphs.row(position, named=True)

    def _job(self, graph_id: str) -> NpzJob:
        """The graph's HLO/npz presence findings, and its npz to check if it exists."""
        position, row = self._row(graph_id)
        graphs_rel, index = self.locate(position)
        root, listed = self.root, self.manifest["files"]
        pre = Report(root="")
        hlo = row.get("hlo_file")
        if hlo and not (root / hlo).is_file() and hlo not in listed:
            pre.emit("dataset.hlo_missing", f"graph {row.get('graph_id')!r} has no HLO file "
                     f"{hlo}", graphs_rel, key="hlo_file", index=index)
        rel = row.get("npz_file")
        if rel:
            self.referenced.add(rel)
        path: Path | None = root / rel if rel else None
        if not rel or not (root / rel).is_file():
            if not rel or rel not in listed:
                pre.emit("dataset.npz_missing", f"graph {row.get('graph_id')!r} npz "
                         f"{rel!r} does not exist", graphs_rel, key="npz_file", index=index)
            path = None
        collection = row.get("collection")
        return NpzJob(path, str(rel), collection if collection in KINDS else None,
                      False, self.max_array_bytes, tuple(pre.findings), graph_id,
                      partial_layouts_ok=row.get("source") == TPUGRAPHS_SOURCE)

    def check(self, graph_ids: list[str], refs: dataset_rows.ConfigRefs) -> None:
        todo = sorted((g for g in graph_ids if g not in self.done and g in self.positions),
                      key=lambda g: self.positions[g])  # graphs-table order: deterministic
        self.done.update(todo)
        for result in self.pool.map(run_npz_job, (self._job(g) for g in todo)):
            if self.report.full:
                return
            merge(result, self.report)
            graph_id = result.job.tag
            position, row = self._row(graph_id)
            graphs_rel, index = self.locate(position)
            if result.summary is not None and row.get("graph_id") is not None:
                dataset_rows.check_graph_against_npz(row, index, result.summary, refs,
                                                     self.report, graphs_rel)

    def finish(self) -> None:
        """Graphs without config rows, then npz files no graph row references."""
        self.check(self.order, dataset_rows.ConfigRefs("configs"))
        if self.report.full:
            return
        listed = self.manifest["files"]
        for rel in sorted(listed):
            if (rel.startswith("graphs/") and rel.endswith(".npz")
                    and rel not in self.referenced and (self.root / rel).is_file()):
                self.report.emit("dataset.npz_orphan", "npz that no graphs.parquet row "
                                 "references", rel)
