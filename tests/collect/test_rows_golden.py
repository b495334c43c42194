"""The collect path writes the same config rows, npz config arrays and summary as recorded.

Fixed measurement results (every status, labels from one process and from four, a repeat and an
A/A control) go through ``collect_layout_configs`` with the measurer replaced, then through
what the store writes (``to_arrow_table`` of the configs schema). ``data/rows_golden.json`` was
recorded from the code before the typed-rows redesign (issue 26), so this proves that redesign
changed no stored value. Record again (``python tests/collect/test_rows_golden.py``) only for a
change meant to alter stored rows, with the diff checked by hand (2026-12-03: the configs
column ``timing_cpus`` added a null to every row; the fixed results carry no affinity;
2026-12-04: ``timer``, a null in every row, the fixed results name no timer).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from tpugraphs_tools.collect import layout as collect_layout
from tpugraphs_tools.collect.rows import stored_row
from tpugraphs_tools.configs import generate_configs, layout_space
from tpugraphs_tools.hlo import parse_hlo_text
from tpugraphs_tools.measure import MeasureOptions
from tpugraphs_tools.measure.messages import DefaultInfo
from tpugraphs_tools.measure.results import (
    COMPILE_ERROR,
    CONTROL,
    DUPLICATE,
    NOOP,
    OK,
    REPEAT,
    RUNTIME_ERROR,
    ConfigResult,
    Timing,
)
from tpugraphs_tools.store import to_arrow_table

GOLDEN = Path(__file__).parent / "data" / "rows_golden.json"
HLO = """
HloModule small
ENTRY main {
  x = f32[8,64]{1,0} parameter(0)
  w = f32[64,32]{1,0} parameter(1)
  d = f32[8,32]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[32,8]{1,0} transpose(d), dimensions={1,0}
  ROOT r = f32[32,2,4]{2,1,0} reshape(t)
}
"""


def _realized(fp: str, honoured: bool | None = True) -> dict[str, Any]:
    return {"copies": 2, "fingerprint": fp,
            "slots": [{"node": 2, "slot": 0, "wanted": [0, 1], "realized": [0, 1],
                       "found": [[0, 1]], "honoured": honoured, "node_layout": [0, 1]}]}


def _label(index: int, ratio: float, se: float, t: float, rounds: int, **fields: Any
           ) -> ConfigResult:
    samples = [1000 + 7 * i for i in range(6)]
    return ConfigResult(
        index, fields.pop("status", OK), compile_seconds=0.25 + index / 8,
        realized=_realized(f"fp{index}"), key=f"k{index}", max_abs_error=1e-6 * index,
        timing=Timing.of([round(ratio * s) for s in samples]),
        default_timing=Timing.of(samples), relative_to_default=ratio,
        relative_ci_low=ratio * math.exp(-t * se), relative_ci_high=ratio * math.exp(t * se),
        rounds=rounds, log_center=math.log(ratio), log_se=se, runs_per_sample=3,
        timed_seconds=0.5, measure_seconds=0.75, **fields)


def _results() -> list[ConfigResult]:
    return [
        _label(1, 0.8, 0.004, 2.03, 40, stop_reason="precision", df=23),
        _label(2, 1.3, 0.006, 2.57, 160, stop_reason="max_rounds", processes=4,
               process_sd=0.011),
        ConfigResult(3, DUPLICATE, compile_seconds=0.5, realized=_realized("fp1"), key="k1",
                     duplicate_of=1),
        ConfigResult(4, NOOP, compile_seconds=0.5, realized=_realized("fp0", None), key="k0",
                     duplicate_of=0),
        ConfigResult(5, COMPILE_ERROR, error="layout rejected: slot 0"),
        ConfigResult(6, RUNTIME_ERROR, compile_seconds=0.4, realized=_realized("fp6", False),
                     key="k6", error="device ran out of memory"),
        _label(7, 0.95, 0.005, 2.1, 30, stop_reason="separated", df=17),
        _label(1, 0.83, 0.004, 2.03, 40, status=REPEAT, stop_reason="batch_done",
               repeat_of=1, df=23),
        _label(7, 0.97, 0.005, 2.1, 30, status=REPEAT, stop_reason="batch_done",
               repeat_of=7, df=17),
        dataclasses.replace(_label(0, 1.004, 0.003, 2.0, 50, stop_reason="batch_done",
                                   df=29), index=None, status=CONTROL, realized=None),
    ]


class _Measurer:
    """Hands ``collect_layout_configs`` the fixed results instead of measuring."""

    restarts = 1

    def __init__(self, *_args: Any) -> None:
        self.results = _results()

    def __enter__(self) -> _Measurer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def start(self) -> DefaultInfo:
        return DefaultInfo(compile_seconds=0.125, realized=_realized("fp0"), key="k0")

    def run(self, jobs: Any, known: dict[str, int], on_result: Any, context: Any = None,
            on_progress: Any = None) -> None:
        indices = {job.index for job in jobs}
        for result in self.results:
            if result.index in indices or result.status in (REPEAT, CONTROL):
                on_result(result)

    def run_control(self, on_result: Any) -> None:
        raise AssertionError("every batch timed the default: no control run is needed")


def fingerprint() -> dict[str, Any]:
    module = parse_hlo_text(HLO, source="golden")
    space = layout_space(module)
    configs = generate_configs(space, 8, "random", 0)
    assert len(configs) == 8
    original = collect_layout.Measurer
    collect_layout.Measurer = _Measurer  # type: ignore[assignment,misc]
    try:
        result = collect_layout.collect_layout_configs(
            HLO, module, MeasureOptions(configs=8, strategy="random", backend="cpu"),
            configs=configs)
    finally:
        collect_layout.Measurer = original  # type: ignore[misc]
    table = to_arrow_table("configs", [{**stored_row(r), "graph_id": "golden"}
                                       for r in result.rows])
    return {
        "rows": json.loads(json.dumps(table.to_pylist())),
        "arrays": {k: [str(v.dtype), list(v.shape), hashlib.sha256(v.tobytes()).hexdigest()]
                   for k, v in sorted(result.arrays.items())},
        "summary": json.loads(json.dumps(result.summary.to_json(), sort_keys=True)),
    }


def test_collect_writes_the_recorded_rows_arrays_and_summary():
    expected = json.loads(GOLDEN.read_text())
    got = fingerprint()
    for i, (want, row) in enumerate(zip(expected["rows"], got["rows"], strict=True)):
        for key in sorted(set(want) | set(row)):
            assert row.get(key, "<absent>") == want.get(key, "<absent>"), (
                f"row {i} column {key!r} changed")
    assert got["arrays"] == expected["arrays"]
    assert got["summary"] == expected["summary"]


def test_the_golden_holds_every_status_and_both_label_kinds():
    """The fixture must keep covering what it is meant to (not a test of the code)."""
    rows = json.loads(GOLDEN.read_text())["rows"]
    assert {r["status"] for r in rows} == {OK, NOOP, DUPLICATE, COMPILE_ERROR, RUNTIME_ERROR,
                                          REPEAT, CONTROL}
    assert any(r["process_sd"] is not None for r in rows)
    assert any(r["window_sd"] for r in rows)
    with pytest.raises(KeyError):
        to_arrow_table("configs", [{"ci_t": 1.0}])  # working keys never reach the store


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(fingerprint(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}", file=sys.stderr)
