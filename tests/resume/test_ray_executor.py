"""A local Ray instance collects the same plan as the local executor: same graphs, same configs;
a task lost with its worker is resubmitted and its configs stored once."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from tests.hlo_samples import DOT_RESHAPE_HLO
from tpugraphs_tools.collect.plan import request_from_plan
from tpugraphs_tools.collect.run import collect
from tpugraphs_tools.errors import CollectError
from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

ray = pytest.importorskip("ray")



def _plan(hlo: str, out: str) -> dict:
    return {"out": out, "defaults": {"configs": 4, "warmup": 0, "seed": 3,
                                     "min_sample_ms": 1, "max_rounds": 8, "loaded_copies": 1,
                                     "measure_processes": 1, "isolation": "none"},
            "items": [{"hlo": hlo}]}


def _keys(out) -> tuple[list[str], pl.DataFrame]:
    graphs = sorted(Dataset.open(out).graphs()["graph_id"].to_list())
    configs = Dataset.open(out).configs()
    assert configs.filter(pl.col("status") == "control").height >= 1  # one per batch
    configs = configs.filter(~pl.col("status").is_in(["control", "repeat"])).select(
        "graph_id", "config_index")
    return graphs, configs.sort("graph_id", "config_index")


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for the module (its workers are reused across tests); no token
    authentication, so that nothing is written to the user's ~/.ray."""
    saved = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        if saved is None:
            del os.environ["RAY_AUTH_MODE"]
        else:
            os.environ["RAY_AUTH_MODE"] = saved


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, Path]:
    """The HLO file, and the dataset the local executor collects from it."""
    root = tmp_path_factory.mktemp("reference")
    hlo = root / "small.hlo"
    hlo.write_text(DOT_RESHAPE_HLO)
    collect(request_from_plan(_plan(str(hlo), str(root / "local"))))
    return hlo, root / "local"


def test_ray_matches_local_executor(tmp_path, local_ray, reference):
    from tpugraphs_tools.collect.ray_executor import collect_with_ray

    hlo, local_out = reference
    ray_out = tmp_path / "ray"
    summary = collect_with_ray(request_from_plan(_plan(str(hlo), str(ray_out))),
                               chunk_size=2, num_cpus=1)
    ok = Dataset.open(ray_out).configs().filter(pl.col("status") == "ok").height
    assert summary.labels == ok > 0 and summary.labels_per_minute is not None
    assert _keys(local_out)[0] == _keys(ray_out)[0]
    assert _keys(local_out)[1].equals(_keys(ray_out)[1])
    assert validate_path(ray_out).ok()


def _crashing_task(marker: Path, crashes: int):
    """A chunk task whose worker process dies (as on a lost node) in the first ``crashes``
    runs of it; then it measures like the real one. Runs are numbered by creating
    ``marker.<n>`` exclusively, so concurrent tasks never take the same number."""

    def task(text, opts, indices):
        run = 0
        while True:
            try:
                os.close(os.open(f"{marker}.{run}", os.O_CREAT | os.O_EXCL))
                break
            except FileExistsError:
                run += 1
        if run < crashes:
            os._exit(1)
        from tpugraphs_tools.collect.ray_executor import measure_chunk

        return measure_chunk(text, opts, indices)

    return ray.remote(num_cpus=1, max_retries=0)(task)


def test_lost_task_is_resubmitted_and_stored_once(tmp_path, local_ray, reference):
    from tpugraphs_tools.collect.ray_executor import _collect

    hlo, local_out = reference
    ray_out = tmp_path / "ray"
    messages: list[str] = []
    _collect(local_ray, _crashing_task(tmp_path / "run", crashes=1),
             request_from_plan(_plan(str(hlo), str(ray_out))), chunk_size=4, max_attempts=3,
             progress=lambda _m: None, notice=messages.append)
    lost = [m for m in messages if "task lost (WorkerCrashedError" in m]
    assert len(lost) == 1 and "resubmitted, attempt 2 of 3" in lost[0], messages
    assert len(list(tmp_path.glob("run.*"))) == 2  # the one chunk, submitted twice
    configs = Dataset.open(ray_out).configs()
    assert configs.select("graph_id", "config_index").is_duplicated().sum() == 0
    assert _keys(local_out)[1].equals(_keys(ray_out)[1])  # every config once, none lost
    assert not (ray_out / ".tgt-work").exists()
    assert validate_path(ray_out).ok()


def test_task_lost_every_time_stops_with_a_clear_error(tmp_path, local_ray, reference):
    from tpugraphs_tools.collect.ray_executor import _collect

    hlo, _ = reference
    out = tmp_path / "ray"
    with pytest.raises(CollectError, match=r"configs 0-3: lost 2 times, giving up"):
        _collect(local_ray, _crashing_task(tmp_path / "run", crashes=99),
                 request_from_plan(_plan(str(hlo), str(out))), chunk_size=4, max_attempts=2,
                 progress=lambda _m: None, notice=lambda _m: None)
    assert len(list(tmp_path.glob("run.*"))) == 2  # submitted exactly max_attempts times
    assert not (out / "graphs").exists() or not any((out / "graphs").iterdir())


def test_ray_executor_collects_tile_items_kernel_by_kernel(tmp_path, local_ray, reference):
    """A tile item under --executor ray is a tile collection (not a layout one), committed
    per kernel; the same request again measures nothing."""
    from tpugraphs_tools.collect.ray_executor import collect_with_ray

    hlo, _ = reference
    out = tmp_path / "tiles"
    plan = _plan(str(hlo), str(out))
    plan["items"] = [{"hlo": str(hlo), "collection": "tile"}]
    plan["defaults"]["configs"] = 3
    summary = collect_with_ray(request_from_plan(plan), num_cpus=1)
    graphs = Dataset.open(out).graphs()
    assert graphs.height >= 1 and set(graphs["collection"].to_list()) == {"tile"}
    assert summary.tiles and summary.labels > 0
    assert not (out / ".tgt-work").exists()
    assert validate_path(out).ok()
    again = collect_with_ray(request_from_plan(plan), num_cpus=1)
    assert again.labels == 0 and sorted(again.skipped) == sorted(graphs["graph_id"].to_list())
