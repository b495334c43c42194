"""Layout collection: configs for one graph, applied for real, measured in a worker.

Runtimes stored in the npz (``config_runtime``) are drift-corrected: each config's minimum time
divided by the default's minimum *in the same interleaved window*, times the default's median
runtime over the whole session. Raw per-config minimum/median, CV and the in-window default
are kept in configs.parquet (docs/layout-collection.md).
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
from tpugraphs_tools.configs import LayoutConfig, generate_configs, layout_space
from tpugraphs_tools.configs.layout import LayoutSpace
from tpugraphs_tools.errors import ConfigError
from tpugraphs_tools.measure import device_env
from tpugraphs_tools.measure.apply import apply_layout_config, constraint_slots
from tpugraphs_tools.measure.pipeline import PipelinedMeasurer, PipelineOptions
from tpugraphs_tools.measure.realized import honoured_json, options_key
from tpugraphs_tools.measure.worker import COMPILE_ERROR, DUPLICATE, NOOP, OK, Job, SessionSpec


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
    faults: dict[int, str] = field(default_factory=dict)  # tests only: config index -> fault

    def journal_header(self) -> dict[str, Any]:
        """The arguments a resumed collection must share with the interrupted one."""
        return {"strategy": self.strategy, "seed": self.seed, "warmup": self.warmup,
                "repeats": self.repeats, "rtol": self.rtol}


@dataclass
class LayoutResult:
    rows: list[dict[str, Any]]
    arrays: dict[str, np.ndarray]
    summary: dict[str, Any]


def _row(index: int, config: LayoutConfig, space: LayoutSpace, opts: LayoutOptions,
         result: dict[str, Any]) -> dict[str, Any]:
    timing = result.get("timing") or {}
    realized = result.get("realized") or {}
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
        "default_runtime_ns": (result.get("default_timing") or {}).get("min_ns"),
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
    rows = {i: r for i, r in (done or {}).items() if i < len(configs)}
    device_env.share_device_memory()
    platform, _kind = device_info(opts.backend)
    spec = SessionSpec(base_text=text, backend=opts.backend, seed=opts.seed, warmup=opts.warmup,
                       repeats=opts.repeats,
                       rtol=device_env.resolve_rtol(opts.rtol, platform, module),
                       options=device_env.layout_compile_options(platform))
    pipeline = PipelineOptions(compile_workers=opts.workers, batch=opts.batch,
                               timeout_s=opts.timeout_s,
                               isolation=device_env.isolation_for(platform, opts.isolation))

    def record(index: int, result: dict[str, Any]) -> None:
        rows[index] = _row(index, configs[index], space, opts, result)
        on_row(rows[index])
        progress(len(rows), len(configs))

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
                record(0, {"status": OK, "timing": info["timing"],
                           "default_timing": info["timing"], "realized": info["realized"],
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
            measurer.run(jobs, known, lambda result: record(result["index"], result))
            restarts = measurer.restarts
    ordered = [rows[i] for i in range(len(configs))]
    arrays, summary = arrays_from_rows(ordered, configs, space, restarts)
    return LayoutResult(ordered, arrays, summary)


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
        row["relative_to_default"] = None
        row["npz_row"] = None
    ok = [r for r in rows if r["status"] == OK]
    defaults = [r["default_runtime_ns"] for r in ok if r["default_runtime_ns"]]
    reference = statistics.median(defaults) if defaults else 0
    runtimes, feats = [], []
    for npz_row, row in enumerate(ok):
        relative = row["runtime_min_ns"] / row["default_runtime_ns"]
        row["relative_to_default"] = relative
        row["npz_row"] = npz_row
        runtimes.append(max(1, round(relative * reference)))
        feats.append(configs[row["config_index"]].encode(space.num_config_nodes))
    nc = space.num_config_nodes
    return {
        "node_config_feat": np.stack(feats) if feats else np.zeros((0, nc, 18), np.float32),
        "config_runtime": np.array(runtimes, dtype=np.int64),
    }


def _summary(rows: list[dict[str, Any]], restarts: int) -> dict[str, Any]:
    counts = Counter(r["status"] for r in rows)
    relative = [r["relative_to_default"] for r in rows
                if r["status"] == OK and not r["is_default"]]
    return {
        "configs": len(rows), "status": dict(counts), "worker_restarts": restarts,
        "best_speedup": (1 / min(relative)) if relative else None,
        "worst_slowdown": max(relative) if relative else None,
    }
