"""The label-cost benchmark's counting (bench/_label_claims.py, bench/bench_label_cost.py) on
synthetic config rows: claims as `tgt collect` counts them, kept orders, the report table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from _label_claims import claimed_pairs, concordance, controls
from bench_label_cost import extra_flags, named_flags, report, schedule

from tpugraphs_tools.collect.labels import separated_pairs


def _row(graph: str, index: int, ratio: float, half: float | None, *, status: str = "ok",
         cv: float | None = None, stop: str | None = "target") -> dict:
    low, high = (None, None) if half is None else (ratio - half, ratio + half)
    return {"graph_id": graph, "config_index": index, "status": status,
            "is_default": index == 0 and status == "ok", "relative_to_default": ratio,
            "relative_ci_low": low, "relative_ci_high": high, "rounds": 10,
            "stop_reason": None if index == 0 else stop, "runtime_cv": cv}


def _paired(ratios: list[float], half: float, control: tuple[float, float]) -> list[dict]:
    """One graph: the default ([1, 1]), configs 1.. with ±half CIs, an A/A control row."""
    rows = [_row("g", 0, 1.0, 0.0)]
    rows += [_row("g", i, r, half) for i, r in enumerate(ratios, start=1)]
    rows.append(_row("g", 99, control[0], control[1], status="control"))
    return rows


FIRST = _paired([0.90, 0.95, 1.20, 1.21], 0.02, (1.0, 0.01))
RERUN = _paired([0.96, 0.94, 1.22, 1.19], 0.02, (1.05, 0.01))


def test_claims_are_disjoint_cis_counted_like_tgt_collect():
    ok = [r for r in FIRST if r["status"] == "ok"]
    pairs, claimed, kept = claimed_pairs(FIRST, RERUN, "ci")
    assert pairs == 10  # 5 ok labels, the default included
    assert claimed == separated_pairs([r["relative_ci_low"] for r in ok],
                                      [r["relative_ci_high"] for r in ok]) == 9
    # Claimed in run 1: 0.90 < 0.95 (disjoint at ±0.02), reversed in the rerun; every other
    # claim holds. 1.20 vs 1.21 overlap: not claimed, so its flip costs nothing.
    assert kept == 8


def test_pairs_never_cross_graphs_and_rows_without_ci_claim_nothing():
    other = [_row("h", 0, 1.0, 0.0), _row("h", 1, 0.5, 0.01)]
    pairs, claimed, kept = claimed_pairs(FIRST + other, RERUN + other, "ci")
    assert (pairs, claimed, kept) == (11, 10, 9)
    fixed = [_row("g", 0, 1.0, None, cv=0.01), _row("g", 1, 0.8, None, cv=0.01),
             _row("g", 2, 0.99, None, cv=0.01)]
    assert claimed_pairs(fixed, fixed, "ci") == (3, 0, 0)
    # The old rule, |Δ| > 2 × CV: 1 vs 0.8 and 0.99 vs 0.8 are claimed, 1 vs 0.99 is not.
    assert claimed_pairs(fixed, fixed, "cv") == (3, 2, 2)


def test_concordance_and_controls():
    assert concordance(FIRST, FIRST) == 1.0
    assert concordance(FIRST, RERUN) == pytest.approx((10 - 2 * 2) / 10)  # two flipped pairs
    assert controls(FIRST) == (1, 1)
    assert controls(RERUN) == (0, 1)  # 1.05 ± 0.01 misses 1.0


def test_schedule_interleaves_engines_forwards_then_backwards():
    got = schedule(["a"], ["paired", "fixed", "race"], 2)
    assert [(e, r) for p, _, e, r in got if p == 1] == [
        ("paired", 1), ("fixed", 1), ("race", 1), ("race", 2), ("fixed", 2), ("paired", 2)]
    assert len(got) == 12


def test_flag_options():
    assert named_flags(["race=--race"], "--variant") == {"race": "--race"}
    with pytest.raises(SystemExit):
        named_flags(["--race"], "--variant")
    assert extra_flags(["--configs 3", "tile=--max-kernels 2"], ["r", "tile"]) == {
        "r": "--configs 3", "tile": "--configs 3 --max-kernels 2"}


def _run(program: str, engine: str, pair: int, run: int, wall: float, rows: list[dict]) -> dict:
    return {"program": program, "engine": engine, "pair": pair, "run": run, "wall_s": wall,
            "load_before": [1.0, 1.0, 1.0], "load_after": [2.0, 1.0, 1.0], "rows": rows,
            "collection": f"--program {program}", "engine_flags": "" if engine == "paired"
            else "--engine fixed"}


def test_report_table_reads_each_engine_against_fixed_and_says_no_ci():
    fixed = [_row("g", 0, 1.0, None, cv=0.01, stop=None), _row("g", 1, 0.8, None, cv=0.01,
                                                               stop=None)]
    runs = [_run("resnet18", "paired", 1, 1, 30.0, FIRST), _run("resnet18", "fixed", 1, 1, 10.0, fixed),
            _run("resnet18", "fixed", 1, 2, 10.0, fixed), _run("resnet18", "paired", 1, 2, 50.0, RERUN),
            _run("tile", "paired", 1, 1, 6.0, fixed), _run("tile", "paired", 1, 2, 6.0, fixed)]
    text = report(runs)
    lines = {tuple(c.strip() for c in line.split("|")[1:3]): line
             for line in text.splitlines() if line.startswith("| ") and "---" not in line}
    paired = lines[("resnet18", "paired")]
    assert "| 40 (30–50) |" in paired and "| 4.00× |" in paired  # 80 s ÷ the fixed pair's 20 s
    assert "| 9/10 (90%) | 8/9 (89%) |" in paired and "| 1/2 (50%) |" in paired
    assert "| 7.5 |" in paired  # 10 ok labels in 80 s
    assert "target 8" in paired and "1.0→2.0" in paired
    assert "| no CI | no CI |" in lines[("resnet18", "fixed")]
    assert "| 1/1 kept of 1 |" in lines[("resnet18", "fixed")]  # its |Δ| > 2×CV claims
    assert "| no CI | no CI |" in lines[("tile", "paired")]
    assert "| - |" in lines[("tile", "paired")]  # no fixed runs: no ratio
    assert "| 1/1 kept of 1 |" in lines[("tile", "paired")]  # no CI: the old rule instead
    assert "`--program tile`" in text and "fixed `--engine fixed`" in text
