"""The device check's figures: one dataset's, two datasets compared, and the answers a first
GPU window is for (docs/gpu.md, "A GPU user's first hour", says what each one means)."""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _label_claims import claimed_pairs, concordance, controls

Row = dict[str, Any]
# (first, second) datasets compared once both exist, under the name of the comparison
COMPARISONS = {"tile_device_vs_host": ("tile_device", "tile_host"),
               "tile_rerun_kept": ("tile_device", "rerun_tile_device"),
               "layout_device_vs_host": ("layout_host", "layout_device")}


def _rows(path: Path) -> tuple[list[Row], list[Row]]:
    from tpugraphs_tools.store import Dataset

    ds = Dataset.open(path)
    return ds.graphs().to_dicts(), ds.configs().to_dicts()


def _half(row: Row) -> float | None:
    low, high, mid = row.get("relative_ci_low"), row.get("relative_ci_high"), \
        row.get("relative_to_default")
    if low is None or high is None or not mid:
        return None
    return (high - low) / 2 / mid


def _apart(row: Row) -> bool:
    low, high = row.get("relative_ci_low"), row.get("relative_ci_high")
    return low is not None and high is not None and not low <= 1.0 <= high


def summarize(path: Path, wall_s: float) -> dict[str, Any]:
    """One dataset's figures: statuses, timers, CIs, A/A, kernel counts, located slots, tiles."""
    graphs, rows = _rows(path)
    ok = [r for r in rows if r["status"] == "ok" and not r["is_default"]]
    halves = [h for r in ok if (h := _half(r)) is not None]
    flags = [v for r in rows if r.get("honoured")
             for slots in json.loads(r["honoured"]).values() for v in slots.values()]
    held, n_controls = controls(rows)
    out: dict[str, Any] = {
        "graphs": len(graphs), "rows": len(rows),
        "status": dict(Counter(str(r["status"]) for r in rows)),
        "timers": dict(Counter(str(r["timer"]) for r in rows if r.get("timer"))),
        "timer_fallback": sorted({r["timer_fallback"][:200] for r in rows
                                  if r.get("timer_fallback")}),
        "ok_labels": len(ok),
        "labels_per_minute": round(60 * len(ok) / wall_s, 1) if wall_s > 0 else None,
        "ci_half_width_median": round(statistics.median(halves), 4) if halves else None,
        "apart_from_default": sum(_apart(r) for r in ok),
        "controls_holding_1": f"{held}/{n_controls}",
        "slots_located": f"{sum(v is not None for v in flags)}/{len(flags)}" if flags else None,
    }
    if any(g.get("collection") == "tile" for g in graphs):
        out["not_as_requested"] = sum(
            json.loads(r.get("realized") or "{}").get("matches_request") is False for r in ok)
        out.update(_kernels(rows))
    return out


def _kernels(rows: list[Row]) -> dict[str, Any]:
    """Per kernel: the default's time per run, kernels per run (device timer), and whether a
    tile moved it beyond the A/A noise floor (a config whose CI excludes 1.0 by more than the
    control's CI half-width)."""
    by_graph: dict[str, list[Row]] = {}
    for r in rows:
        by_graph.setdefault(r["graph_id"], []).append(r)
    defaults_us, launches, spread = [], [], 0
    for part in by_graph.values():
        ok = [r for r in part if r["status"] == "ok" and not r["is_default"]]
        if ok and ok[0].get("default_runtime_ns"):
            defaults_us.append(round(ok[0]["default_runtime_ns"] / 1e3, 2))
        control = [r.get("kernels_per_run") for r in part if r["status"] == "control"]
        launches.append(next((n for n in control if n is not None), None))
        floor = max([h for r in part if r["status"] == "control" and (h := _half(r))],
                    default=0.0)
        spread += any(_apart(r) and abs(r["relative_to_default"] - 1) > floor for r in ok)
    return {"kernels": len(by_graph), "default_us_per_run": defaults_us,
            "default_kernels_per_run": launches,
            "kernels_spread_beyond_noise": f"{spread}/{len(by_graph)}"}


def compare(first: Path, second: Path) -> dict[str, Any]:
    """Claimed orders of ``first`` kept by ``second``, over the graphs and configs both hold
    (same seed: a config index is the same config), and Kendall τ over all their pairs."""
    _, a = _rows(first)
    _, b = _rows(second)
    ids = {r["graph_id"] for r in b}
    a = [r for r in a if r["graph_id"] in ids]
    pairs, claimed, kept = claimed_pairs(a, b, "ci")
    tau = concordance(a, b)
    return {"pairs": pairs, "claimed": claimed, "kept": kept,
            "kendall_tau": None if tau is None else round(tau, 3)}


def comparisons(data: Path) -> dict[str, Any]:
    """Every comparison whose two datasets exist (a damaged one is a finding, not a crash)."""
    out: dict[str, Any] = {}
    for name, (first, second) in COMPARISONS.items():
        if all((data / d / "manifest.json").exists() for d in (first, second)):
            try:
                out[name] = compare(data / first, data / second)
            except Exception as exc:
                out[name] = f"{type(exc).__name__}: {exc}"[:300]
    return out


def _probe_answer(probe: dict[str, Any] | None) -> dict[str, Any]:
    if not isinstance(probe, dict):
        return {"probe": "no probe results"}
    timers: dict[str, Any] = {}
    for part, names in (("timers", ("host", "cupti")), ("profiler", ("profiler",))):
        cases = probe.get(part)
        for case in cases if isinstance(cases, list) else []:
            for name in names:
                got = case.get(name) or {}
                timers.setdefault(name, []).append(
                    "fails" if "error" in got else got.get("ns_per_run"))
    profiler = [c.get("profiler", {}).get("paired_rounds_in_budget")
                for c in probe.get("profiler") or [] if isinstance(c, dict)]
    env = probe.get("environment") or {}
    gpt = probe.get("gpt_kernels") or {}
    return {"timers_ns_per_run": timers, "cuda_versions": env.get("cuda_versions"),
            "profiler_paired_rounds_in_1s": profiler,
            "gpt_kernels_per_run": gpt.get("cupti_kernels_per_run"),
            "gpt_entry_launches": gpt.get("entry_launches"),
            "gpt_kernels_per_run_no_command_buffer": (
                probe.get("gpt_kernels_no_command_buffer") or {}).get("cupti_kernels_per_run"),
            "cold_first_run": (probe.get("cold_first_run") or {}).get("first_over_rest"),
            "probe_parts_done": probe.get("done")}


def answers(datasets: dict[str, Any], compared: dict[str, Any],
            probe: dict[str, Any] | None) -> dict[str, Any]:
    """The headline: what the first window asks, from whatever steps finished."""
    def fig(name: str, key: str) -> Any:
        d = datasets.get(name)
        return d.get(key) if isinstance(d, dict) else None

    return {
        **_probe_answer(probe),
        "tile_timers": {n: fig(n, "timers") for n in ("tile_device", "tile_host")},
        "tile_timer_fallback": fig("tile_device", "timer_fallback"),
        "tile_default_us_per_run": {n: fig(n, "default_us_per_run")
                                    for n in ("tile_device", "tile_host")},
        "tile_default_kernels_per_run": fig("tile_device", "default_kernels_per_run"),
        "tile_kernels_spread_beyond_noise": {n: fig(n, "kernels_spread_beyond_noise")
                                             for n in ("tile_device", "tile_host")},
        "tile_labels_per_minute": {n: fig(n, "labels_per_minute")
                                   for n in ("tile_device", "tile_host")},
        "tile_statuses": fig("tile_device", "status"),
        **compared,
    }
