"""PNG plots of ``tgt report`` (matplotlib's Agg canvas: no display, no global pyplot state)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tpugraphs_tools.errors import InstallError
from tpugraphs_tools.publish._report_stats import (
    ERROR_STATUSES,
    SKIPPED_STATUSES,
    ProgramStats,
    ReportStats,
)

MAX_PROGRAMS = 30
DPI = 100
_COLOURS = {"ok": "#2e7d32", **{s: "#9e9e9e" for s in SKIPPED_STATUSES},
            **{s: "#c62828" for s in ERROR_STATUSES}}


def _matplotlib() -> tuple[Any, Any, Any]:
    """(Figure, FigureCanvasAgg, MaxNLocator), or a clear error naming the extra to install."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise InstallError("tgt report needs matplotlib: pip install 'tpugraphs-tools[publish]'"
                           ) from None
    return Figure, FigureCanvasAgg, MaxNLocator


def _empty(ax: Any, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _top(programs: list[ProgramStats], key: Callable[[ProgramStats], float]
         ) -> list[ProgramStats]:
    """The programs worth a row when there are too many to draw."""
    return sorted(programs, key=key, reverse=True)[:MAX_PROGRAMS]


def relative_runtime(stats: ReportStats, ax: Any) -> None:
    shown = _top([p for p in stats.programs if p.relative_box],
                 lambda p: p.relative_box.count if p.relative_box else 0)
    if not shown:
        _empty(ax, "measured non-default configs")
        return
    shown.sort(key=lambda p: p.program, reverse=True)
    boxes = [p.relative_box for p in shown if p.relative_box]
    ax.bxp([b.bxp(p.program) for p, b in zip(shown, boxes, strict=True)],
           orientation="horizontal", showfliers=True)
    ax.axvline(1.0, color="#c62828", linestyle="--", linewidth=1, label="default")
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda v, _pos: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    if max(b.high for b in boxes) / min(b.low for b in boxes) < 50:  # few decades: label
        ax.xaxis.set_minor_formatter(plain)                           # the 2..9 ticks too
    ax.set_xlabel("runtime / default runtime (log scale; < 1 is faster)")
    ax.legend(loc="lower right")


def best_speedup(stats: ReportStats, ax: Any) -> None:
    shown = _top([p for p in stats.programs if p.best_speedup], lambda p: p.best_speedup or 0)
    if not shown:
        _empty(ax, "measured non-default configs")
        return
    shown.sort(key=lambda p: p.best_speedup or 0)
    values = [p.best_speedup or 0 for p in shown]
    ax.barh([p.program for p in shown], values,
            color=["#2e7d32" if v > 1 else "#9e9e9e" for v in values])
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xlabel("best speed-up over the default (default runtime / best runtime)")


def status_counts(stats: ReportStats, ax: Any) -> None:
    if not stats.statuses:
        _empty(ax, "configs")
        return
    names = list(stats.statuses)
    values = [stats.statuses[n] for n in names]
    bars = ax.bar(names, values, color=[_COLOURS.get(n, "#1565c0") for n in names])
    ax.bar_label(bars)
    ax.set_ylabel("configs")
    ax.tick_params(axis="x", rotation=30)


def graph_sizes(stats: ReportStats, ax: Any) -> None:
    sizes = np.asarray(stats.num_nodes, dtype=np.float64)
    if not sizes.size:
        _empty(ax, "graphs")
        return
    lo, hi = max(sizes.min(), 1), max(sizes.max(), 2)
    if hi / lo > 20:
        ax.hist(sizes, bins=np.geomspace(lo, hi * 1.01, 30), color="#1565c0")
        ax.set_xscale("log")
    else:
        ax.hist(sizes, bins=min(30, max(5, sizes.size)), color="#1565c0")
    ax.set_xlabel("nodes per graph")
    ax.set_ylabel("graphs")


def configs_per_graph(stats: ReportStats, ax: Any) -> None:
    total = np.asarray(stats.configs_per_graph)
    if not total.size:
        _empty(ax, "graphs")
        return
    top = max(int(total.max()), 1)
    bins = np.linspace(0, top + 1, min(30, top + 2))
    ax.hist([total, np.asarray(stats.ok_per_graph)], bins=bins, label=["all rows", "ok"],
            color=["#90caf9", "#2e7d32"])
    ax.set_xlabel("configs per graph")
    ax.set_ylabel("graphs")
    ax.legend()


PLOTS: list[tuple[str, str, str, Callable[[ReportStats, Any], None]]] = [
    ("relative_runtime.png", "Runtime relative to the default config, per program",
     "One box per program over its ok, non-default configs; left of the dashed line is faster "
     f"than the compiler default. At most {MAX_PROGRAMS} programs (most measured configs).",
     relative_runtime),
    ("best_speedup.png", "Best speed-up found, per program",
     "Default runtime over the fastest config's; green bars beat the default.", best_speedup),
    ("status_counts.png", "Configs per status (errors and no-ops included)",
     "Green: measured; grey: no-op or duplicate of an earlier config (not timed); red: "
     "failures (compile/runtime errors, timeouts, crashes, wrong results).", status_counts),
    ("graph_sizes.png", "Graph size", "Nodes (HLO instructions) per graph.", graph_sizes),
    ("configs_per_graph.png", "Configs per graph",
     "Config rows per graph (all statuses) and how many of them were measured (ok).",
     configs_per_graph),
]


def write_plots(stats: ReportStats, folder: Path) -> list[tuple[str, str, str]]:
    """Draw every plot into ``folder``; returns (file name, title, caption) in page order."""
    figure, canvas, integer_ticks = _matplotlib()
    rows = max(3, min(MAX_PROGRAMS, len(stats.programs)))
    written = []
    for name, title, caption, draw in PLOTS:
        height = 1.2 + 0.3 * rows if name in ("relative_runtime.png", "best_speedup.png") else 4
        fig = figure(figsize=(9, height), dpi=DPI, layout="constrained")
        canvas(fig)
        ax = fig.add_subplot()
        ax.set_title(title)
        draw(stats, ax)
        if name in ("graph_sizes.png", "configs_per_graph.png", "status_counts.png"):
            ax.yaxis.set_major_locator(integer_ticks(integer=True))
        fig.savefig(folder / name, format="png")
        written.append((name, title, caption))
    return written
