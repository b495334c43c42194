"""GPU measurement settings, checked on CPU: shared device memory in every worker, isolation,
autotuning off for layout configs, tolerances that fit the precision."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tpugraphs_tools.hlo import parse_hlo_text
from tpugraphs_tools.measure import device_env as E
from tpugraphs_tools.measure.workers.processes import WorkerProcess

BF16 = """\
HloModule m, entry_computation_layout={(bf16[4,8]{1,0}, bf16[8,2]{1,0})->bf16[4,2]{1,0}}
ENTRY e {
  a = bf16[4,8]{1,0} parameter(0)
  b = bf16[8,2]{1,0} parameter(1)
  ROOT d = bf16[4,2]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
F32 = BF16.replace("bf16", "f32")
S32 = """\
HloModule m, entry_computation_layout={(s32[4]{0})->s32[4]{0}}
ENTRY e {
  a = s32[4]{0} parameter(0)
  ROOT n = s32[4]{0} negate(a)
}
"""


MEMORY_VARS = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
               "XLA_PYTHON_CLIENT_ALLOCATOR")


def worker_memory_env(conn: Any) -> None:
    """Worker body that sends back the memory variables it inherited."""
    conn.send({v: os.environ.get(v) for v in MEMORY_VARS})


@pytest.fixture
def clean_env(monkeypatch):
    for var in MEMORY_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_workers_inherit_on_demand_allocation(clean_env):
    worker = WorkerProcess(worker_memory_env)
    try:
        assert worker.conn.poll(60)
        seen = worker.conn.recv()
    finally:
        worker.kill()
    assert seen["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"


def test_users_memory_setting_wins(clean_env):
    clean_env.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", ".2")
    assert E.share_device_memory() == {}
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" not in os.environ


def test_gpu_pauses_compile_workers_and_turns_layout_autotuning_off():
    assert E.isolation_for("gpu", "auto") == "pause"
    assert E.isolation_for("cuda", "pin") == "pin"  # an explicit choice stands
    assert E.isolation_for("cpu", "auto") == "auto"
    assert E.layout_compile_options("gpu") == {"xla_gpu_autotune_level": 0}
    assert E.layout_compile_options("cpu") == {}


def test_tolerance_follows_precision_and_device():
    bf16, f32, s32 = (parse_hlo_text(t) for t in (BF16, F32, S32))
    assert E.default_rtol("cpu", f32) == 1e-3          # unchanged XLA:CPU behaviour
    assert E.default_rtol("gpu", f32) == 1e-2          # TF32 dots, split-k sums
    assert E.default_rtol("cpu", bf16) == 5e-2
    assert E.default_rtol("gpu", bf16) == 5e-2
    assert E.default_rtol("cpu", s32) == 1e-3
    assert E.resolve_rtol(0.25, "gpu", bf16) == 0.25   # explicit wins


def test_fresh_compiler_per_job_compiles_each_config_in_a_new_process():
    """XLA:GPU's autotune cache is per process: tile configs each get a new compile worker."""
    from tpugraphs_tools.measure.measurer import Measurer
    from tpugraphs_tools.measure.messages import Job, SessionSpec
    from tpugraphs_tools.measure.results import OK, ConfigResult
    from tpugraphs_tools.measure.run_state import PipelineOptions, Session

    spec = SessionSpec(base_text=F32, backend="cpu", fixed_rounds=2, warmup=1,
                       fresh_compiler_per_job=True)
    results: list[ConfigResult] = []
    with Measurer(Session(spec, PipelineOptions(isolation="none", timing_batch=1))) as m:
        m.start()
        first = m.pool.compilers[0].proc.pid
        known = {m.start().key: 0}
        jobs = [Job(i, F32, options={"xla_backend_optimization_level": i - 1}) for i in (1, 2)]
        m.run(jobs, known, results.append)
        second = m.pool.compilers[0].proc.pid
        assert second != first and m.pool.compilers[0].alive()
        m.run([Job(3, F32, options={"xla_backend_optimization_level": 2})], known,
              results.append)  # a later run() finds a live worker
        assert m.pool.compilers[0].proc.pid != second
        assert m.restarts == 0  # recycling is not a crash
    assert sorted(r.index for r in results if r.index is not None) == [1, 2, 3]
    assert all(r.status in (OK, "noop", "duplicate") for r in results)
