"""ConfigRow is configs.parquet's schema field for field, and rows read back become ConfigRows."""

from __future__ import annotations

import types
import typing
from pathlib import Path

import pytest
import typing_extensions

from tpugraphs_tools.collect.journal import ConfigJournal
from tpugraphs_tools.collect.rows import WORKING_KEYS, ConfigRow, config_row, stored_row
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.measure import Status, StopReason
from tpugraphs_tools.store import load_schema

_ARROW = {"string": str, "int64": int, "double": float, "bool": bool}
_WRAPPERS = (typing.NotRequired, typing_extensions.NotRequired, typing_extensions.ReadOnly)


def _fields() -> dict[str, tuple[set[type], bool, bool]]:
    """field -> (its non-null types, nullable, may be absent)."""
    hints = typing.get_type_hints(ConfigRow, include_extras=True,
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
