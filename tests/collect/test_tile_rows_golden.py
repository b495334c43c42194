"""The tile collect path writes the same config rows, npz config arrays and summary as recorded.

Like test_rows_golden.py for layout: a hand-written optimized module (two fusion kernels), a
fixed config space and fixed measurement results go through ``collect_tile`` with the measurer
replaced. ``data/tile_rows_golden.json`` was recorded from the code before the typed-rows
redesign (issue 26); record again (``python tests/collect/test_tile_rows_golden.py``) only for
a change meant to alter stored rows (2026-12-03: ``timing_cpus``, a null in every row; 2026-12-04:
``timer``, a null in every row, and the summary's ``not_as_requested``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tpugraphs_tools.collect.rows import stored_row
from tpugraphs_tools.collect.tile import program as collect_tile
from tpugraphs_tools.configs import KernelConfig
from tpugraphs_tools.configs.kernel_config import NUM_TILE_FEATURES
from tpugraphs_tools.hlo import HloSource, parse_hlo_text
from tpugraphs_tools.measure import MeasureOptions
from tpugraphs_tools.measure.messages import DefaultInfo
from tpugraphs_tools.measure.results import COMPILE_ERROR, DUPLICATE, NOOP, OK, ConfigResult, Timing
from tpugraphs_tools.store import to_arrow_table

GOLDEN = Path(__file__).parent / "data" / "tile_rows_golden.json"
HLO = """
HloModule kernels

fused_exp {
  p0 = f32[16,32]{1,0} parameter(0)
  ROOT e = f32[16,32]{1,0} exponential(p0)
}

fused_add {
  a = f32[16,32]{1,0} parameter(0)
  b = f32[16,32]{1,0} parameter(1)
  ROOT s = f32[16,32]{1,0} add(a, b)
}

ENTRY main {
  x = f32[16,32]{1,0} parameter(0)
  y = f32[16,32]{1,0} parameter(1)
  f = f32[16,32]{1,0} fusion(x), kind=kLoop, calls=fused_exp
  ROOT g = f32[16,32]{1,0} fusion(f, y), kind=kLoop, calls=fused_add
}
"""


class _Space:
    """Five fixed configs per kernel; features say which."""

    name = "golden-space"
    kernel_form = "inlined"
    fresh_compiler_per_config = False

    def configs(self, kernel: Any) -> list[KernelConfig]:
        return [KernelConfig(), *(KernelConfig.of(level=i) for i in range(1, 5))]

    def infeasible(self, kernel: Any, config: KernelConfig) -> str | None:
        return None

    def encode(self, config: KernelConfig) -> np.ndarray:
        feat = np.zeros(NUM_TILE_FEATURES, dtype=np.float32)
        feat[0] = dict(config.settings).get("level", 0)
        return feat

    def compile_options(self, config: KernelConfig) -> dict[str, Any]:
        return {}

    def apply(self, text: str, config: KernelConfig) -> str:
        return text

    def realized(self, optimized: Any, config: KernelConfig) -> Any:
        raise AssertionError("the fixed results carry no optimized text")


def _timed(index: int, ratio: float) -> ConfigResult:
    base = [900 + 11 * i for i in range(5)]
    return ConfigResult(index, OK, compile_seconds=0.1 * index, key=f"k{index}",
                        realized={"copies": index, "fingerprint": f"fp{index}"},
                        max_abs_error=1e-7 * index, timing=Timing.of([round(ratio * b)
                                                                      for b in base]),
                        default_timing=Timing.of(base), measure_seconds=0.3)


class _Measurer:
    restarts = 0

    def __init__(self, *_args: Any) -> None:
        self.results = {1: _timed(1, 0.7), 2: ConfigResult(2, NOOP, duplicate_of=0, key="k0"),
                        3: _timed(3, 1.2),
                        4: ConfigResult(4, COMPILE_ERROR, error="tile rejected")}

    def __enter__(self) -> _Measurer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def start(self) -> DefaultInfo:
        return DefaultInfo(compile_seconds=0.05, realized={"copies": 0, "fingerprint": "fp0"},
                           key="k0", timing=Timing.of([900 + 11 * i for i in range(5)]))

    def run(self, jobs: Any, known: dict[str, int], on_result: Any, stop: Any = None,
            context: Any = None) -> None:
        for job in jobs:
            on_result(self.results.get(job.index) or ConfigResult(
                job.index, DUPLICATE, duplicate_of=1, key="k1"))


class _Workers:
    """Stands in for the shared worker processes: every kernel gets the fixed results."""

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def __enter__(self) -> _Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def session(self, *_args: Any) -> _Measurer:
        return _Measurer()


def fingerprint() -> dict[str, Any]:
    """The rows of the fixed engine (``--engine fixed``), as recorded before the paired engine
    timed tile kernels (tests/tile/test_tile_paired.py checks what paired rows hold)."""
    module = parse_hlo_text(HLO, source="golden")
    source = HloSource(module, HLO, None, "hlo-text", "optimized", "golden.hlo")
    original = collect_tile.SharedWorkers
    collect_tile.SharedWorkers = _Workers  # type: ignore[assignment,misc]
    try:
        result = collect_tile.collect_tile(
            source, program="golden", program_args={"file": "golden.hlo"},
            parent_graph_id="golden.parent",
            opts=collect_tile.TileOptions(MeasureOptions(configs=8, backend="cpu",
                                                         engine="fixed"),
                                          space=_Space()))  # type: ignore[arg-type]
    finally:
        collect_tile.SharedWorkers = original  # type: ignore[misc]
    out: dict[str, Any] = {"graphs": [], "summary": json.loads(json.dumps(
        result.summary.to_json(), sort_keys=True))}
    for graph, rows in result.graphs:
        table = to_arrow_table("configs", [{**stored_row(r), "graph_id": graph.graph_id}
                                           for r in rows])
        out["graphs"].append({
            "graph_id": graph.graph_id, "rows": json.loads(json.dumps(table.to_pylist())),
            "arrays": {k: [str(v.dtype), list(v.shape), hashlib.sha256(v.tobytes()).hexdigest()]
                       for k, v in sorted(graph.config_arrays.items())}})
    return out


def test_tile_collect_writes_the_recorded_rows_arrays_and_summary():
    expected = json.loads(GOLDEN.read_text())
    got = fingerprint()
    assert len(got["graphs"]) == len(expected["graphs"]) == 2
    for want, graph in zip(expected["graphs"], got["graphs"], strict=True):
        assert graph["graph_id"] == want["graph_id"]
        for i, (w, row) in enumerate(zip(want["rows"], graph["rows"], strict=True)):
            for key in sorted(set(w) | set(row)):
                assert row.get(key, "<absent>") == w.get(key, "<absent>"), (
                    f"{want['graph_id']} row {i} column {key!r} changed")
        assert graph["arrays"] == want["arrays"]
    assert got["summary"] == expected["summary"]


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(fingerprint(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}", file=sys.stderr)
