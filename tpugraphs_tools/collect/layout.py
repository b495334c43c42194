"""Layout collection: configs for one graph, applied for real, measured in a worker.

Labels come from the paired engine (measure/paired.py): each config's ratio to the default with
a 95% CI from per-round paired samples; the npz ``config_runtime`` is that ratio times the
graph's default runtime measured in the batches' windows (the median over batches), the default
row included. Every batch also times an A/A control (a copy of the default) stored as a
``control`` row, never in the npz: its spread is the noise floor. ``timing="fixed"`` keeps the
old engine (shared minimum of a solo-timed default) for side-by-side benchmarks
(docs/layout-collection.md).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tpugraphs_tools.collect.graphs import device_info
from tpugraphs_tools.collect.labels import EXTRA_STATUSES, label_quality, widen_by_windows
from tpugraphs_tools.configs import LayoutConfig, generate_configs, layout_space
from tpugraphs_tools.configs.layout import LayoutSpace
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.format import LAYOUT
from tpugraphs_tools.measure import device_env
from tpugraphs_tools.measure.apply import apply_layout_config, constraint_slots
from tpugraphs_tools.measure.paired import StopRule
from tpugraphs_tools.measure.pipeline import PipelinedMeasurer, PipelineOptions
from tpugraphs_tools.measure.realized import honoured_json, options_key
from tpugraphs_tools.measure.worker import (
    COMPILE_ERROR,
    CONTROL,
    DUPLICATE,
    NOOP,
    OK,
    REPEAT,
    Job,
    SessionSpec,
)

REFERENCE = "reference"  # stop_reason of the default row: its label is the in-window default


@dataclass
class LayoutOptions:
    configs: int = 20
    strategy: str = "default"
    seed: int = 0
    warmup: int = 2
    repeats: int = 10
    timeout_s: float = 120.0
    backend: str | None = None
    rtol: float | None = None  # None: fits the module's precision (measure/device_env.py)
    workers: int = 1          # compile workers running ahead of the measurement worker
    batch: int = 4            # configs timed together against one default run per round
    isolation: str = "auto"   # keeps compilation off the timed runs: auto|pin|pause|none
    timing: str = "paired"    # paired (CIs, adaptive, control) | fixed (old: repeats rounds)
    min_sample_ms: float = 5.0
    target_precision: float = 0.01
    max_rounds: int = 100
    max_seconds_per_config: float = 10.0
    copies: int = 4           # loaded copies per config (2× for the default): placement
    adaptive: bool = True     # False: every config runs max_rounds (benchmark reference)
    faults: dict[int, str] = field(default_factory=dict)  # tests only: config index -> fault

    def journal_header(self) -> dict[str, Any]:
        """The arguments a resumed collection must share with the interrupted one."""
        header = {"strategy": self.strategy, "seed": self.seed, "warmup": self.warmup,
                  "repeats": self.repeats, "rtol": self.rtol}
        if self.timing != "paired":
            header["timing"] = self.timing
        return header

    def session(self, text: str, rtol: float, options: dict[str, Any]) -> SessionSpec:
        stop = StopRule(target_precision=self.target_precision, max_rounds=self.max_rounds,
                        max_seconds_per_config=self.max_seconds_per_config,
                        min_rounds=min(StopRule.min_rounds, self.max_rounds),
                        copies=self.copies)
        return SessionSpec(base_text=text, backend=self.backend, seed=self.seed,
                           warmup=self.warmup, repeats=self.repeats, rtol=rtol,
                           options=options, engine=self.timing,
                           min_sample_ms=self.min_sample_ms, stop=stop, adaptive=self.adaptive)


@dataclass
class LayoutResult:
    rows: list[dict[str, Any]]
    arrays: dict[str, np.ndarray]
    summary: dict[str, Any]


def _row(index: int, config: LayoutConfig, space: LayoutSpace, opts: LayoutOptions,
         result: dict[str, Any]) -> dict[str, Any]:
    timing = result.get("timing") or {}
    realized = result.get("realized") or {}
    default = result.get("default_timing") or {}
    paired = result.get("stop_reason") is not None
    return {
        "config_index": index, "strategy": opts.strategy, "seed": opts.seed,
        "is_default": config.is_default, "status": result["status"],
        "config": json.dumps(config.to_json(space), sort_keys=True),
        "realized": json.dumps(realized, sort_keys=True) if realized else None,
        "honoured": honoured_json(realized),
        "num_copies": realized.get("copies"),
        "optimized_fingerprint": realized.get("fingerprint"),
        "duplicate_of": result.get("duplicate_of"),
        "runtime_min_ns": timing.get("min_ns"), "runtime_median_ns": timing.get("median_ns"),
        "runtime_cv": timing.get("cv"), "repeats": timing.get("repeats"),
        "default_runtime_ns": default.get("median_ns" if paired else "min_ns"),
        "relative_to_default": result.get("relative_to_default"),
        "relative_ci_low": result.get("relative_ci_low"),
        "relative_ci_high": result.get("relative_ci_high"),
        "rounds": result.get("rounds"), "stop_reason": result.get("stop_reason"),
        "runs_per_sample": result.get("runs_per_sample"),
        "max_abs_error": result.get("max_abs_error"),
        "compile_seconds": result.get("compile_seconds"),
        "measure_seconds": result.get("measure_seconds"),
        "error_message": result.get("error"),
    }


def collect_layout_configs(text: str, module: Any, opts: LayoutOptions,
                           progress: Callable[[int, int], None] = lambda _i, _n: None,
                           configs: list[LayoutConfig] | None = None,
                           done: dict[int, dict[str, Any]] | None = None,
                           on_row: Callable[[dict[str, Any]], None] = lambda _row: None,
                           ) -> LayoutResult:
    """Apply, compile and time the configs of one module.

    ``configs`` defaults to ``opts.configs`` generated ones (an explicit list must start with
    the default config). ``done`` holds rows measured by an interrupted run: they are kept and
    not measured again. ``on_row`` sees every new row as soon as it exists (the journal).
    """
    space = layout_space(module)
    if configs is None:
        configs = generate_configs(space, opts.configs, opts.strategy, opts.seed)
    elif not configs or not configs[0].is_default:
        raise ConfigError("explicit config lists must start with the default config")
    rows = {i: r for i, r in (done or {}).items()
            if i < len(configs) or r["status"] in EXTRA_STATUSES}
    device_env.share_device_memory()
    platform, _kind = device_info(opts.backend)
    spec = opts.session(text, rtol=device_env.resolve_rtol(opts.rtol, platform, module),
                        options=device_env.layout_compile_options(platform))
    pipeline = PipelineOptions(compile_workers=opts.workers, batch=opts.batch,
                               timeout_s=opts.timeout_s,
                               isolation=device_env.isolation_for(platform, opts.isolation))

    def record(index: int | None, result: dict[str, Any]) -> None:
        if "repeat_of" in result and result["status"] != REPEAT:
            return  # a failed re-timing of a config measured fine before: nothing to keep
        if result["status"] in EXTRA_STATUSES:
            source = result.get("repeat_of") or 0
            index = next_control_index(rows, len(configs))
            rows[index] = {**_row(index, configs[source], space, opts, result),
                           "is_default": False, "duplicate_of": result.get("repeat_of")}
        else:
            rows[index] = _row(index, configs[index], space, opts, result)
        on_row(rows[index])
        progress(sum(1 for i in rows if i < len(configs)), len(configs))

    def finished() -> list[tuple[float, float]]:
        return [(r["relative_ci_low"], r["relative_ci_high"]) for r in rows.values()
                if r["status"] == OK and not r["is_default"]
                and r.get("relative_ci_low") is not None]

    todo = [i for i in range(len(configs)) if i not in rows]
    restarts = 0
    if todo:
        with PipelinedMeasurer(spec, pipeline) as measurer:
            info = measurer.start()
            known = {info["key"]: 0}
            for index, row in rows.items():
                if row["status"] == OK and index and row.get("optimized_fingerprint"):
                    known.setdefault(options_key(row["optimized_fingerprint"], spec.options),
                                     index)
            if 0 not in rows:
                record(0, {"status": OK, "timing": info.get("timing"),
                           "default_timing": info.get("timing"), "realized": info["realized"],
                           "compile_seconds": info["compile_seconds"], "max_abs_error": 0.0})
            jobs = []
            for index in todo:
                if index == 0:
                    continue
                config = configs[index]
                try:
                    job_text = apply_layout_config(text, space, config)
                except ConfigError as exc:
                    record(index, {"status": COMPILE_ERROR, "error": str(exc)})
                    continue
                jobs.append(Job(index, job_text, slots=constraint_slots(module, space, config),
                                fault=opts.faults.get(index)))
            measurer.run(jobs, known, lambda result: record(result["index"], result),
                         context=finished)
            if opts.timing == "paired" and not any(
                    r.get("default_runtime_ns") for r in rows.values() if not r["is_default"]):
                measurer.run_control(lambda result: record(result["index"], result))
            restarts = measurer.restarts
    ordered = [rows[i] for i in sorted(rows)]
    arrays, summary = arrays_from_rows(ordered, configs, space, restarts)
    return LayoutResult(ordered, arrays, summary)


def next_control_index(rows: dict[int, Any], num_configs: int) -> int:
    """Control rows follow the configs: indices num_configs, num_configs + 1, ..."""
    return max([num_configs - 1, *rows]) + 1


def arrays_from_rows(rows: list[dict[str, Any]], configs: list[LayoutConfig],
                     space: LayoutSpace, restarts: int = 0
                     ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """npz config arrays + summary from a graph's complete, index-ordered config rows.

    Rows measured in separate sessions (resumed runs, Ray chunks) may hold the same optimized
    program twice; the later one becomes a ``duplicate`` here so only distinct labels remain.
    """
    first_ok: dict[str, int] = {}
    for row in rows:
        fp = row.get("optimized_fingerprint")
        if row["status"] != OK or fp is None:
            continue
        if fp in first_ok and row["config_index"] != first_ok[fp]:
            row.update(status=DUPLICATE if first_ok[fp] else NOOP, duplicate_of=first_ok[fp])
        else:
            first_ok.setdefault(fp, row["config_index"])
    return _arrays(rows, configs, space), _summary(rows, restarts)


def _arrays(rows: list[dict[str, Any]], configs: list[LayoutConfig],
            space: LayoutSpace) -> dict[str, np.ndarray]:
    """TpuGraphs config arrays over the ok configs (distinct labels only)."""
    for row in rows:
        row["npz_row"] = None
        if row["status"] != OK and row["status"] not in EXTRA_STATUSES:
            row.update(relative_to_default=None, relative_ci_low=None, relative_ci_high=None)
    widen_by_windows(rows)
    ok = [r for r in rows if r["status"] == OK]
    paired = any(r["is_default"] and (r["runtime_min_ns"] is None
                                      or r.get("stop_reason") == REFERENCE) for r in ok)
    windows = [r["default_runtime_ns"] for r in rows
               if r["status"] in (OK, CONTROL) and r["default_runtime_ns"]
               and not (paired and r["is_default"])]
    reference = statistics.median(windows) if windows else 0
    runtimes, feats = [], []
    for npz_row, row in enumerate(ok):
        if paired and row["is_default"]:
            _reference_row(row, windows, reference)
        elif not paired:  # fixed engine: shared minimum of the batch's default
            row["relative_to_default"] = row["runtime_min_ns"] / row["default_runtime_ns"]
        row["npz_row"] = npz_row
        runtimes.append(max(1, round(row["relative_to_default"] * reference)))
        feats.append(configs[row["config_index"]].encode(space.num_config_nodes))
    nc = space.num_config_nodes
    return {
        "node_config_feat": (np.stack(feats) if feats
                             else LAYOUT.empty_configs(nc)["node_config_feat"]),
        "config_runtime": np.array(runtimes, dtype=np.int64),
    }


def _reference_row(row: dict[str, Any], windows: list[int], reference: float) -> None:
    """The default's own label: ratio 1 exactly, runtime = median of the in-window defaults."""
    mean = statistics.fmean(windows) if windows else 0.0
    cv = statistics.pstdev(windows) / mean if len(windows) > 1 and mean else 0.0
    row.update(relative_to_default=1.0, relative_ci_low=1.0, relative_ci_high=1.0,
               stop_reason=REFERENCE, default_runtime_ns=round(reference) or None,
               runtime_median_ns=round(reference) or None,
               runtime_min_ns=min(windows) if windows else None, runtime_cv=cv,
               repeats=len(windows), rounds=None)


def _summary(rows: list[dict[str, Any]], restarts: int) -> dict[str, Any]:
    counts = Counter(r["status"] for r in rows)
    ok = [r for r in rows if r["status"] == OK and not r["is_default"]]
    relative = [r["relative_to_default"] for r in ok]
    return {
        "configs": len(rows) - sum(counts.get(s, 0) for s in EXTRA_STATUSES),
        "status": dict(counts),
        "worker_restarts": restarts,
        "best_speedup": (1 / min(relative)) if relative else None,
        "worst_slowdown": max(relative) if relative else None,
        **label_quality(rows),
    }
