"""Tile labels: the configs.parquet rows of a kernel's results and its TpuGraphs config arrays.

Two engines (``--engine``). *paired* (default): each config's label is its ratio to the default
timed in the same rounds, with a 95% CI (measure/stats/rounds.py); ``config_runtime_normalizers`` is
the default's runtime in that config's timing window (the median of its default samples) and
``config_runtime`` is round(ratio × normalizer), so runtime / normalizer is the stored
``relative_to_default`` to rounding. The default's own row is the reference: ratio 1, runtime =
normalizer = the median of its in-window runtimes. Every timing batch also times an A/A control
(a copy of the default), stored as a ``control`` row after the configs and never in the npz.
*fixed*: the minimum of ``--fixed-rounds`` rounds against the default's minimum in the same
window, no CI (kept for comparisons).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

import numpy as np

from tpugraphs_tools.collect.labels import (
    label_quality,
    measured_columns,
    reference_row,
    widen_by_windows,
)
from tpugraphs_tools.collect.rows import ConfigRow
from tpugraphs_tools.collect.summary import LabelQuality
from tpugraphs_tools.configs import NUM_TILE_FEATURES, KernelConfig
from tpugraphs_tools.measure import (
    CONTROL,
    OK,
    REPEAT,
    ConfigResult,
    MeasureOptions,
    Status,
    Traits,
)

STRATEGY = "kernel-sweep"


def tile_row(index: int, config: KernelConfig, opts: MeasureOptions, traits: Traits,
             result: ConfigResult, facts: dict[str, Any], extra: bool = False) -> ConfigRow:
    """The configs.parquet row of one kernel config's result (its npz row, and a fixed-engine
    label, are set once the kernel's ok configs are known: :func:`kernel_arrays`).
    ``extra``: a control/repeat row after the configs, never the default, naming the config it
    re-timed in ``duplicate_of``."""
    realized = {**(result.realized or {}), **facts}
    return cast(ConfigRow, {
        "config_index": index, "strategy": STRATEGY, "seed": opts.seed,
        "is_default": config.is_default and not extra, "status": Status(result.status),
        "config": config.to_json(),
        "realized": json.dumps(realized, sort_keys=True, default=str) if realized else None,
        "honoured": None,
        "num_copies": realized.get("copies"),
        "optimized_fingerprint": realized.get("fingerprint"),
        "duplicate_of": result.repeat_of if extra else result.duplicate_of,
        "npz_row": None,
        **measured_columns(result, traits),
        # a timed row's share of the measurement process's time; the fixed tile engine's is
        # not comparable: left out
        "measure_seconds": (result.measure_seconds
                            if traits.ratio_labels and result.timing is not None else None),
    })


def kernel_arrays(rows: list[ConfigRow], feats: list[np.ndarray], traits: Traits
                  ) -> tuple[list[ConfigRow], dict[str, np.ndarray]]:
    """The rows with their npz rows and labels, and the TpuGraphs tile config arrays over the
    ok configs (``feats``: their encodings, in row order; ``traits``: the engine's)."""
    paired = traits.ratio_labels
    if paired:
        rows, _sd = widen_by_windows(rows)
    windows = [w for r in rows if r["status"] in (OK, CONTROL) and not r["is_default"]
               and (w := r["default_runtime_ns"])]
    reference = statistics.median(windows) if windows else 0
    runtimes: list[int] = []
    normalizers: list[int] = []
    out = []
    for row in rows:
        if row["status"] == OK:
            if paired and row["is_default"]:
                if not windows:
                    raise ValueError("no config of this kernel was timed with its default")
                row = reference_row(row, windows, reference)
            label, normalizer = _label(row, paired)
            row = {**row, "npz_row": len(runtimes), "relative_to_default": label}
            runtimes.append(max(1, round(label * normalizer)) if paired else
                            int(row["runtime_min_ns"] or 0))
            normalizers.append(normalizer)
        out.append(row)
    stacked = np.stack(feats) if feats else np.zeros((0, NUM_TILE_FEATURES), np.float32)
    return out, {"config_feat": stacked.astype(np.float32),
                 "config_runtime": np.array(runtimes, dtype=np.int64),
                 "config_runtime_normalizers": np.array(normalizers, dtype=np.int64)}


def _label(row: ConfigRow, paired: bool) -> tuple[float, int]:
    """(ratio to the default, the default's runtime in the row's window) of an ok row."""
    default = row["default_runtime_ns"]
    if paired:
        ratio = row["relative_to_default"]
        if ratio is None or not default:
            raise ValueError(f"ok kernel config {row['config_index']} has no paired label")
        return ratio, int(default)
    runtime = row["runtime_min_ns"]
    if runtime is None or not default:
        raise ValueError(f"ok kernel config {row['config_index']} was not timed")
    return runtime / default, int(default)


def pooled_quality(kernels: Sequence[Sequence[ConfigRow]], traits: Traits
                   ) -> LabelQuality | None:
    """How sure a program's tile labels are, over its kernels: CI widths, stop reasons and the
    A/A noise floor pooled; config pairs counted within each kernel (a kernel's ratios are to
    its own default); the between-window SD the median of the kernels'. None without CIs (the
    fixed engine) or without a stored kernel."""
    rows = [r for k in kernels for r in k]
    if not traits.ratio_labels or not rows:
        return None
    whole = label_quality([r for r in rows if r["status"] != REPEAT])
    parts = [label_quality(k) for k in kernels]
    sds = [q.window_sd for q in parts if q.window_sd is not None]
    return replace(whole, window_sd=statistics.median(sds) if sds else None,
                   pairs=sum(q.pairs for q in parts),
                   pairs_separated=sum(q.pairs_separated for q in parts))
