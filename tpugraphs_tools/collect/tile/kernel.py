"""One kernel's configs measured: the default first, then the space's candidates, until
``configs_per_kernel`` are ok.

Apart from ``program.py`` (which walks a module's kernels, builds their graphs and hands them to
a store) because this is the per-kernel loop: which configs are tried (single settings, then
combinations without a setting that was a no-op alone), how each result becomes a config row
(``labels.py``) with its realized tile and its effect against the default, and how rows an
interrupted run journaled are taken back instead of measured again. Each kernel is measured by
a measurer (``measure/measurer.py``) with the engine ``--engine`` names, each
candidate timed with the default in the same window.

No-ops: the engine dedupes on (optimized HLO fingerprint, hash of the generated machine code),
so a config whose options change neither is ``noop`` and never timed, whatever its options say.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tpugraphs_tools.collect.labels import finished_cis
from tpugraphs_tools.collect.rows import ConfigRow
from tpugraphs_tools.collect.tile.labels import tile_row
from tpugraphs_tools.collect.tile.options import TileOptions
from tpugraphs_tools.compiler import code_key
from tpugraphs_tools.configs import KernelConfig, KernelConfigSpace
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.hlo import Kernel, compilable_text, parse_hlo_text
from tpugraphs_tools.measure import (
    COMPILE_ERROR,
    CONTROL,
    INFEASIBLE,
    NOOP,
    OK,
    REPEAT,
    ConfigResult,
    Job,
    Measurer,
    SharedWorkers,
    Timing,
    kernel_session,
    platform_of,
    traits_of,
)

Progress = Callable[[str], None]


# A control/repeat row is journaled as it is timed, before the kernel's last config index is
# known: at an index of its own from here on, renumbered to follow the configs when stored.
EXTRA_BASE = 1 << 20


@dataclass
class KernelRun:
    """One kernel's rows as measured (the ok rows' config features beside them), for
    ``program.py`` to build the kernel's graph from."""

    rows: list[ConfigRow] = field(default_factory=list)
    feats: list[np.ndarray] = field(default_factory=list)
    restarts: int = 0
    extras: list[ConfigRow] = field(default_factory=list)  # control/repeat rows, paired


def _measure_text(kernel: Kernel, space: KernelConfigSpace) -> str:
    if space.kernel_form == "wrapped":
        if kernel.wrapped_text is None:
            raise ConfigError(f"{space.name} configures fusions; {kernel.name} is a "
                              f"{kernel.opcode}")
        return compilable_text(parse_hlo_text(kernel.wrapped_text, source=kernel.name))
    return kernel.measure_text


def _effect(cand: Timing, ref: Timing) -> dict[str, float]:
    """Relative runtime and its distance from 1 in units of the noisier side's CV."""
    rel = cand.min_ns / ref.min_ns
    cv = max(cand.cv, ref.cv)
    return {"relative_to_default": rel, "default_cv": ref.cv,
            "effect_cv": abs(rel - 1) / cv if cv > 0 else float("inf")}


def _realize(space: KernelConfigSpace, config: KernelConfig, text: str | None
             ) -> tuple[KernelConfig, dict[str, Any]]:
    if text is None:
        return config, {}
    realized, facts = space.realized(parse_hlo_text(text, source="optimized kernel"), config)
    if realized != config:
        facts = {**facts, "realized_config": json.loads(realized.to_json())}
    return realized, facts


def _resumed_config(space: KernelConfigSpace, config: KernelConfig, row: ConfigRow
                    ) -> KernelConfig:
    """The config a journaled ok row's features encode: the tile that ran, as stored."""
    facts = json.loads(row["realized"] or "{}")
    real = facts.get("realized_config")
    return KernelConfig.from_json(real) if real is not None else config


def measure_kernel(kernel: Kernel, space: KernelConfigSpace, opts: TileOptions,
                   configs: list[KernelConfig], progress: Progress = lambda _m: None,
                   on_row: Callable[[ConfigRow], None] = lambda _r: None,
                   workers: SharedWorkers | None = None,
                   done: Sequence[ConfigRow] = ()) -> KernelRun:
    """Default + candidates of one kernel until ``configs_per_kernel`` are measured ok
    (:class:`KernelMeasurement`). ``workers``: processes shared with the program's other
    kernels (None: this kernel's own, closed at the end). ``done``: rows an interrupted run
    journaled (control/repeat rows at their journal-only indices, :data:`EXTRA_BASE` on): kept,
    never measured again."""
    if workers is None:
        with SharedWorkers(reuse=False) as own:
            return measure_kernel(kernel, space, opts, configs, progress, on_row, own, done)
    return KernelMeasurement(kernel, space, opts, configs, workers, progress, on_row,
                             done).run()


class KernelMeasurement:
    """One kernel's configs measured, the default first.

    A candidate the space calls infeasible on this device (``space.infeasible``: a tile over
    the GPU's registers or shared memory) gets an ``infeasible`` row saying why and is never
    compiled; it does not count against ``max_attempts``. Single-setting configs go first;
    combinations follow in a second pass that skips any combination containing a setting that
    was a no-op on its own. Which configs are tried is decided on compile results only (no-ops,
    duplicates and errors are settled before timing), so with one compile worker a resumed
    kernel tries the configs an uninterrupted one does. The measurer is asked for only when
    something is to be measured: a kernel whose rows were all journaled starts no worker.
    """

    def __init__(self, kernel: Kernel, space: KernelConfigSpace, opts: TileOptions,
                 configs: list[KernelConfig], workers: SharedWorkers, progress: Progress,
                 on_row: Callable[[ConfigRow], None], done: Sequence[ConfigRow]) -> None:
        self.kernel = kernel
        self.space = space
        self.opts = opts
        self.configs = configs
        self.workers = workers
        self.progress = progress
        self.on_row = on_row
        self.text = _measure_text(kernel, space)
        self.platform = platform_of(opts.measure.backend)
        self.traits = traits_of(opts.measure.engine)
        self.max_attempts = opts.max_attempts or 3 * opts.configs_per_kernel
        self.by_index: dict[int, KernelConfig] = {}   # config index -> config tried
        self.noop_settings: set[Any] = set()          # settings that alone changed nothing
        self.rows: dict[int, ConfigRow] = {}
        self.feats: dict[int, np.ndarray] = {}        # ok rows' config encodings
        self.extras = [r for r in done if r["status"] in (CONTROL, REPEAT)]
        self.resumed = {r["config_index"]: r for r in done
                        if r["status"] not in (CONTROL, REPEAT)}
        self.known: dict[str, int] = {}  # dedupe key -> config index (default: 0)
        self.measurer: Measurer | None = None
        self.restarts = 0

    def run(self) -> KernelRun:
        """The default, then the single-setting configs, then the combinations."""
        self.by_index[0] = self.configs[0]
        self._resume(0)
        if 0 not in self.rows:
            self._session()
        candidates = self.configs[1:]
        self._pass([c for c in candidates if len(c.settings) == 1])
        self._pass([c for c in candidates if len(c.settings) > 1])
        if self.measurer is not None:
            self.restarts += self.measurer.restarts
        return self._result()

    def _session(self) -> Measurer:
        """The measurer, started on this kernel's default the first time it is asked for (its
        row recorded unless an earlier run journaled it)."""
        if self.measurer is None:
            default = self.configs[0]
            self.measurer = self.workers.session(kernel_session(
                self.opts.measure, self.space.apply(self.text, default), self.kernel.module,
                self.platform, compile_options=self.space.compile_options(default),
                fresh_compiler_per_job=self.space.fresh_compiler_per_config))
            self.restarts = -self.measurer.restarts
            info = self.measurer.start()
            self.known[info.key] = 0
            if 0 not in self.rows:
                self._record(ConfigResult(0, OK, timing=info.timing,
                                          default_timing=info.timing, realized=info.realized,
                                          compile_seconds=info.compile_seconds,
                                          max_abs_error=0.0,
                                          optimized_text=info.optimized_text))
        return self.measurer

    def _pass(self, configs: list[KernelConfig]) -> None:
        """Try ``configs`` in order until ``max_attempts``; measure what needs measuring."""
        jobs = self._jobs(configs)
        if jobs and not self._enough():
            self._session().run(jobs, self.known, self._record, stop=self._enough,
                                context=lambda: finished_cis(self.rows.values()))
        else:
            for job in jobs:  # never compiled: not part of the data
                self.by_index.pop(job.index)

    def _jobs(self, configs: list[KernelConfig]) -> list[Job]:
        """Index each config tried; a journaled one is kept, an infeasible or unappliable one
        is recorded at once, the rest become compile jobs."""
        jobs = []
        for config in configs:
            if self._attempts() >= self.max_attempts:
                break
            if len(config.settings) > 1 and self.noop_settings & set(config.settings):
                continue  # a combination with a setting that alone changed nothing
            index = len(self.by_index)
            self.by_index[index] = config
            if self._resume(index):
                continue
            if (why := self.space.infeasible(self.kernel.module, config)) is not None:
                self._record(ConfigResult(index, INFEASIBLE, error=why))  # never compiled
                continue
            try:
                jobs.append(Job(index, self.space.apply(self.text, config),
                                options=self.space.compile_options(config)))
            except ConfigError as exc:
                self._record(ConfigResult(index, COMPILE_ERROR, error=str(exc)))
        return jobs

    def _record(self, result: ConfigResult) -> None:
        """A measurement result as the config's row (journaled at once through ``on_row``)."""
        if result.repeat_of is not None and result.status != REPEAT:
            return  # a failed re-timing of a config measured fine before: nothing to keep
        if result.status in (CONTROL, REPEAT):
            # journaled at once at an index of its own; renumbered after the configs (_result)
            row = tile_row(EXTRA_BASE + len(self.extras), self.by_index[result.repeat_of or 0],
                           self.opts.measure, self.traits, result, {}, extra=True)
            self.extras.append(row)
            self.on_row(row)
            return
        assert result.index is not None  # only control rows have no config index
        index = result.index
        config = self.by_index[index]
        realized, facts = _realize(self.space, config, result.optimized_text)
        if (result.status == OK and index and result.timing and result.default_timing
                and not self.traits.ratio_labels):  # fixed engine: the effect in units of CV
            facts.update(_effect(result.timing, result.default_timing))
        self._keep(index, tile_row(index, config, self.opts.measure, self.traits, result,
                                   facts), config, realized)
        self.on_row(self.rows[index])
        self.progress(f"{self.kernel.name}: config {index} {result.status}")

    def _keep(self, index: int, row: ConfigRow, config: KernelConfig,
              realized: KernelConfig) -> None:
        self.rows[index] = row
        if row["status"] == NOOP and len(config.settings) == 1:
            self.noop_settings.add(config.settings[0])
        if row["status"] == OK:
            self.feats[index] = self.space.encode(realized)

    def _resume(self, index: int) -> bool:
        """Keep the row an earlier run journaled for config ``index``, if any."""
        row = self.resumed.get(index)
        if row is None:
            return False
        config = self.by_index[index]
        self._keep(index, row, config, _resumed_config(self.space, config, row))
        real = json.loads(row["realized"] or "{}")
        if row["status"] == OK and real.get("fingerprint"):
            self.known.setdefault(code_key(real["fingerprint"], real.get("code_hash")), index)
        return True

    def _enough(self) -> bool:
        """Measured ok, or compiled to a new program and still to be timed."""
        ok = sum(1 for r in self.rows.values() if r["status"] == OK)
        pending = sum(1 for i in set(self.known.values()) if i not in self.rows)
        return ok + pending >= self.opts.configs_per_kernel

    def _attempts(self) -> int:
        """Configs tried so far: infeasible tiles cost nothing and do not count."""
        return len(self.by_index) - 1 - sum(r["status"] == INFEASIBLE
                                            for r in self.rows.values())

    def _result(self) -> KernelRun:
        """The rows in config order, then the control/repeat rows in the order timed."""
        run = KernelRun(restarts=self.restarts)
        for index in sorted(self.rows):
            run.rows.append(self.rows[index])
            if index in self.feats:
                run.feats.append(self.feats[index])
        first = max(self.rows) + 1
        run.extras = [{**row, "config_index": first + i}
                      for i, row in enumerate(sorted(self.extras,
                                                     key=lambda r: r["config_index"]))]
        return run
