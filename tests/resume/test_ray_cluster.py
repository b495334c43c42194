"""A three-node Ray cluster on this machine loses a worker node mid-collection.

A head (no CPUs: it only hosts the driver) and two worker nodes, each with its own
``ray start --block`` in a session of its own, collect a small plan through the CLI
(``tgt collect --plan --executor ray --address``). When worker ``b`` has run a task for 2 s,
every process of its session (raylet, Ray workers, tgt's measurement workers) is stopped and
SIGKILLed. The
collection must still finish; every graph and every config is stored once; the rows equal a
local run's in everything that is not a measurement; ``tgt validate`` is clean.

Slow (2-7 minutes on 2 busy cores: three Ray nodes, jax in every Ray worker, a local
reference run): ``pytest -m slow tests/resume/test_ray_cluster.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tpugraphs_tools.store import Dataset

pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray")

TASK_TITLE = "ray::measure_chunk"  # the proctitle of a Ray worker running a chunk
ITEMS = 8
# Tiny programs, the cheapest legal engine settings: each graph's chunk takes seconds.
PLAN = {"defaults": {"configs": 4, "warmup": 0, "seed": 3, "min_sample_ms": 1, "max_rounds": 3,
                     "loaded_copies": 1, "measure_processes": 1, "timing_batch": 4,
                     "max_seconds_per_config": 0.5, "isolation": "none"},
        "items": [{"program": "mlp", "preset": "tiny", "batch_size": b}
                  for b in range(1, ITEMS + 1)]}
# Columns that are measurements (timings and what is derived from them): they differ between
# any two runs, local or not. Every other column must be equal.
MEASURED = {"runtime_min_ns", "runtime_median_ns", "runtime_cv", "repeats",
            "default_runtime_ns", "relative_to_default", "relative_ci_low",
            "relative_ci_high", "rounds", "stop_reason", "window_sd", "process_sd",
            "runs_per_sample", "max_abs_error", "compile_seconds", "measure_seconds"}
GRAPH_MEASURED = {"created_at", "source_path"}  # when and under which --out it was written
TIMEOUT_S = 420


def _free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _session_members(sid: int) -> dict[int, str]:
    """pid → command line of every live process of session ``sid`` (from /proc). A node's
    raylet starts its Ray workers in process groups of their own, but in its session."""
    members = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == sid and fields[0] != "Z":  # session; zombies are already dead
            members[int(entry.name)] = cmdline
    return members


class LocalRayCluster:
    """Ray nodes started by ``ray start --block``, each in a session of its own (a node is
    killed by killing its session's processes), on free ports, under one temp dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.nodes: dict[str, subprocess.Popen[bytes]] = {}
        self.address = ""
        # Token authentication (Ray's default for new clusters) with a token of this cluster's
        # own, so that no token file of the user's is read or written.
        self.env = {**os.environ, "RAY_AUTH_MODE": "token",
                    "RAY_AUTH_TOKEN": secrets.token_hex(32)}

    def _start(self, name: str, args: list[str]) -> None:
        ports = _free_ports(9)
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115 - lives as long as the node
        command = [str(Path(sys.executable).with_name("ray")), "start", "--block",
                   "--node-ip-address=127.0.0.1", "--disable-usage-stats",
                   "--object-store-memory=100000000",
                   f"--node-manager-port={ports[0]}", f"--object-manager-port={ports[1]}",
                   f"--metrics-export-port={ports[2]}",
                   f"--dashboard-agent-listen-port={ports[3]}",
                   f"--dashboard-agent-grpc-port={ports[4]}",
                   f"--runtime-env-agent-port={ports[5]}",
                   "--worker-port-list=" + ",".join(map(str, _free_ports(6))), *args]
        self.nodes[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, cwd=self.root,
                                            env=self.env)
        self._wait_started(name)

    def _wait_started(self, name: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        log = self.root / f"{name}.log"
        while b"Ray runtime started" not in log.read_bytes():
            if self.nodes[name].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray node {name} did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)

    def start_head(self) -> None:
        port, dashboard = _free_ports(2)
        self._start("head", ["--head", f"--port={port}", f"--dashboard-port={dashboard}",
                             "--include-dashboard=false", "--num-cpus=0",
                             f"--temp-dir={self.root / 'ray'}"])
        self.address = f"127.0.0.1:{port}"

    def add_worker(self, name: str, cpus: int) -> None:
        self._start(name, [f"--address={self.address}", f"--num-cpus={cpus}",
                           f"--resources={json.dumps({f'node_{name}': 1})}"])

    def running_tasks(self, name: str) -> list[int]:
        """pids of node ``name``'s Ray workers that are running a chunk now."""
        members = _session_members(self.nodes[name].pid)
        return [pid for pid, cmd in members.items() if cmd.startswith(TASK_TITLE)]

    def kill(self, name: str, timeout: float = 30) -> None:
        """Stop, then SIGKILL, every process of node ``name`` (as a machine that loses power:
        none of them runs again, none sees another die first); wait until none is left."""
        process = self.nodes[name]
        deadline = time.monotonic() + timeout
        while members := _session_members(process.pid):
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pid in members:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
            process.poll()  # reap `ray start` itself
            if time.monotonic() > deadline:
                raise RuntimeError(f"ray node {name}: processes survive SIGKILL: {members}")
            time.sleep(0.2)
        process.wait(timeout=timeout)

    def close(self) -> None:
        for name in reversed(list(self.nodes)):
            self.kill(name)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalRayCluster]:
    # A short temp dir: Ray's socket paths must fit in 107 bytes.
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"tgt-ray-{os.getpid()}"
    root.mkdir(parents=True, exist_ok=True)
    nodes = LocalRayCluster(root)
    try:
        nodes.start_head()
        # 2 logical CPUs each: a chunk task asks for 2, so each worker node runs one at a time
        # and both hold a task from the start.
        nodes.add_worker("a", cpus=2)
        nodes.add_worker("b", cpus=2)
        yield nodes
    finally:
        nodes.close()
        # Keep the nodes' logs (Ray workers' stderr included) with the test's tmp_path.
        for log in [*root.glob("*.log"), *root.glob("ray/session_2*/logs")]:
            dest = tmp_path / "cluster-logs" / log.parent.name
            dest.mkdir(parents=True, exist_ok=True)
            shutil.move(str(log), dest / log.name)
        shutil.rmtree(root, ignore_errors=True)


def _tgt(*args: str, **kwargs) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tpugraphs_tools.cli", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **kwargs)


def _graph_rows(out: Path) -> pl.DataFrame:
    graphs = Dataset.open(out).graphs()
    return graphs.drop(*GRAPH_MEASURED).sort("graph_id")


def _config_rows(out: Path) -> pl.DataFrame:
    """Every config row that is not a control or a re-timing (their number follows how the
    work was batched), without its measurements."""
    configs = Dataset.open(out).configs()
    return (configs.filter(~pl.col("status").is_in(["control", "repeat"]))
            .drop(*MEASURED).sort("graph_id", "config_index"))


def _npz_arrays(out: Path, graph_id: str) -> dict[str, np.ndarray]:
    """A graph's arrays without its runtimes (features, edges, config features)."""
    path = Dataset.open(out).root / "graphs" / f"{graph_id}.npz"
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files if k != "config_runtime"}


def test_collection_survives_a_lost_worker_node(cluster: LocalRayCluster, tmp_path: Path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    local_out, ray_out = tmp_path / "local", tmp_path / "ray"

    local = _tgt("collect", "--plan", str(plan), "--out", str(local_out))
    local_log, _ = local.communicate(timeout=TIMEOUT_S)
    assert local.returncode == 0, local_log

    start = time.monotonic()
    driver = _tgt("collect", "--plan", str(plan), "--out", str(ray_out), "--executor", "ray",
                  "--address", cluster.address, env={**cluster.env, "COLUMNS": "200"})
    try:
        seen: dict[int, float] = {}  # task pid on node b -> when first seen running
        while True:  # kill b 2 s into a chunk it runs: jax imported, compiling or timing
            held = cluster.running_tasks("b")
            now = time.monotonic()
            seen = {pid: seen.get(pid, now) for pid in held}
            if any(now - first >= 2 for first in seen.values()):
                break
            assert driver.poll() is None, driver.communicate()[0]
            assert now - start < TIMEOUT_S, "no task ran on node b for 2 s"
            time.sleep(0.2)
        cluster.kill("b")
        killed_at = time.monotonic() - start
        log, _ = driver.communicate(timeout=TIMEOUT_S)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    wall = time.monotonic() - start
    losses = log.count("task lost (")
    print(f"ray collection: {wall:.1f} s, node b killed at {killed_at:.1f} s while it ran "
          f"{len(held)} task(s); {losses} chunk(s) lost and resubmitted\n{log}")
    assert driver.returncode == 0, log
    assert "resubmitted" in log  # the driver saw the lost chunk and sent it again

    # Every graph once, every config once, nothing left in progress.
    graphs = Dataset.open(ray_out).graphs()
    assert graphs["graph_id"].n_unique() == graphs.height == ITEMS
    configs = Dataset.open(ray_out).configs()
    assert configs.select("graph_id", "config_index").is_duplicated().sum() == 0
    assert not (ray_out / ".tgt-work").exists()

    # The same rows as the local run, measurements aside.
    assert _graph_rows(ray_out).equals(_graph_rows(local_out))
    assert _config_rows(ray_out).equals(_config_rows(local_out))
    for graph_id in graphs["graph_id"]:
        ours, theirs = _npz_arrays(ray_out, graph_id), _npz_arrays(local_out, graph_id)
        assert ours.keys() == theirs.keys()
        for key, value in ours.items():
            np.testing.assert_array_equal(value, theirs[key], err_msg=f"{graph_id}: {key}")

    check = _tgt("validate", str(ray_out))
    check_log, _ = check.communicate(timeout=TIMEOUT_S)
    assert check.returncode == 0, check_log
