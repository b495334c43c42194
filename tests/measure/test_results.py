"""Statuses and stop reasons are enums whose values are exactly what configs.parquet stores."""

from __future__ import annotations

import json
import pickle

import pytest

from tpugraphs_tools.measure import ConfigResult, Status, StopReason
from tpugraphs_tools.measure.stats import rounds as paired
from tpugraphs_tools.store import load_schema


def _schema_enum(column: str) -> set[str | None]:
    return set(load_schema("configs")["properties"][column]["enum"])


def test_the_enums_hold_the_schemas_values_and_nothing_else():
    assert {s.value for s in Status} == _schema_enum("status")
    assert {r.value for r in StopReason} | {None} == _schema_enum("stop_reason")
    engine_reasons = {paired.PRECISION, paired.SEPARATED, paired.MAX_ROUNDS,
                      paired.MAX_SECONDS, paired.BATCH_DONE, paired.PLACEMENT_FLOOR,
                      paired.BUDGET}
    assert engine_reasons <= {r.value for r in StopReason}


def test_members_are_stored_and_compared_as_their_values():
    assert Status.OK == "ok" and json.dumps([Status.REPEAT]) == '["repeat"]'
    assert str(StopReason.REFERENCE) == "reference"
    assert pickle.loads(pickle.dumps(Status.CRASH)) is Status.CRASH  # sent between processes


def test_a_result_always_holds_a_status_member():
    assert ConfigResult(3, "timeout").status is Status.TIMEOUT
    with pytest.raises(ValueError):
        ConfigResult(3, "exploded")


def test_a_result_is_built_once_and_survives_the_pipe_between_processes():
    import dataclasses

    result = ConfigResult(3, "ok", rounds=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.rounds = 5  # type: ignore[misc]
    timed = dataclasses.replace(result, status="repeat")
    assert timed.status is Status.REPEAT and result.status is Status.OK
    assert pickle.loads(pickle.dumps(timed)) == timed
