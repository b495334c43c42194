"""Split assignment: whole groups per split, deterministic, stored splits respected."""

from __future__ import annotations

import polars as pl
import pytest

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import group_quotas
from tpugraphs_tools.publish import assign_splits, parse_ratios


def _graphs(programs: list[str], splits: list[str | None] | None = None) -> pl.DataFrame:
    n = len(programs)
    return pl.DataFrame({
        "graph_id": [f"g{i:03d}" for i in range(n)],
        "program": programs,
        "fingerprint": [f"{i:064x}" for i in range(n)],
        "split": splits or [None] * n,
    }, schema_overrides={"split": pl.String})


def test_parse_ratios_normalises_and_rejects_bad_text():
    assert parse_ratios("8,1,1") == pytest.approx((0.8, 0.1, 0.1))
    for bad in ("0.8,0.2", "a,b,c", "-1,1,1", "0,0,0"):
        with pytest.raises(ValueError, match="ratios"):
            parse_ratios(bad)


def test_quotas_give_every_nonzero_split_a_group_when_possible():
    assert group_quotas(5, (0.8, 0.1, 0.1)) == [3, 1, 1]
    assert group_quotas(100, (0.8, 0.1, 0.1)) == [80, 10, 10]
    assert group_quotas(2, (0.8, 0.1, 0.1)) == [2, 0, 0]
    assert group_quotas(4, (1.0, 0.0, 0.0)) == [4, 0, 0]
    assert sum(group_quotas(7, (0.5, 0.3, 0.2))) == 7


def test_no_program_in_two_splits_and_same_seed_same_answer():
    programs = [f"p{i % 12}" for i in range(40)]
    graphs = _graphs(programs)
    plan = assign_splits(graphs, seed=3)
    by_program: dict[str, set[str]] = {}
    for gid, program in zip(graphs["graph_id"], programs, strict=True):
        by_program.setdefault(program, set()).add(plan.splits[gid])
    assert all(len(s) == 1 for s in by_program.values())
    assert set(plan.splits.values()) == {"train", "valid", "test"}
    assert assign_splits(graphs, seed=3).splits == plan.splits
    assert any(assign_splits(graphs, seed=s).splits != plan.splits for s in range(4, 10))


def test_fingerprint_grouping_may_split_a_program():
    graphs = _graphs(["same"] * 30)
    assert len(set(assign_splits(graphs, by="program").splits.values())) == 1
    assert len(set(assign_splits(graphs, by="fingerprint").splits.values())) == 3


def test_stored_split_is_kept_and_its_group_follows():
    graphs = _graphs(["a", "a", "b", "c", "d", "e"], ["test", None, None, None, None, None])
    plan = assign_splits(graphs, seed=0)
    assert plan.splits["g000"] == "test" and plan.splits["g001"] == "test"
    assert not plan.conflicts


def test_conflicting_stored_splits_are_kept_and_reported():
    graphs = _graphs(["a", "a"], ["train", "valid"])
    plan = assign_splits(graphs)
    assert plan.splits == {"g000": "train", "g001": "valid"}
    assert "'a'" in plan.conflicts[0] and "train, valid" in plan.conflicts[0]


def test_unknown_stored_split_names_the_graph():
    with pytest.raises(DatasetError, match=r"g000.*'dev'"):
        assign_splits(_graphs(["a"], ["dev"]))
