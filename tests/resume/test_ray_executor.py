"""A local Ray instance collects the same plan as the local executor: same graphs, same configs."""

from __future__ import annotations

import polars as pl
import pytest

from tpugraphs_tools.collect.plan import request_from_plan
from tpugraphs_tools.collect.run import collect
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
