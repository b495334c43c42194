"""ConfigRow and GraphRow are configs.parquet's and graphs.parquet's schemas field for field,
and rows read back become typed rows."""

from __future__ import annotations

import math
import types
import typing
from pathlib import Path

import pytest
import typing_extensions

from tpugraphs_tools.collect.journal import ConfigJournal
from tpugraphs_tools.collect.rows import (
    STORED_GRAPH_REQUIRED,
    WORKING_KEYS,
    ConfigRow,
    GraphRow,
    config_row,
    graph_row_of,
    stored_row,
)
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.measure import Status, StopReason
from tpugraphs_tools.store import load_schema

_ARROW = {"string": str, "int64": int, "double": float, "bool": bool}
_WRAPPERS = (typing.NotRequired, typing_extensions.NotRequired, typing_extensions.ReadOnly)


def _fields(record: type = ConfigRow) -> dict[str, tuple[set[type], bool, bool]]:
    """field -> (its non-null types, nullable, may be absent)."""
    hints = typing.get_type_hints(record, include_extras=True,
                                  localns={"ReadOnly": typing_extensions.ReadOnly})
    out = {}
    for name, hint in hints.items():
        absent = False
        while typing.get_origin(hint) in _WRAPPERS:
            absent |= typing.get_origin(hint) in (typing.NotRequired,
                                                  typing_extensions.NotRequired)
            hint = typing.get_args(hint)[0]
        args = set(typing.get_args(hint)) if isinstance(hint, types.UnionType) else {hint}
        out[name] = (args - {type(None)}, type(None) in args, absent)
    return out


def test_every_schema_column_is_a_field_of_a_compatible_type_and_back():
    schema = load_schema("configs")
    required = set(schema["required"])
    fields = _fields()
    assert set(fields) - set(WORKING_KEYS) == set(schema["properties"])
    for name, prop in schema["properties"].items():
        kinds, nullable, absent = fields[name]
        assert len(kinds) == 1, name
        (kind,) = kinds
        assert issubclass(kind, _ARROW[prop["x-arrow"]]), name
        declared = prop.get("type", [])
        schema_nullable = "null" in declared or None in prop.get("enum", [])
        assert nullable == schema_nullable, name
        assert (name in required) == (not nullable), name
        if "enum" in prop:
            assert {m.value for m in kind} == set(prop["enum"]) - {None}, name  # type: ignore[attr-defined]
        assert absent == (name == "graph_id"), name  # the store fills graph_id in


def test_rows_read_back_are_complete_and_typed():
    row = config_row({"config_index": 3, "strategy": "random", "config": "{}",
                      "is_default": False, "status": "repeat", "stop_reason": "batch_done",
                      "ci_t": 2.1})
    assert row["status"] is Status.REPEAT and row["stop_reason"] is StopReason.BATCH_DONE
    assert row["window_sd"] is None and "graph_id" not in row
    assert set(stored_row(row)) == set(ConfigRow.__annotations__) - {"graph_id", "ci_t"}


@pytest.mark.parametrize(("values", "message"), [
    ({"config_index": 0, "strategy": "s", "config": "{}", "is_default": True,
      "status": "ok", "speed": 1}, "speed"),
    ({"config_index": 0, "strategy": "s", "is_default": True, "status": "ok"}, "config"),
    ({"config_index": 0, "strategy": "s", "config": "{}", "is_default": True,
      "status": "fast"}, "fast"),
])
def test_bad_rows_are_rejected_naming_what_is_wrong(values, message):
    with pytest.raises(DatasetError, match=message):
        config_row(values, where="journal line 2")


def test_the_journal_hands_back_typed_rows(tmp_path: Path):
    journal = ConfigJournal(tmp_path, "g", {"seed": 0})
    journal.append({"config_index": 1, "strategy": "random", "config": "{}",
                    "is_default": False, "status": Status.OK, "stop_reason": "precision"})
    (row,) = journal.load().values()
    assert row["status"] is Status.OK and row["stop_reason"] is StopReason.PRECISION
    assert row["npz_row"] is None


# Filled in after a collection builds the row: by the store, by ``tgt import`` (the split), or
# on tile graphs only.
_GRAPH_ABSENT = {"npz_file", "hlo_file", "created_at", "split", "parent_graph_id",
                 "parent_instruction"}


def test_every_graphs_schema_column_is_a_graph_row_field_of_a_compatible_type_and_back():
    schema = load_schema("graphs")
    required = set(schema["required"])
    fields = _fields(GraphRow)
    assert set(fields) == set(schema["properties"])
    assert set(STORED_GRAPH_REQUIRED) == required
    for name, prop in schema["properties"].items():
        kinds, nullable, absent = fields[name]
        assert len(kinds) == 1, name
        (kind,) = kinds
        assert issubclass(kind, _ARROW[prop["x-arrow"]]), name
        schema_nullable = "null" in prop.get("type", []) or None in prop.get("enum", [])
        assert nullable == schema_nullable, name
        assert (name in required) == (not nullable), name
        assert absent == (name in _GRAPH_ABSENT), name


def _stored_graph(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "graph_id": "p.000000000001", "collection": "layout", "program": "p",
        "program_args": "{}", "source": "jax", "source_path": None, "hlo_stage": "unoptimized",
        "fingerprint": "0" * 64, "backend": "cpu", "device_kind": "cpu", "config_space": None,
        "num_nodes": 3, "num_edges": 2, "num_configurable": 1, "num_configs": 0,
        "npz_file": "graphs/p.000000000001.npz", "hlo_file": None, "jax_version": None,
        "jaxlib_version": None, "xla_flags": None, "created_at": "2026-01-01T00:00:00Z",
        "parent_graph_id": None, "parent_instruction": None, "split": None}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not _DROP}


_DROP = object()


def test_a_stored_graph_row_reads_back_unchanged():
    values = _stored_graph()
    assert graph_row_of(values) == values


@pytest.mark.parametrize(("changes", "message"), [
    ({"nodes": 3}, "nodes"),
    ({"program": _DROP}, "program"),
    ({"npz_file": None}, "npz_file"),
])
def test_bad_graph_rows_are_rejected_naming_what_is_wrong(changes, message):
    with pytest.raises(DatasetError, match=f"graphs.parquet row 4: .*{message}"):
        graph_row_of(_stored_graph(**changes), where="graphs.parquet row 4")


def test_a_ci_that_bounds_nothing_is_stored_as_none():
    """Two rounds cut by the time budget give [0, inf]: validate rejects it as a label CI."""
    from tpugraphs_tools.collect.labels import _bounded

    assert _bounded(0.0, math.inf) == (None, None)
    assert _bounded(0.5, math.nan) == (None, None)
    assert _bounded(0.97, 1.02) == (0.97, 1.02)
    assert _bounded(None, None) == (None, None)
