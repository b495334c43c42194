"""The JSON Schemas in ``schemas/`` as the single definition of the dataset's tables.

Arrow schemas for writing and the column checks for validating both derive from the same files,
so a column added to a schema is written and validated without touching code twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa

_ARROW_TYPES = {"string": pa.string(), "int64": pa.int64(), "double": pa.float64(),
                "bool": pa.bool_()}


def schema_dir() -> Path:
    """``schemas/`` beside the package (source checkout) or bundled inside it (wheel)."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_schemas", here.parent / "schemas"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("tgt's schemas/ directory is missing from this installation")


@cache
def load_schema(name: str) -> dict[str, Any]:
    """``name`` is ``manifest``, ``graphs`` or ``configs``."""
    return json.loads((schema_dir() / f"{name}.schema.json").read_text())


def arrow_schema(table: str) -> pa.Schema:
    schema = load_schema(table)
    required = set(schema["required"])
    return pa.schema([
        pa.field(name, _ARROW_TYPES[prop["x-arrow"]], nullable=name not in required)
        for name, prop in schema["properties"].items()
    ])


def to_arrow_table(table: str, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Rows → Arrow table in schema column order; unknown keys are an error, missing are null."""
    schema = arrow_schema(table)
    known = set(schema.names)
    for i, row in enumerate(rows):
        extra = set(row) - known
        if extra:
            raise KeyError(f"{table} row {i}: columns not in schemas/{table}.schema.json: "
                           f"{sorted(extra)}")
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    return pa.Table.from_pydict(columns, schema=schema)
