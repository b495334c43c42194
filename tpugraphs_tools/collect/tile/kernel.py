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
    """Default + candidates of one kernel until ``configs_per_kernel`` are measured ok.

    A candidate the space calls infeasible on this device (``space.infeasible``: a tile over
    the GPU's registers or shared memory) gets an ``infeasible`` row saying why and is never
    compiled; it does not count against ``max_attempts``.

    Single-setting configs go first; combinations follow in a second pass that skips any
    combination containing a setting that was a no-op on its own. ``workers``: processes
    shared with the program's other kernels (None: this kernel's own, closed at the end).
    ``done``: rows an interrupted run journaled (control/repeat rows at their journal-only
    indices, :data:`EXTRA_BASE` on): kept, never measured again. Which configs are tried is
    decided on compile results only (no-ops, duplicates and errors are settled before timing),
    so with one compile worker a resumed kernel tries the configs an uninterrupted one does.
    """
    if workers is None:
        with SharedWorkers(reuse=False) as own:
            return measure_kernel(kernel, space, opts, configs, progress, on_row, own, done)
    text = _measure_text(kernel, space)
    platform = platform_of(opts.measure.backend)
    traits = traits_of(opts.measure.engine)
    run = KernelRun()
    max_attempts = opts.max_attempts or 3 * opts.configs_per_kernel
    by_index: dict[int, KernelConfig] = {}
    noop_settings: set[Any] = set()
    rows: dict[int, ConfigRow] = {}
    feats: dict[int, np.ndarray] = {}
    extras: list[ConfigRow] = [r for r in done if r["status"] in (CONTROL, REPEAT)]
    resumed = {r["config_index"]: r for r in done if r["status"] not in (CONTROL, REPEAT)}
    known: dict[str, int] = {}  # dedupe key -> config index (default: 0)

    def keep(index: int, row: ConfigRow, config: KernelConfig, realized: KernelConfig) -> None:
        rows[index] = row
        if row["status"] == NOOP and len(config.settings) == 1:
            noop_settings.add(config.settings[0])
        if row["status"] == OK:
            feats[index] = space.encode(realized)

    def record(result: ConfigResult) -> None:
        if result.repeat_of is not None and result.status != REPEAT:
            return  # a failed re-timing of a config measured fine before: nothing to keep
        if result.status in (CONTROL, REPEAT):
            # journaled at once at an index of its own; renumbered after the configs below
            row = tile_row(EXTRA_BASE + len(extras), by_index[result.repeat_of or 0],
                           opts.measure, traits, result, {}, extra=True)
            extras.append(row)
            on_row(row)
            return
        assert result.index is not None  # only control rows have no config index
        index = result.index
        config = by_index[index]
        realized, facts = _realize(space, config, result.optimized_text)
        if (result.status == OK and index and result.timing and result.default_timing
                and not traits.ratio_labels):  # fixed engine: the effect in units of CV
            facts.update(_effect(result.timing, result.default_timing))
        keep(index, tile_row(index, config, opts.measure, traits, result, facts), config,
             realized)
        on_row(rows[index])
        progress(f"{kernel.name}: config {index} {result.status}")

    def resume(index: int) -> bool:
        row = resumed.get(index)
        if row is None:
            return False
        config = by_index[index]
        keep(index, row, config, _resumed_config(space, config, row))
        real = json.loads(row["realized"] or "{}")
        if row["status"] == OK and real.get("fingerprint"):
            known.setdefault(code_key(real["fingerprint"], real.get("code_hash")), index)
        return True

    def enough() -> bool:
        """Measured ok, or compiled to a new program and still to be timed."""
        ok = sum(1 for r in rows.values() if r["status"] == OK)
        pending = sum(1 for i in set(known.values()) if i not in rows)
        return ok + pending >= opts.configs_per_kernel

    def attempts() -> int:
        """Configs tried so far: infeasible tiles cost nothing and do not count."""
        return len(by_index) - 1 - sum(r["status"] == INFEASIBLE for r in rows.values())

    def finished() -> list[tuple[float, float]]:
        return [(low, high) for r in rows.values()
                if r["status"] == OK and not r["is_default"]
                and (low := r["relative_ci_low"]) is not None
                and (high := r["relative_ci_high"]) is not None]

    by_index[0] = configs[0]
    resume(0)
    measurer: Measurer | None = None

    def session() -> Measurer:
        nonlocal measurer
        if measurer is None:
            measurer = workers.session(kernel_session(
                opts.measure, space.apply(text, configs[0]), kernel.module, platform,
                compile_options=space.compile_options(configs[0]),
                fresh_compiler_per_job=space.fresh_compiler_per_config))
            run.restarts = -measurer.restarts
            info = measurer.start()
            known[info.key] = 0
            if 0 not in rows:
                record(ConfigResult(0, OK, timing=info.timing, default_timing=info.timing,
                                    realized=info.realized,
                                    compile_seconds=info.compile_seconds, max_abs_error=0.0,
                                    optimized_text=info.optimized_text))
        return measurer

    if 0 not in rows:
        session()
    singles = [c for c in configs[1:] if len(c.settings) == 1]
    combos = [c for c in configs[1:] if len(c.settings) > 1]
    for phase in (singles, combos):
        jobs = []
        for config in phase:
            if attempts() >= max_attempts:
                break
            if len(config.settings) > 1 and noop_settings & set(config.settings):
                continue  # a combination with a setting that alone changed nothing
            index = len(by_index)
            by_index[index] = config
            if resume(index):
                continue
            if (why := space.infeasible(kernel.module, config)) is not None:
                record(ConfigResult(index, INFEASIBLE, error=why))  # never compiled
                continue
            try:
                jobs.append(Job(index, space.apply(text, config),
                                options=space.compile_options(config)))
            except ConfigError as exc:
                record(ConfigResult(index, COMPILE_ERROR, error=str(exc)))
        if jobs and not enough():
            session().run(jobs, known, record, stop=enough, context=finished)
        else:
            for job in jobs:  # never compiled: not part of the data
                by_index.pop(job.index)
    if measurer is not None:
        run.restarts += measurer.restarts
    for index in sorted(rows):
        run.rows.append(rows[index])
        if index in feats:
            run.feats.append(feats[index])
    first = max(rows) + 1
    # control/repeat rows follow the configs, in the order they were timed
    run.extras = [{**row, "config_index": first + i}
                  for i, row in enumerate(sorted(extras, key=lambda r: r["config_index"]))]
    return run
