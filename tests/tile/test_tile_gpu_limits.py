"""Tiles a GPU cannot run are never compiled: the feasibility rules against the recorded H200
tile outcomes, where the limits come from, and the ``infeasible`` row a collection writes."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tpugraphs_tools.collect.tile import program as collect_tile
from tpugraphs_tools.collect.tile.summary import summarize
from tpugraphs_tools.configs import NUM_TILE_FEATURES, KernelConfig
from tpugraphs_tools.configs import tile_gpu_limits as L
from tpugraphs_tools.configs.tile_gpu import TritonGemmTiles, gemm_operand_bytes, tile
from tpugraphs_tools.hlo import HloSource, parse_hlo_text
from tpugraphs_tools.measure import OK, ConfigResult, MeasureOptions, Timing, traits_of
from tpugraphs_tools.measure.messages import DefaultInfo
from tpugraphs_tools.store import ConfigCounts

OUTCOMES = json.loads((Path(__file__).parent / "data" / "gpu_h200" / "tile_outcomes.json")
                      .read_text())
H200 = L.RECORDED["NVIDIA H200"]


def _recorded() -> list[tuple[str, Any, KernelConfig, str]]:
    """(graph id, kernel module, tile, status on the H200) of every recorded config."""
    out = []
    for kernel in OUTCOMES["kernels"]:
        module = parse_hlo_text(kernel["hlo"], source=kernel["graph_id"])
        for bm, bn, bk, sk, stages, warps, status in kernel["configs"]:
            out.append((kernel["graph_id"], module, tile(bm, bn, bk, sk, stages, warps),
                        status))
    return out


def test_filter_rejects_the_recorded_h200_failures_and_keeps_every_tile_that_compiled():
    space = TritonGemmTiles(split_k=True, limits=H200)
    rejected, kept_errors, compiled = [], [], 0
    for gid, module, config, status in _recorded():
        why = space.infeasible(module, config)
        if status in ("ok", "duplicate"):
            compiled += 1
            assert why is None, f"{gid} {config.as_dict()} compiled on the H200: {why}"
        elif why is not None:
            rejected.append((gid, config.as_dict(), why))
        else:
            kept_errors.append(config.as_dict())
    assert compiled == 81  # 77 ok + 4 duplicate rows
    assert len(rejected) == 8  # the 8 that asked for more than a thread or a block has
    assert sum("registers" in why for *_, why in rejected) == 8
    assert sum("shared memory" in why for *_, why in rejected) == 0  # registers are read first
    # the 9th compile_error is not a resource failure (it asked split_k 2): still compiled
    assert kept_errors == [{"block_k": 64, "block_m": 32, "block_n": 256, "num_ctas": 1,
                            "num_stages": 1, "num_warps": 2, "split_k": 2}]


def test_shared_memory_rule_uses_the_operand_types_and_stages():
    _, module, *_ = _recorded()[-1]
    assert gemm_operand_bytes(module) == (2, 2)  # bf16 × bf16
    space = TritonGemmTiles(split_k=False, limits=H200)
    # 256x256x128 bf16 at 4 stages (recorded as a failure): 512 KiB > 227 KiB, at 8 warps the
    # accumulator (256 a thread) is still over too, so try 64x256x128 at 8 warps: 4 stages of
    # (64·128 + 128·256)·2 B = 320 KiB
    why = space.infeasible(module, tile(64, 256, 128, None, 4, 8))
    assert why is not None and "320 KiB of shared memory, over 227 KiB" in why
    assert space.infeasible(module, tile(64, 256, 128, None, 2, 8)) is None  # 160 KiB fits
    assert space.infeasible(module, KernelConfig()) is None  # XLA's own choice: never judged
    assert L.infeasible_reason({"block_m": 64, "block_n": 256, "block_k": 128,
                                "num_stages": 2, "num_warps": 8}, 4, 4, H200) is not None


def test_limits_come_from_the_device_else_the_recorded_table(monkeypatch):
    monkeypatch.setattr(L, "read_device_limits", lambda ordinal=0: None)
    assert L.device_limits("NVIDIA H200") is H200
    assert L.device_limits("NVIDIA Some Future GPU") is L.DEFAULT  # unknown: H100/H200 figures
    read = L.DeviceLimits(shared_memory_per_block=100 * 1024, source="device: sm_89")
    monkeypatch.setattr(L, "read_device_limits", lambda ordinal=0: read)
    assert L.device_limits("NVIDIA H200") is read
    assert TritonGemmTiles(split_k=False).limits is read  # read on first use


def _space() -> Any:
    """A tile space of three tiles per kernel, the second over the device's limits."""
    def level(config: KernelConfig) -> int:
        return int(config.as_dict().get("level", 0))

    return SimpleNamespace(
        name="fake-gpu", kernel_form="inlined", fresh_compiler_per_config=False,
        configs=lambda kernel: [KernelConfig(), *(KernelConfig.of(level=i) for i in (1, 2, 3))],
        infeasible=lambda kernel, c: "infeasible: over the limit" if level(c) == 2 else None,
        encode=lambda c: np.full(NUM_TILE_FEATURES, level(c), dtype=np.float32),
        compile_options=lambda c: {}, apply=lambda text, c: text, realized=None)


class _Workers:
    """Shared workers (and their session) that time every job they are sent and remember
    which."""

    restarts = 0

    def __init__(self) -> None:
        self.compiled: list[int] = []

    def session(self, *_args: Any) -> _Workers:
        return self

    def start(self) -> DefaultInfo:
        return DefaultInfo(compile_seconds=0.1, realized={"fingerprint": "fp0"}, key="k0",
                           timing=Timing.of([1000, 1010, 1020]))

    def run(self, jobs: Any, known: dict[str, int], on_result: Any, stop: Any = None,
            context: Any = None) -> None:
        for job in jobs:
            self.compiled.append(job.index)
            on_result(ConfigResult(job.index, OK, key=f"k{job.index}",
                                   realized={"fingerprint": f"fp{job.index}"},
                                   timing=Timing.of([900, 910, 920]),
                                   default_timing=Timing.of([1000, 1010, 1020])))


def test_an_infeasible_tile_gets_a_row_and_is_never_compiled(monkeypatch):
    hlo = OUTCOMES["kernels"][0]["hlo"]
    source = HloSource(parse_hlo_text(hlo), hlo, None, "hlo-text", "optimized", "k.hlo")
    workers = _Workers()
    monkeypatch.setattr(collect_tile, "SharedWorkers", lambda **_kw: nullcontext(workers))
    result = collect_tile.collect_tile(
        source, program="k", program_args={}, parent_graph_id=None,
        opts=collect_tile.TileOptions(MeasureOptions(configs=8, backend="cpu", engine="fixed"),
                                      space=_space()))
    [(graph, rows)] = result.graphs
    by_status = {r["config_index"]: str(r["status"]) for r in rows}
    assert by_status == {0: "ok", 1: "ok", 2: "infeasible", 3: "ok"}
    assert 2 not in workers.compiled and {1, 3} <= set(workers.compiled)
    row = next(r for r in rows if r["status"] == "infeasible")
    assert row["error_message"] == "infeasible: over the limit" and row["npz_row"] is None
    assert graph.config_arrays["config_runtime"].shape == (3,)
    summary = summarize([(graph.row, rows)], {}, "fake-gpu", traits_of("fixed"))
    assert summary.infeasible == 1 and summary.configs == 3 and summary.configs_stored == 3
    assert summary.status.get("compile_error", 0) == 0  # counted apart
    assert summary.counts == ConfigCounts(configs=3, labels=3, infeasible=1)
    assert summary.counts.describe() == "3 configs (3 labels) + 1 infeasible"


@pytest.mark.parametrize("statuses, words", [
    ({"ok": 2, "infeasible": 3, "control": 1}, "2 configs (2 labels) + 1 control row + 3 "
                                                "infeasible"),
    ({"ok": 1}, "1 config (1 label)")])
def test_counts_keep_infeasible_rows_apart(statuses, words):
    counts = ConfigCounts.of_statuses(statuses)
    assert counts.describe() == words
    assert counts.rows == sum(statuses.values())
