"""Dataset-level checks: manifest schema and version, checksums, listed vs present files,
table schemas. They read file bytes in chunks (hashing), never whole datasets."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pyarrow as pa
import pyarrow.parquet as pq

from tpugraphs_tools.store import atomic
from tpugraphs_tools.store.manifest import FORMAT_VERSION, MANIFEST, sha256_file
from tpugraphs_tools.store.schema import arrow_schema, load_schema
from tpugraphs_tools.validate.report import WARNING, Finding, Report


def check_manifest(root: Path, report: Report) -> dict | None:
    path = root / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        report.add(Finding("dataset.manifest_missing", "no manifest.json", MANIFEST))
        return None
    except (OSError, json.JSONDecodeError) as exc:
        report.add(Finding("dataset.manifest_unreadable", f"cannot parse: {exc}", MANIFEST))
        return None
    validator = jsonschema.Draft202012Validator(load_schema("manifest"))
    for err in validator.iter_errors(manifest):
        where = "/".join(str(p) for p in err.absolute_path) or None
        report.add(Finding("dataset.manifest_schema", err.message, MANIFEST, key=where))
    version = manifest.get("format_version")
    if isinstance(version, int) and version > FORMAT_VERSION:
        report.add(Finding("dataset.format_too_new",
                           f"format_version {version} > supported {FORMAT_VERSION}", MANIFEST,
                           key="format_version"))
    return manifest if isinstance(manifest.get("files"), dict) else None


def check_files(root: Path, manifest: dict, report: Report) -> None:
    """Every listed file exists with its size and sha256; every data file is listed."""
    listed = manifest["files"]
    for rel, info in sorted(listed.items()):
        path = root / rel
        if not path.is_file():
            report.add(Finding("dataset.file_missing", "listed in manifest but missing", rel))
            continue
        report.files_checked += 1
        size = path.stat().st_size
        if size != info.get("bytes"):
            report.add(Finding("dataset.size_mismatch",
                               f"{size} bytes on disk, manifest says {info.get('bytes')}", rel))
            continue
        digest = sha256_file(path)
        if digest != info.get("sha256"):
            report.add(Finding("dataset.checksum_mismatch",
                               f"sha256 {digest[:12]}… differs from manifest "
                               f"{str(info.get('sha256'))[:12]}…", rel))
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if rel == MANIFEST or rel in listed:
            continue
        if atomic.TEMP_MARK in rel or rel == atomic.JOURNAL:
            report.add(Finding("dataset.interrupted_write",
                               "leftover of an interrupted write (re-open with tgt to recover)",
                               rel, severity=WARNING))
        else:
            report.add(Finding("dataset.file_unlisted", "present but not in manifest", rel))


def read_table(root: Path, manifest: dict, name: str, report: Report) -> pa.Table | None:
    rel = manifest.get("tables", {}).get(name, {}).get("file", f"{name}.parquet")
    path = root / rel
    if not path.exists():
        report.add(Finding("dataset.table_missing", f"{name} table missing", rel))
        return None
    try:
        table = pq.read_table(path)
    except Exception as exc:
        report.add(Finding("structure.unreadable", f"unreadable parquet: {exc}", rel))
        return None
    expected_rows = manifest.get("tables", {}).get(name, {}).get("rows")
    if expected_rows is not None and table.num_rows != expected_rows:
        report.add(Finding("dataset.row_count_mismatch",
                           f"{table.num_rows} rows, manifest says {expected_rows}", rel))
    check_table_schema(table, name, rel, report)
    return table


def check_table_schema(table: pa.Table, name: str, rel: str, report: Report) -> None:
    """Column presence/types, non-null required columns, enums and uniqueness from the schema."""
    schema = load_schema(name)
    expected = arrow_schema(name)
    for field in expected:
        if field.name not in table.column_names:
            if not field.nullable:
                report.add(Finding("schema.column_missing", "required column missing", rel,
                                   key=field.name))
            continue
        column = table.column(field.name)
        if column.type != field.type and not pa.types.is_null(column.type):
            report.add(Finding("schema.column_type", f"type {column.type}, expected {field.type}",
                               rel, key=field.name))
            continue
        values = column.to_pylist()
        if not field.nullable:
            for i, v in enumerate(values):
                if v is None:
                    report.add(Finding("schema.null", "null in required column", rel,
                                       key=field.name, index=i))
                    break
        enum = schema["properties"][field.name].get("enum")
        if enum is not None:
            for i, v in enumerate(values):
                if v not in enum:
                    report.add(Finding("schema.enum", f"{v!r} not one of {enum}", rel,
                                       key=field.name, index=i))
                    break
    for extra in set(table.column_names) - set(expected.names):
        report.add(Finding("schema.column_unknown", "column not in schema", rel, key=extra,
                           severity=WARNING))
    unique = schema.get("x-unique", [])
    if unique and all(c in table.column_names for c in unique):
        seen: dict[tuple, int] = {}
        keys = zip(*(table.column(c).to_pylist() for c in unique), strict=True)
        for i, key in enumerate(keys):
            if key in seen:
                report.add(Finding("schema.duplicate_id",
                                   f"{dict(zip(unique, key, strict=True))} repeats row {seen[key]}",
                                   rel, key=",".join(unique), index=i))
            else:
                seen[key] = i
