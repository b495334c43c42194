"""Worker processes kept across the graphs of one collection (the tile collection's kernels).

Why: a tile collection measures dozens of small kernels, each with its own default config. A
fresh :class:`PipelinedMeasurer` per kernel starts ``SessionSpec.processes`` measurement
workers and the compile workers again, each importing jax and initialising a backend (seconds
per process, on every kernel). :class:`SharedWorkers` starts them once and hands the live
workers the next kernel's :class:`SessionSpec` instead: a measurement worker compiles and
checks the new default and builds a fresh engine (``workers.measure_main``), a compile worker
switches to the new base text and options (``workers.compile_main``). Nothing of one kernel's
timing state survives into the next: the repeat pool and the between-process spread are per
graph, and each engine calibrates its own samples. A compile worker that exits after each
job (``fresh_compiler_per_job``) still does.
"""

from __future__ import annotations

from tpugraphs_tools.errors import WorkerError
from tpugraphs_tools.measure.messages import SessionSpec
from tpugraphs_tools.measure.pipeline import PipelinedMeasurer
from tpugraphs_tools.measure.run_state import PipelineOptions, RepeatPool
from tpugraphs_tools.measure.stats.replicas import ProcessSpread


class ReusableMeasurer(PipelinedMeasurer):
    """A :class:`PipelinedMeasurer` whose workers can move on to another graph."""

    def switch(self, spec: SessionSpec) -> None:
        """Give the live workers the graph of ``spec`` and reset the per-graph state.

        Every live measurement worker is sent the spec and awaited before any failure is
        raised, so no "ready" message is left in a pipe for the next graph to misread; a
        worker that failed leaves its slot empty (``start()`` spawns a fresh one)."""
        self.spec = spec
        self.default_info = None
        self.repeats = RepeatPool(self.traits.repeats_per_batch)
        self.spread = ProcessSpread()
        self.batches = 0
        self._phase = 0
        self._holding.clear()   # a worker drops a held batch on a new spec (measure_main)
        self._timing, self._wave_paused = [], None
        self._wave.clear()
        for slot, proc in enumerate(self._compilers):
            try:
                proc.conn.send(spec)
            except OSError:  # exited (e.g. after its one job): a fresh one gets ``spec``
                self._replace_compiler(slot, restart=False)
        sent = []
        for slot, measure in enumerate(self._measures):
            if measure is None:
                continue
            try:
                measure.conn.send(spec)
                sent.append(slot)
            except OSError:
                measure.kill()
                self._measures[slot] = None
        errors = []
        for slot in sent:
            try:
                self._await_measure(slot)
            except WorkerError as exc:
                dead = self._measures[slot]
                if dead is not None:
                    dead.kill()
                self._measures[slot] = None
                errors.append(exc)
        if errors:
            raise errors[0]


class SharedWorkers:
    """One set of worker processes for several graphs measured one after the other
    (``reuse`` False: fresh workers per graph, as a :class:`PipelinedMeasurer` of its own)."""

    def __init__(self, reuse: bool = True) -> None:
        self.reuse = reuse
        self._measurer: ReusableMeasurer | None = None
        self._pipeline: PipelineOptions | None = None

    def session(self, spec: SessionSpec, pipeline: PipelineOptions) -> PipelinedMeasurer:
        """A measurer for ``spec``'s graph, its workers started (or switched) and its default
        ready. Raises WorkerError when the default cannot be compiled or run; the workers are
        then closed, and the next graph starts fresh ones."""
        measurer = self._measurer
        try:
            if (measurer is None or not self.reuse or pipeline != self._pipeline
                    or not _compatible(measurer.spec, spec)):
                self.close()
                measurer = self._measurer = ReusableMeasurer(spec, pipeline)
                self._pipeline = pipeline
            else:
                measurer.switch(spec)
            measurer.start()
        except WorkerError:
            self.close()
            raise
        return measurer

    def close(self, now: bool = False) -> None:
        """Stop the workers (``now``: killed at once, WorkerSlots.close)."""
        if self._measurer is not None:
            self._measurer.close(now)
            self._measurer = None

    def __enter__(self) -> SharedWorkers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_exc: object) -> None:
        self.close(now=kind is not None)


def _compatible(old: SessionSpec, new: SessionSpec) -> bool:
    """Workers switch graphs only within one engine, process count, backend and compile-worker
    lifetime."""
    return ((old.engine, old.processes, old.backend, old.fresh_compiler_per_job)
            == (new.engine, new.processes, new.backend, new.fresh_compiler_per_job))
