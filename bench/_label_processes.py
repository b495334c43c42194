"""What each measurement process said about each item, for bench_labels.py: recorded while a
collection runs, summarized afterwards (per-item spread between processes, an item's own share
against the default's), and used to recompute labels with the checkout's estimator."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import numpy as np


@contextlib.contextmanager
def recording() -> Iterator[list[dict]]:
    """Keep what each measurement process said about each item of each batch (its log-ratio,
    se and df) and what the combined label made of it: the data to ask which part of a CI
    (an item's sampling, the between-process term, the t quantile) is wider than reruns."""
    from tpugraphs_tools.measure import timing_side

    got: list[dict] = []
    original = timing_side.combine

    def record(per_process, spread, confidence=0.95):  # type: ignore[no-untyped-def]
        results = original(per_process, spread, confidence)
        got.append({
            "tau2": spread.variance, "tau_df": spread.df, "own": spread.own_variance,
            "default_share": spread.default_variance, "default_df": spread.default_df,
            "items": [{"index": r.index, "repeat_of": r.repeat_of, "status": r.status,
                       "centers": [_find(p, r, "log_center") for p in per_process],
                       "ses": [_find(p, r, "log_se") for p in per_process],
                       "dfs": [_find(p, r, "df") for p in per_process],
                       "rounds": [_find(p, r, "rounds") for p in per_process],
                       "sample_sd": [_log_sd(_find(p, r, "config_samples_ns"))
                                     for p in per_process],
                       "default_sd": [_log_sd(_find(p, r, "default_samples_ns"))
                                      for p in per_process],
                       "log_center": r.log_center, "log_se": r.log_se} for r in results]})
        return results

    timing_side.combine = record
    try:
        yield got
    finally:
        timing_side.combine = original


def recompute(run: dict) -> dict:
    """The run's labels and CIs recomputed from its saved per-process records with this
    checkout's ``replicas`` (the estimator changed, the measurements did not). Batches are
    fed to one pool in order, as the collection did; control rows follow the batches'
    controls in order."""
    from tpugraphs_tools.measure.stats.replicas import ProcessSpread, combined_interval

    if not run.get("processes"):
        return run
    spread = ProcessSpread()
    by_index: dict[int, tuple[float, float]] = {}
    controls: list[tuple[float, float]] = []
    for batch in run["processes"]:
        items = [it for it in batch["items"]
                 if None not in it["centers"] and None not in it["ses"]]
        spread.add_batch([it["centers"] for it in items], [it["ses"] for it in items])
        for it in items:
            center, _, half = combined_interval(it["centers"], it["ses"],
                                                [d or 1 for d in it["dfs"]], spread)
            if it["status"] == "control":
                controls.append((center, half))
            elif it["repeat_of"] is None:
                by_index[it["index"]] = (center, half)
    rows = []
    control_rows = iter(controls)
    for row in run["rows"]:
        new = by_index.get(row["config_index"]) if row["status"] == "ok" else \
            next(control_rows, None) if row["status"] == "control" else None
        if new is not None:
            center, half = new
            row = {**row, "relative_to_default": math.exp(center),
                   "relative_ci_low": math.exp(center - half),
                   "relative_ci_high": math.exp(center + half)}
        rows.append(row)
    return {**run, "rows": rows}


def _shares(got: list[dict]) -> tuple[float, float]:
    """(an item's own between-process variance, the default's), pooled over runs.

    Inside a run, item i reads c_ip = μ_i + u_ip − v_p: u is the item's own deviation in
    process p (its process effect and sampling noise), v the default's, shared by every item
    of the process. The items' spread across processes after removing each process's mean
    estimates var(u)·(1 − 1/n); the spread of the process means, var(v) + var(u)/n. The CI
    model takes var(v) = var(u) (the default is a program like any other)."""
    own: list[float] = []
    means: list[float] = []
    for run in got:
        items = [it["centers"] for it in run["processes"][0]["items"]
                 if it["repeat_of"] is None and None not in it["centers"]]
        c = np.asarray(items, dtype=np.float64)
        if c.ndim != 2 or c.shape[0] < 3 or c.shape[1] < 2:
            continue
        n = c.shape[0]
        m = c.mean(axis=0)
        own.append(float((c - m).var(axis=1, ddof=1).mean()) / (1 - 1 / n))
        means.append(float(m.var(ddof=1)) - own[-1] / n)
    if not own:
        return math.nan, math.nan
    return float(np.mean(own)), float(np.mean(means))


def _log_sd(samples: list[int] | None) -> float | None:
    """Robust SD of log sample times (IQR / 1.349): how noisy one program's samples were."""
    if not samples or len(samples) < 4:
        return None
    q1, q3 = np.percentile(np.log(samples), [25, 75])
    return float(q3 - q1) / 1.349


def _find(results, item, name: str):  # type: ignore[no-untyped-def]
    for r in results:
        if (r.index, r.repeat_of, r.status) == (item.index, item.repeat_of, item.status):
            return getattr(r, name)
    return None


def process_spread(got: list[dict]) -> dict | None:
    """Per item of the first batch (configs by index, the A/A control as "control"): the SD
    of its log-ratio across every process of every run, against its RMS per-process se."""
    got = [r for r in got if r.get("processes")]
    if len(got) < 2:
        return None
    values: dict[str, list[tuple[float, float]]] = {}
    for run in got:
        for item in run["processes"][0]["items"]:
            if item["repeat_of"] is not None or None in item["centers"] or \
                    None in item["ses"]:
                continue
            name = "control" if item["status"] == "control" else str(item["index"])
            values.setdefault(name, []).extend(zip(item["centers"], item["ses"], strict=True))
    rows = {k: (100 * float(np.std([c for c, _ in v], ddof=1)),
                100 * math.sqrt(float(np.mean([s * s for _, s in v]))))
            for k, v in values.items() if len(v) >= 4}
    if not rows:
        return None
    sds = [sd for sd, _ in rows.values()]
    wide = [k for k, (sd, se) in rows.items() if sd > 1.5 * se]
    own, default = _shares(got)
    return {"own": 100 * math.sqrt(own), "default": 100 * math.sqrt(max(0.0, default)),
            "runs": len(got), "processes": len(got[0]["processes"][0]["items"][0]["centers"]),
            "items": len(rows), "sd_min": min(sds), "sd_max": max(sds),
            "sd_median": float(np.median(sds)),
            "se": math.sqrt(float(np.mean([se * se for _, se in rows.values()]))),
            "wide": ", ".join(sorted(wide, key=lambda k: (k == "control", k.zfill(4))))
            or "none"}
