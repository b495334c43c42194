"""Where measurement processes run: lanes side by side, a block pinned to CPUs."""

from __future__ import annotations

import os

import pytest

from tpugraphs_tools.measure.workers import processes


def test_lanes_need_pause_isolation_and_a_cpu_each(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "available_cpus", lambda: [0, 1])
    assert processes.lanes_for(2, 4, "pause") == 2
    assert processes.lanes_for(4, 4, "pause") == 2    # one CPU per lane
    assert processes.lanes_for(2, 1, "pause") == 1    # one process
    assert processes.lanes_for(2, 4, "pin") == 1      # pin keeps the other CPUs compiling
    assert processes.lanes_for(1, 4, "pause") == 1


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux CPU affinity")
def test_pinned_runs_the_block_on_the_cpus_and_goes_back() -> None:
    before = os.sched_getaffinity(0)
    cpu = min(before)
    with processes.pinned({cpu}):
        assert os.sched_getaffinity(0) == {cpu}
    assert os.sched_getaffinity(0) == before
    with processes.pinned(None):
        assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux CPU affinity")
def test_pinned_moves_the_threads_already_running() -> None:
    """XLA's CPU client runs a program on its pool threads: pinning only the calling thread
    left them free to run on every CPU."""
    import threading

    before = os.sched_getaffinity(0)
    started, release = threading.Event(), threading.Event()
    tid: list[int] = []

    def pool_thread() -> None:
        tid.append(threading.get_native_id())
        started.set()
        release.wait(10)

    worker = threading.Thread(target=pool_thread)
    worker.start()
    try:
        started.wait(10)
        cpu = min(before)
        with processes.pinned({cpu}):
            assert os.sched_getaffinity(tid[0]) == {cpu}
        assert os.sched_getaffinity(tid[0]) == before
    finally:
        release.set()
        worker.join()


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux CPU affinity")
def test_pinned_reaches_the_threads_xla_runs_programs_on() -> None:
    """The threads XLA's CPU client started before the block (where it runs programs) are on
    the pinned CPU inside it: the fix ``--timing-lanes`` needed, checked on real XLA threads."""
    import jax
    import jax.numpy as jnp

    step = jax.jit(lambda a: (a @ a).sum())
    step(jnp.ones((128, 128))).block_until_ready()   # XLA's pool threads exist now
    cpu = min(os.sched_getaffinity(0))
    threads = [int(t) for t in os.listdir("/proc/self/task")]
    assert len(threads) > 1
    with processes.pinned({cpu}):
        step(jnp.ones((128, 128))).block_until_ready()
        masks = {}
        for tid in threads:
            try:
                masks[tid] = os.sched_getaffinity(tid)
            except OSError:   # a thread that ended meanwhile
                continue
        assert masks and all(m == {cpu} for m in masks.values()), masks


def test_the_forkserver_preloads_the_worker_mains() -> None:
    """A stale name in PRELOAD is silent (the forkserver skips what it cannot import) and
    costs every worker its own jax import (0.6 s -> 9 s for four workers): the names must be
    the modules the mains live in."""
    import importlib

    from tpugraphs_tools.measure.measurer import WORKER_MAINS

    for name in processes.PRELOAD:
        importlib.import_module(name)
    mains = {WORKER_MAINS.measure.__module__, WORKER_MAINS.compile.__module__}
    assert mains <= set(processes.PRELOAD)


def test_workers_import_what_tgt_runs_not_the_working_directory(tmp_path) -> None:
    """The forkserver starts as ``python -c``, whose import path begins with its working
    directory: run from a folder holding a ``numpy.py`` (or another tgt checkout), workers
    imported that and died, while ``tgt`` itself (a console script) did not."""
    import subprocess
    import sys
    from pathlib import Path

    tgt = Path(sys.executable).with_name("tgt")
    assert tgt.exists(), f"{tgt}: the test venv installs tgt's console script"
    (tmp_path / "numpy.py").write_text(
        'raise ImportError("numpy.py of the working directory imported")\n')
    (tmp_path / "dot.hlo").write_text(
        "HloModule dot\nENTRY main {\n  a = f32[64,64]{1,0} parameter(0)\n"
        "  b = f32[64,64]{1,0} parameter(1)\n"
        "  ROOT d = f32[64,64]{1,0} dot(a, b), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    run = subprocess.run(
        [str(tgt), "collect", "--hlo", "dot.hlo", "--out", "data", "--configs", "2",
         "--warmup", "0", "--min-sample-ms", "1", "--max-rounds", "8",
         "--measure-processes", "1", "--loaded-copies", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    from tpugraphs_tools.store import Dataset

    statuses = Dataset.open(tmp_path / "data").configs()["status"].to_list()
    assert statuses and set(statuses) <= {"ok", "control", "repeat"}, statuses
