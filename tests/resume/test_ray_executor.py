"""A local Ray instance collects the same plan as the local executor: same graphs, same configs;
a task lost with its worker is resubmitted and its configs stored once."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from tpugraphs_tools.collect.plan import request_from_plan
from tpugraphs_tools.collect.run import collect
from tpugraphs_tools.errors import CollectError
from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

ray = pytest.importorskip("ray")

HLO = """
HloModule small
ENTRY main {
  x = f32[8,64]{1,0} parameter(0)
  w = f32[64,32]{1,0} parameter(1)
  d = f32[8,32]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[8,4,8]{2,1,0} reshape(d)
}
"""


def _plan(hlo: str, out: str) -> dict:
    return {"out": out, "defaults": {"configs": 4, "warmup": 0, "seed": 3,
                                     "min_sample_ms": 1, "max_rounds": 8},
            "items": [{"hlo": hlo}]}


def _keys(out) -> tuple[list[str], pl.DataFrame]:
    graphs = sorted(Dataset.open(out).graphs()["graph_id"].to_list())
    configs = Dataset.open(out).configs()
    assert configs.filter(pl.col("status") == "control").height >= 1  # one per batch
    configs = configs.filter(~pl.col("status").is_in(["control", "repeat"])).select(
        "graph_id", "config_index")
    return graphs, configs.sort("graph_id", "config_index")


def test_ray_matches_local_executor(tmp_path):
    from tpugraphs_tools.collect.executors.ray_executor import collect_with_ray

    hlo = tmp_path / "small.hlo"
    hlo.write_text(HLO)
    local_out, ray_out = tmp_path / "local", tmp_path / "ray"
    collect(request_from_plan(_plan(str(hlo), str(local_out))))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        collect_with_ray(request_from_plan(_plan(str(hlo), str(ray_out))), chunk_size=2,
                         num_cpus=1)
    finally:
        ray.shutdown()
    assert _keys(local_out)[0] == _keys(ray_out)[0]
    assert _keys(local_out)[1].equals(_keys(ray_out)[1])
    assert validate_path(ray_out).ok()


def _crashing_task(marker: Path, crashes: int):
    """A chunk task whose worker process dies (as on a lost node) the first ``crashes`` times
    it runs, counted in ``marker``; then it measures like the real one."""
    from tpugraphs_tools.collect.executors.ray_executor import measure_chunk

    def task(text, opts, indices):
        runs = len(marker.read_text()) if marker.exists() else 0
        marker.write_text("x" * (runs + 1))
        if runs < crashes:
            os._exit(1)
        return measure_chunk(text, opts, indices)

    return ray.remote(num_cpus=1, max_retries=0)(task)


@pytest.fixture
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_lost_task_is_resubmitted_and_stored_once(tmp_path, local_ray):
    from tpugraphs_tools.collect.executors.ray_executor import _collect

    hlo = tmp_path / "small.hlo"
    hlo.write_text(HLO)
    local_out, ray_out = tmp_path / "local", tmp_path / "ray"
    collect(request_from_plan(_plan(str(hlo), str(local_out))))
    messages: list[str] = []
    _collect(local_ray, _crashing_task(tmp_path / "runs", crashes=1),
             request_from_plan(_plan(str(hlo), str(ray_out))), chunk_size=2, max_attempts=3,
             progress=messages.append, started_here=False)
    lost = [m for m in messages if "task lost (WorkerCrashedError" in m]
    assert len(lost) == 1 and "resubmitted, attempt 2 of 3" in lost[0], messages
    configs = Dataset.open(ray_out).configs()
    assert configs.select("graph_id", "config_index").is_duplicated().sum() == 0
    assert _keys(local_out)[1].equals(_keys(ray_out)[1])  # every config once, none lost
    assert not (ray_out / ".tgt-work").exists()
    assert validate_path(ray_out).ok()


def test_task_lost_every_time_stops_with_a_clear_error(tmp_path, local_ray):
    from tpugraphs_tools.collect.executors.ray_executor import _collect

    hlo = tmp_path / "small.hlo"
    hlo.write_text(HLO)
    out = tmp_path / "ray"
    with pytest.raises(CollectError, match=r"configs 0-3: lost 2 times, giving up"):
        _collect(local_ray, _crashing_task(tmp_path / "runs", crashes=99),
                 request_from_plan(_plan(str(hlo), str(out))), chunk_size=4, max_attempts=2,
                 progress=lambda _m: None, started_here=False)
    assert (tmp_path / "runs").read_text() == "xx"  # submitted exactly max_attempts times
    assert not (out / "graphs").exists() or not any((out / "graphs").iterdir())
