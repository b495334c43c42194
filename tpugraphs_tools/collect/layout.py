"""Layout collection: configs for one graph, applied for real, measured in a worker.

Labels come from the paired engine (measure/stats/rounds.py): each config's ratio to the default
with a 95% CI from per-round paired samples; the npz ``config_runtime`` is that ratio times the
graph's default runtime measured in the batches' windows (the median over batches), the default
row included. Every batch also times an A/A control (a copy of the default) stored as a
``control`` row, never in the npz: its spread is the noise floor. ``engine="fixed"`` keeps the
old engine (shared minimum of a solo-timed default) for side-by-side benchmarks
(docs/layout-collection.md).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from tpugraphs_tools.collect.journal import JournalHeader
from tpugraphs_tools.collect.labels import (
    EXTRA_STATUSES,
    finished_cis,
    label_quality,
    measured_columns,
    reference_row,
    widen_by_windows,
)
from tpugraphs_tools.collect.rows import ConfigRow, config_row
from tpugraphs_tools.collect.summary import LayoutSummary
from tpugraphs_tools.compiler import (
    apply_layout_config,
    constraint_slots,
    honoured_json,
    options_key,
)
from tpugraphs_tools.configs import LayoutConfig, LayoutSpace, generate_configs, layout_space
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.format import LAYOUT
from tpugraphs_tools.measure import (
    COMPILE_ERROR,
    CONTROL,
    DUPLICATE,
    NOOP,
    OK,
    REPEAT,
    BatchProgress,
    ConfigResult,
    Job,
    MeasureOptions,
    Measurer,
    Session,
    Status,
    Traits,
    layout_session,
    option_default,
    platform_of,
    traits_of,
)
from tpugraphs_tools.store import ConfigCounts


def journal_header(opts: MeasureOptions) -> JournalHeader:
    """The arguments a resumed collection must share with the interrupted one. The keys are
    the ones journals were written with before the options took their flags' names
    (``repeats`` for ``fixed_rounds``, ``timing`` for ``engine``): a collection interrupted
    by an earlier version resumes. The engine is written only when it is not the default."""
    header: JournalHeader = {"strategy": opts.strategy, "seed": opts.seed,
                             "warmup": opts.warmup, "repeats": opts.fixed_rounds,
                             "rtol": opts.rtol}
    if opts.engine != option_default("engine"):
        header["timing"] = opts.engine
    return header


@dataclass(frozen=True)
class LayoutResult:
    """One graph's layout configs: its rows (configs, then control/repeat rows), its npz
    config arrays, its summary."""

    rows: list[ConfigRow]
    arrays: dict[str, np.ndarray]
    summary: LayoutSummary


def _row(index: int, config: LayoutConfig, space: LayoutSpace, opts: MeasureOptions,
         traits: Traits, result: ConfigResult, extra: bool = False) -> ConfigRow:
    """The configs.parquet row of one config's result (``extra``: a control/repeat row
    after the configs, which is never the default and names the config it re-timed)."""
    realized = result.realized
    return cast(ConfigRow, {
        "config_index": index, "strategy": opts.strategy, "seed": opts.seed,
        "is_default": config.is_default and not extra, "status": Status(result.status),
        "config": json.dumps(config.to_json(space), sort_keys=True),
        "realized": json.dumps(realized, sort_keys=True) if realized else None,
        "honoured": honoured_json(realized),
        "num_copies": realized.get("copies") if realized else None,
        "optimized_fingerprint": realized.get("fingerprint") if realized else None,
        "duplicate_of": result.repeat_of if extra else result.duplicate_of,
        "npz_row": None,
        **measured_columns(result, traits),
    })


def collect_layout_configs(text: str, module: Any, opts: MeasureOptions,
                           progress: Callable[[int, int], None] = lambda _i, _n: None,
                           configs: list[LayoutConfig] | None = None,
                           done: Mapping[int, Mapping[str, Any]] | None = None,
                           on_row: Callable[[ConfigRow], None] = lambda _row: None,
                           on_batch: Callable[[BatchProgress], None] | None = None,
                           ) -> LayoutResult:
    """Apply, compile and time the configs of one module.

    ``configs`` defaults to ``opts.configs`` generated ones (an explicit list must start with
    the default config). ``done`` holds rows measured by an interrupted run (journal lines or
    committed rows): they are kept and not measured again. ``on_row`` sees every new row as
    soon as it exists (the journal); ``on_batch`` where the timing batch out now stands
    (at least once a second while one is timed).
    """
    space = layout_space(module)
    if configs is None:
        configs = generate_configs(space, opts.configs, opts.strategy, opts.seed)
    elif not configs or not configs[0].is_default:
        raise ConfigError("explicit config lists must start with the default config")
    resumed = _resumed_rows(done or {}, len(configs))
    session = layout_session(opts, text, module, platform_of(opts.backend))
    graph = _LayoutRows(configs, space, opts, traits_of(opts.engine), resumed, on_row, progress)
    todo = [i for i in range(len(configs)) if i not in graph.rows]
    restarts = _measure(session, text, module, graph, todo, on_batch) if todo else 0
    return layout_result([graph.rows[i] for i in sorted(graph.rows)], configs, space,
                         graph.traits, restarts)


def _resumed_rows(done: Mapping[int, Mapping[str, Any]], num_configs: int
                  ) -> dict[int, ConfigRow]:
    """The rows an interrupted run measured that still belong to the graph: its configs and
    the control/repeat rows after them."""
    rows: dict[int, ConfigRow] = {}
    for i, values in done.items():
        row = config_row(values, where=f"measured row of config {i}")
        if i < num_configs or row["status"] in EXTRA_STATUSES:
            rows[i] = row
    return rows


@dataclass
class _LayoutRows:
    """One graph's rows by index as results come in: configs at their own index,
    control/repeat rows after the last config."""

    configs: list[LayoutConfig]
    space: LayoutSpace
    opts: MeasureOptions
    traits: Traits
    rows: dict[int, ConfigRow]
    on_row: Callable[[ConfigRow], None]
    progress: Callable[[int, int], None]

    def record(self, result: ConfigResult) -> None:
        """A measurement result as its row (``on_row`` sees it at once)."""
        if result.repeat_of is not None and result.status != REPEAT:
            return  # a failed re-timing of a config measured fine before: nothing to keep
        configs, rows = self.configs, self.rows
        if result.status in EXTRA_STATUSES:
            index = next_control_index(rows, len(configs))
            rows[index] = _row(index, configs[result.repeat_of or 0], self.space, self.opts,
                               self.traits, result, extra=True)
        else:
            assert result.index is not None  # only control rows have no config index
            index = result.index
            rows[index] = _row(index, configs[index], self.space, self.opts, self.traits,
                               result)
        self.on_row(rows[index])
        self.progress(sum(1 for i in rows if i < len(configs)), len(configs))


def _measure(session: Session, text: str, module: Any, graph: _LayoutRows, todo: list[int],
             on_batch: Callable[[BatchProgress], None] | None) -> int:
    """Measure configs ``todo`` (the default's row first, unless an earlier run measured it)
    and, for ratio labels, an A/A control if no batch timed the default alongside a config;
    the workers' restarts."""
    with Measurer(session) as measurer:
        info = measurer.start()
        known = {info.key: 0}
        for index, row in graph.rows.items():
            fp = row["optimized_fingerprint"]
            if row["status"] == OK and index and fp:
                known.setdefault(options_key(fp, session.spec.options), index)
        if 0 not in graph.rows:
            graph.record(ConfigResult(0, OK, timing=info.timing, default_timing=info.timing,
                                      realized=info.realized,
                                      compile_seconds=info.compile_seconds,
                                      max_abs_error=0.0))
        measurer.run(_jobs(text, module, graph, todo), known, graph.record,
                     context=lambda: finished_cis(graph.rows.values()), on_progress=on_batch)
        if graph.traits.ratio_labels and not any(
                r["default_runtime_ns"] for r in graph.rows.values() if not r["is_default"]):
            measurer.run_control(graph.record)
        return measurer.restarts


def _jobs(text: str, module: Any, graph: _LayoutRows, todo: list[int]) -> list[Job]:
    """A compile job per non-default config of ``todo``; a config that cannot be applied
    gets its ``compile_error`` row at once."""
    jobs = []
    for index in todo:
        if index == 0:
            continue
        config = graph.configs[index]
        try:
            job_text = apply_layout_config(text, graph.space, config)
        except ConfigError as exc:
            graph.record(ConfigResult(index, COMPILE_ERROR, error=str(exc)))
            continue
        jobs.append(Job(index, job_text, slots=constraint_slots(module, graph.space, config)))
    return jobs


def next_control_index(rows: Mapping[int, object], num_configs: int) -> int:
    """Control rows follow the configs: indices num_configs, num_configs + 1, ..."""
    return max([num_configs - 1, *rows]) + 1


def layout_result(rows: Sequence[Mapping[str, Any]], configs: list[LayoutConfig],
                  space: LayoutSpace, traits: Traits, restarts: int = 0) -> LayoutResult:
    """npz config arrays + summary from a graph's complete, index-ordered config rows, all
    measured by the engine of ``traits``.

    Rows measured in separate sessions (resumed runs, Ray chunks) may hold the same optimized
    program twice; the later one becomes a ``duplicate`` here so only distinct labels remain.
    """
    first_ok: dict[str, int] = {}
    deduped: list[ConfigRow] = []
    for values in rows:
        row = config_row(values, where=f"config row {values.get('config_index')}")
        fp = row["optimized_fingerprint"]
        if row["status"] == OK and fp is not None:
            first = first_ok.setdefault(fp, row["config_index"])
            if first != row["config_index"]:
                row = {**row, "status": DUPLICATE if first else NOOP, "duplicate_of": first}
        deduped.append(row)
    labelled, arrays = _arrays(deduped, configs, space, traits)
    return LayoutResult(labelled, arrays, _summary(labelled, restarts))


def _unlabelled(row: ConfigRow) -> ConfigRow:
    """A row before its label is derived: no npz row; a failed config carries no label."""
    if row["status"] != OK and row["status"] not in EXTRA_STATUSES:
        return {**row, "npz_row": None, "relative_to_default": None,
                "relative_ci_low": None, "relative_ci_high": None}
    return {**row, "npz_row": None}


def _arrays(rows: list[ConfigRow], configs: list[LayoutConfig], space: LayoutSpace,
            traits: Traits) -> tuple[list[ConfigRow], dict[str, np.ndarray]]:
    """The rows with their labels and npz rows, and the TpuGraphs config arrays over the ok
    configs (distinct labels only)."""
    rows, _sd = widen_by_windows([_unlabelled(r) for r in rows])
    ok = [r for r in rows if r["status"] == OK]
    windows = [w for r in rows
               if r["status"] in (OK, CONTROL) and (w := r["default_runtime_ns"])
               and not (traits.ratio_labels and r["is_default"])]
    reference = statistics.median(windows) if windows else 0
    runtimes, feats = [], []
    labelled: dict[int, ConfigRow] = {}
    for npz_row, row in enumerate(ok):
        if traits.ratio_labels and row["is_default"]:
            row = reference_row(row, windows, reference)
        elif not traits.ratio_labels:  # fixed engine: shared minimum of the batch's default
            row = {**row, "relative_to_default": _ratio(row["runtime_min_ns"],
                                                         row["default_runtime_ns"])}
        row = labelled[row["config_index"]] = {**row, "npz_row": npz_row}
        runtimes.append(max(1, round(_label(row) * reference)))
        feats.append(configs[row["config_index"]].encode(space.num_config_nodes))
    nc = space.num_config_nodes
    return [labelled.get(r["config_index"], r) for r in rows], {
        "node_config_feat": (np.stack(feats) if feats
                             else LAYOUT.empty_configs(nc)["node_config_feat"]),
        "config_runtime": np.array(runtimes, dtype=np.int64),
    }


def _ratio(runtime: int | None, default: int | None) -> float:
    if runtime is None or not default:
        raise ValueError("an ok fixed-engine row has both runtimes")
    return runtime / default


def _label(row: ConfigRow) -> float:
    ratio = row["relative_to_default"]
    if ratio is None:
        raise ValueError(f"ok config {row['config_index']} has no relative_to_default")
    return ratio


def _summary(rows: list[ConfigRow], restarts: int) -> LayoutSummary:
    counts = Counter(r["status"] for r in rows)
    relative = [_label(r) for r in rows if r["status"] == OK and not r["is_default"]]
    return LayoutSummary(
        counts=ConfigCounts.of_statuses(counts),
        status=dict(counts),
        worker_restarts=restarts,
        best_speedup=(1 / min(relative)) if relative else None,
        worst_slowdown=max(relative) if relative else None,
        labels=label_quality(rows),
    )
