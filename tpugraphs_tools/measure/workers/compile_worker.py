"""The compile worker: compile configs, read the optimized HLO back, serialize the executable.

It exits quietly when the parent goes away (pipe closed or PR_SET_PDEATHSIG), never leaving a
collection's CPU time to an orphan.
"""

from __future__ import annotations

import time
from typing import Any

from tpugraphs_tools import _xla_compat as X
from tpugraphs_tools.compiler import compile_and_read, entry_signature
from tpugraphs_tools.hlo import parse_hlo_text
from tpugraphs_tools.measure.messages import Compiled, Job, SessionSpec
from tpugraphs_tools.measure.results import COMPILE_ERROR, ConfigResult
from tpugraphs_tools.measure.workers.faults import error_message, inject, injected_faults
from tpugraphs_tools.measure.workers.processes import die_with_parent, pin


def compile_main(conn: Any, spec: SessionSpec, cpus: set[int] | None) -> None:
    """Compile jobs, read back the optimized HLO, serialize the executable."""
    die_with_parent()
    pin(cpus)
    import jax

    signature = entry_signature(parse_hlo_text(spec.base_text, source="default config"))
    device = jax.devices(spec.backend)[0]
    faults = injected_faults()
    while True:
        try:
            job: Job | SessionSpec | None = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        if isinstance(job, SessionSpec):  # the next graph of a collection (measure/measurer.py)
            spec = job
            signature = entry_signature(parse_hlo_text(spec.base_text, source="default config"))
            device = jax.devices(spec.backend)[0]
            continue
        options = spec.options if job.options is None else job.options
        try:
            start = time.perf_counter()
            if faults.get(job.index) != "crash_run":
                inject(faults.get(job.index))
            exe, realized, key, optimized_text = compile_and_read(
                job.text, signature, options, backend=spec.backend,
                dedupe_on_code=spec.dedupe_on_code, slots=job.slots)
            conn.send(("compiled", Compiled(
                job.index, time.perf_counter() - start, realized, key,
                X.serialize_executable(exe, device),
                optimized_text if spec.return_optimized else None)))
        except Exception as exc:
            conn.send(("result", ConfigResult(job.index, COMPILE_ERROR,
                                              error=error_message(exc))))
        if spec.fresh_compiler_per_job:
            return  # the parent starts a fresh worker for the next job
