"""Tile labels from the paired engine: CIs on every ok config, A/A control rows outside the npz,
normalizers from the default's in-window runtime, validated; ``--engine fixed`` still works; the
kernels of a program share their worker processes.

Small caps keep it fast (2 measurement processes, 2 loaded copies, 24 rounds); no timing
asserts (the machine is shared).
"""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main
from tpugraphs_tools.collect import TileOptions, collect_tile
from tpugraphs_tools.collect.graphs import write_graphs
from tpugraphs_tools.collect.tile.labels import kernel_arrays
from tpugraphs_tools.measure import SharedWorkers, traits_of
from tpugraphs_tools.measure.messages import SessionSpec
from tpugraphs_tools.measure.options import MeasureOptions
from tpugraphs_tools.measure.run_state import PipelineOptions, Session
from tpugraphs_tools.measure.sessions import stop_rule
from tpugraphs_tools.publish import compute_stats
from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

SMALL = {"max_rounds": 24, "loaded_copies": 2, "measure_processes": 2, "warmup": 1,
         "timeout": 60}
SMALL_FLAGS = ["--max-rounds", "24", "--loaded-copies", "2", "--measure-processes", "2",
               "--warmup", "1"]


@pytest.fixture(scope="module")
def resnet18():
    from tpugraphs_tools.hlo import from_compiled
    from tpugraphs_tools.programs import default_args, get_program, lower

    program = get_program("resnet18")
    args = default_args(program, "tiny")
    return from_compiled(lower(program, args).compile(), program.name), args


@pytest.fixture(scope="module")
def paired_ds(resnet18, tmp_path_factory):
    """Two kernels of resnet18 tiny, three measured configs each, paired engine."""
    src, args = resnet18
    opts = TileOptions(MeasureOptions(configs=3, max_kernels=2, **SMALL))
    result = collect_tile(src, program="resnet18", program_args=args.as_dict(),
                          parent_graph_id="resnet18.parent", opts=opts)
    root = tmp_path_factory.mktemp("paired") / "ds"
    dataset = Dataset.open(root, create=True)
    write_graphs(dataset, [g for g, _ in result.graphs],
                 configs={g.graph_id: rows for g, rows in result.graphs})
    return root, result


def test_paired_tile_rows_carry_cis_and_controls_stay_out_of_the_npz(paired_ds):
    root, result = paired_ds
    assert result.graphs
    dataset = Dataset.open(root)
    for collected, rows in result.graphs:
        ok = [r for r in rows if r["status"] == "ok"]
        controls = [r for r in rows if r["status"] == "control"]
        assert controls, "every kernel batch times an A/A control"
        assert min(r["config_index"] for r in controls) > max(r["config_index"] for r in ok)
        for r in controls:
            assert r["npz_row"] is None and not r["is_default"]
            assert r["relative_ci_low"] <= r["relative_to_default"] <= r["relative_ci_high"]
        default = next(r for r in ok if r["is_default"])
        assert (default["relative_to_default"], default["relative_ci_low"],
                default["relative_ci_high"], default["stop_reason"]) == (1.0, 1.0, 1.0,
                                                                         "reference")
        for r in ok:
            if r["is_default"]:
                continue
            assert 0 < r["relative_ci_low"] <= r["relative_to_default"] <= r["relative_ci_high"]
            assert r["rounds"] and r["stop_reason"] and r["runs_per_sample"] >= 1
            assert r["process_sd"] is not None and r["default_runtime_ns"] > 0
        arrays = dataset.load_arrays(collected.graph_id)
        runtime, norm = arrays["config_runtime"], arrays["config_runtime_normalizers"]
        assert runtime.dtype == norm.dtype == np.int64
        assert runtime.shape == norm.shape == (len(ok),) == (collected.row["num_configs"],)
        assert [r["npz_row"] for r in ok] == list(range(len(ok)))
        # normalizer = the default's runtime in the config's window; runtime = ratio × it
        assert norm.tolist() == [r["default_runtime_ns"] for r in ok]
        for r, t, n in zip(ok, runtime, norm, strict=True):
            assert abs(t / n - r["relative_to_default"]) <= 0.5 / n + 1e-12
    s = result.summary
    assert s.labels is not None and s.apart_from_default is not None
    assert s.labels.controls == sum(1 for _, rows in result.graphs for r in rows
                                    if r["status"] == "control")
    assert s.labels.noise_floor is not None and s.labels.noise_floor > 0
    per_kernel = sum(n * (n - 1) // 2 for n in (
        sum(1 for r in rows if r["status"] == "ok") for _, rows in result.graphs))
    assert s.labels.pairs == per_kernel  # pairs within a kernel only
    assert s.worker_restarts == 0
    report = validate_path(root)
    assert report.ok(), [f.to_json() for f in report.findings]  # a control miss: a warning
    # tgt report's figures: the noise floor and the pairs told apart, per kernel
    stats = compute_stats(dataset.graphs(), dataset.configs())
    assert stats.controls == s.labels.controls and stats.noise_floor is not None
    assert (stats.pairs, stats.pairs_separated) == (s.labels.pairs, s.labels.pairs_separated)


def test_a_corrupted_tile_ci_fails_validate_naming_column_and_row(paired_ds, tmp_path):
    import shutil

    from tests.validate.validate_helpers import edit_table, set_cell

    root = tmp_path / "ds"
    shutil.copytree(paired_ds[0], root)
    configs = Dataset.open(root).configs().with_row_index("row")
    target = configs.filter((pl.col("status") == "ok") & ~pl.col("is_default")).row(
        0, named=True)
    i = target["row"]
    # half the CI's own low bound: below it whatever width the CI has (a high set from the
    # ratio alone stays above a wide CI's low and trips the "outside its CI" check instead)
    edit_table(root, "configs", lambda t: set_cell(t, "relative_ci_high", i,
                                                   target["relative_ci_low"] * 0.5))
    # the JSON report: a rich table may fold a name at any terminal width CI gives it
    out = CliRunner().invoke(main, ["validate", str(root), "--json"])
    assert out.exit_code == 1, out.output
    cli_findings = json.loads(out.output)["findings"]
    assert any(f["check"] == "dataset.relative_ci_invalid" and f["key"] == "relative_ci_low"
               for f in cli_findings), cli_findings
    report = validate_path(root)
    (finding,) = [f for f in report.findings if f.check == "dataset.relative_ci_invalid"]
    assert finding.index == i and finding.key == "relative_ci_low"  # low above high

    edit_table(root, "configs", lambda t: set_cell(t, "relative_ci_high", i,
                                                   target["relative_ci_high"]))
    edit_table(root, "configs", lambda t: set_cell(t, "relative_to_default", i,
                                                   target["relative_ci_high"] * 2))
    report = validate_path(root)
    (finding,) = [f for f in report.findings if f.check == "dataset.relative_ci_invalid"]
    assert (finding.key, finding.index) == ("relative_to_default", i)


def test_fixed_engine_tile_collection_still_works(tmp_path):
    out = CliRunner().invoke(main, [
        "collect", "--collection", "tile", "--program", "resnet18", "--preset", "tiny",
        "--max-kernels", "2", "--configs", "2", "--engine", "fixed", "--fixed-rounds", "2",
        "--warmup", "0", "--out", str(tmp_path / "ds")])
    assert out.exit_code == 0, out.output
    assert "differing from default by > 3× CV" in out.output
    configs = Dataset.open(tmp_path / "ds").configs()
    assert configs.height and "control" not in set(configs["status"])
    assert configs["relative_ci_low"].is_null().all() and configs["stop_reason"].is_null().all()
    assert validate_path(tmp_path / "ds").findings == []


def test_kernel_arrays_from_paired_rows():
    """Synthetic paired rows: the default becomes the reference, controls never reach the npz."""
    def row(index, status, ratio=None, default_ns=None, is_default=False):
        half = 0.01 if ratio else None
        return {"config_index": index, "status": status, "is_default": is_default,
                "relative_to_default": ratio, "default_runtime_ns": default_ns,
                "relative_ci_low": ratio - half if ratio else None,
                "relative_ci_high": ratio + half if ratio else None,
                "rounds": 30 if ratio else None, "ci_t": 2.0 if ratio else None,
                "stop_reason": "precision" if ratio else None, "runtime_min_ns": 7,
                "runtime_median_ns": 8, "runtime_cv": 0.1, "repeats": 30,
                "window_sd": None, "npz_row": None, "duplicate_of": None}

    rows = [row(0, "ok", is_default=True), row(1, "ok", 1.25, 1000), row(2, "noop"),
            row(3, "ok", 0.8, 1010), row(4, "control", 1.001, 990)]
    rows[0]["runtime_min_ns"] = None
    out, arrays = kernel_arrays(rows, [np.zeros(24, np.float32)] * 3,  # type: ignore[arg-type]
                                traits_of("paired"))
    assert arrays["config_runtime_normalizers"].tolist() == [1000, 1000, 1010]
    assert arrays["config_runtime"].tolist() == [1000, 1250, 808]
    assert [r["npz_row"] for r in out] == [0, 1, None, 2, None]
    assert out[0]["stop_reason"] == "reference" and out[0]["relative_to_default"] == 1.0
    assert out[4]["status"] == "control" and out[4]["relative_to_default"] == 1.001
    assert math.isclose(out[1]["relative_to_default"], 1.25)


def _spec(text: str) -> SessionSpec:
    opts = MeasureOptions(**SMALL)
    return SessionSpec(base_text=text, backend="cpu", engine="paired", stop=stop_rule(opts),
                       processes=2, dedupe_on_code=True, return_optimized=True)


ADD = """HloModule add
ENTRY main {
  a = f32[64]{0} parameter(0)
  ROOT s = f32[64]{0} add(a, a)
}
"""
MUL = ADD.replace("add(a, a)", "multiply(a, a)").replace("HloModule add", "HloModule mul")


def test_shared_workers_switch_kernels_without_new_processes():
    pipeline = PipelineOptions(compile_workers=1, timing_batch=4, timeout_s=60,
                               isolation="pause")
    with SharedWorkers() as workers:
        first = workers.session(Session(_spec(ADD), pipeline))
        pids = sorted(m.pid for m in first.pool.measures if m)
        compilers = sorted(p.pid for p in first.pool.compilers)
        key = first.start().key
        second = workers.session(Session(_spec(MUL), pipeline))
        assert second is first and len(pids) == 2
        assert sorted(m.pid for m in second.pool.measures if m) == pids
        assert sorted(p.pid for p in second.pool.compilers) == compilers
        assert second.start().key != key
        broken = ADD.replace("add(a, a)", "add(a, b)")
        with pytest.raises(Exception, match="default"):
            workers.session(Session(_spec(broken), pipeline))
        again = workers.session(Session(_spec(ADD), pipeline))  # fresh workers after a failure
        assert again.start().key == key
