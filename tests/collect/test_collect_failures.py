"""Modules the backend cannot run lose no graph: stored with typed failure rows, exit 3."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main
from tpugraphs_tools.collect.failures import DEFAULT_FAILED, EXIT_PARTIAL, failure_reason
from tpugraphs_tools.collect.run import CollectItem, CollectRequest, collect
from tpugraphs_tools.hlo import from_file
from tpugraphs_tools.measure.options import MeasureOptions
from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

_DOT = """\
  p0 = f32[8,16]{1,0} parameter(0)
  p1 = f32[16,8]{1,0} parameter(1)
  dot = f32[8,8]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
"""
CUSTOM_CALL = f"""HloModule custom

ENTRY main {{
{_DOT}  ROOT cc = f32[8,8]{{1,0}} custom-call(dot), custom_call_target="tgt_no_such_target"
}}
"""
SEND_RECV = f"""HloModule sendrecv

ENTRY main {{
{_DOT}  token0 = token[] after-all()
  send = (f32[8,8]{{1,0}}, u32[], token[]) send(dot, token0), channel_id=1, is_host_transfer=true
  send-done = token[] send-done(send), channel_id=1, is_host_transfer=true
  recv = (f32[8,8]{{1,0}}, u32[], token[]) recv(send-done), channel_id=2, is_host_transfer=true
  recv-done = (f32[8,8]{{1,0}}, token[]) recv-done(recv), channel_id=2, is_host_transfer=true
  ROOT r = f32[8,8]{{1,0}} get-tuple-element(recv-done), index=0
}}
"""
FAST = ["--configs", "3", "--fixed-rounds", "1", "--warmup", "0"]


def test_custom_call_module_is_stored_with_failure_rows_and_exit_partial(tmp_path: Path,
                                                                        write_file):
    path = write_file("custom.hlo", CUSTOM_CALL)
    out = tmp_path / "data"
    result = CliRunner().invoke(main, ["collect", "--hlo", str(path), "--out", str(out), *FAST])
    assert result.exit_code == EXIT_PARTIAL, result.output
    assert "Traceback" not in result.output and "WorkerError" not in result.output
    assert "custom-call tgt_no_such_target" in result.output
    ds = Dataset.open(out)
    [row] = ds.graphs().to_dicts()
    assert row["num_configs"] == 0 and row["num_nodes"] == 4
    assert (out / row["hlo_file"]).exists()
    assert ds.load_arrays(row["graph_id"])["node_feat"].shape == (4, 140)
    configs = ds.configs().sort("config_index")
    assert configs["status"].to_list() == [DEFAULT_FAILED] * 3
    assert configs["is_default"].to_list() == [True, False, False]
    assert all("tgt_no_such_target" in m for m in configs["error_message"].to_list())
    assert not validate_path(out).errors
    again = CliRunner().invoke(main, ["collect", "--hlo", str(path), "--out", str(out), *FAST])
    assert again.exit_code == EXIT_PARTIAL and "already complete" in again.output
    assert ds.configs().height == 3


def test_send_recv_beside_a_runnable_module(tmp_path: Path, write_file, tiny_hlo: str):
    options = MeasureOptions(configs=2, fixed_rounds=1, warmup=0)
    items = [CollectItem(hlo=str(write_file("sr.hlo", SEND_RECV)), options=options),
             CollectItem(hlo=str(write_file("tiny.hlo", tiny_hlo)), options=options)]
    summary = collect(CollectRequest(items=items, out=str(tmp_path / "d")))
    assert summary.partial and len(summary.unmeasured) == 1
    [reason] = summary.unmeasured.values()
    assert "send" in reason and "\n" not in reason
    configs = Dataset.open(tmp_path / "d").configs()
    by_status = dict(configs.group_by("status").len().iter_rows())
    assert by_status[DEFAULT_FAILED] == 2 and by_status.get("ok", 0) >= 1
    ok = configs.filter(pl.col("status") == "ok")
    assert ok["npz_row"].null_count() == 0


def test_failure_reason_is_one_line_naming_the_suspects(write_file):
    module = from_file(write_file("sr.hlo", SEND_RECV)).module
    reason = failure_reason("default config failed: JaxRuntimeError: UNIMPLEMENTED: no\n"
                            "  more detail", module, "cpu")
    assert reason == ("default config cannot be compiled or run on cpu: JaxRuntimeError: "
                      "UNIMPLEMENTED: no (module uses send, send-done, recv, recv-done)")


def test_failed_collect_leaves_no_out_folder(tmp_path: Path, write_file):
    bad = write_file("bad.hlo", "HloModule broken\n\nENTRY main {\n  nonsense\n}\n")
    out = tmp_path / "new" / "data"
    result = CliRunner().invoke(main, ["collect", "--hlo", str(bad), "--out", str(out)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert not (tmp_path / "new").exists()


def test_ray_chunk_of_an_unrunnable_module_returns_failure_rows():
    from tpugraphs_tools.collect.ray_executor import measure_chunk

    rows = measure_chunk(CUSTOM_CALL, MeasureOptions(configs=3, fixed_rounds=1, warmup=0), [1, 2])
    assert [r["config_index"] for r in rows] == [1, 2]
    assert {r["status"] for r in rows} == {DEFAULT_FAILED}
    assert not any(r["is_default"] for r in rows)


def test_a_graph_a_timeout_left_unmeasured_is_measured_by_a_rerun(tmp_path: Path, write_file,
                                                                  tiny_hlo: str):
    """A --timeout too short for the default is the user's limit, not the backend's failing:
    the reason says so, and a rerun with a workable --timeout measures the graph."""
    path = write_file("tiny.hlo", tiny_hlo)
    args = ["collect", "--hlo", str(path), "--out", str(tmp_path / "d"), *FAST]
    first = CliRunner().invoke(main, [*args, "--timeout", "0.001"])
    assert first.exit_code == EXIT_PARTIAL, first.output
    text = " ".join(first.output.split())
    assert "--timeout 0.001" in text and "on cpu" not in text
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert "already complete" not in again.output
    statuses = Dataset.open(tmp_path / "d").configs()["status"].to_list()
    assert DEFAULT_FAILED not in statuses and "ok" in statuses


@pytest.mark.slow
def test_a_backend_failure_is_retried_only_when_asked(tmp_path: Path, write_file):
    path = write_file("custom.hlo", CUSTOM_CALL)
    args = ["collect", "--hlo", str(path), "--out", str(tmp_path / "d"), *FAST]
    assert CliRunner().invoke(main, args).exit_code == EXIT_PARTIAL
    skipped = CliRunner().invoke(main, args)
    assert skipped.exit_code == EXIT_PARTIAL
    assert "already complete" in skipped.output and "--retry-unmeasured" in skipped.output
    retried = CliRunner().invoke(main, [*args, "--retry-unmeasured"])
    assert retried.exit_code == EXIT_PARTIAL, retried.output
    assert "already complete" not in retried.output  # measured again (and failed again)
    assert Dataset.open(tmp_path / "d").configs().height == 3  # rows replaced, not added
