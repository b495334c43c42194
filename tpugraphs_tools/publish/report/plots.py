"""PNG plots of ``tgt report`` (matplotlib's Agg canvas: no display, no global pyplot state)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tpugraphs_tools.errors import InstallError
from tpugraphs_tools.publish.report.ci_plots import (
    MAX_GRAPHS,
    MAX_LABEL_GRAPHS,
    around_one,
    empty,
    fastest_per_graph,
    labels_per_graph,
)
from tpugraphs_tools.publish.report.stats import (
    ERROR_STATUSES,
    MAX_BOXES,
    SKIPPED_STATUSES,
    ProgramStats,
    ReportStats,
)

MAX_PROGRAMS = MAX_BOXES  # the box plot's rows: the programs that have quartiles
MAX_GRAPH_BARS = 40
DPI = 100
_COLOURS = {"ok": "#2e7d32", **{s: "#9e9e9e" for s in SKIPPED_STATUSES},
            **{s: "#c62828" for s in ERROR_STATUSES}, "control": "#90caf9",
            "repeat": "#90caf9"}


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


def _top(programs: list[ProgramStats], key: Callable[[ProgramStats], float]
         ) -> list[ProgramStats]:
    """The programs worth a row when there are too many to draw."""
    return sorted(programs, key=key, reverse=True)[:MAX_PROGRAMS]


def relative_runtime(stats: ReportStats, ax: Any) -> None:
    shown = _top([p for p in stats.programs if p.relative_box],
                 lambda p: p.relative_box.count if p.relative_box else 0)
    if not shown:
        empty(ax, "measured non-default configs")
        return
    shown.sort(key=lambda p: p.program, reverse=True)
    boxes = [p.relative_box for p in shown if p.relative_box]
    ax.bxp([b.bxp(p.program) for p, b in zip(shown, boxes, strict=True)],
           orientation="horizontal", showfliers=True)
    # named in the axis label: a legend in the axes can cover a box or a whisker
    ax.axvline(1.0, color="#c62828", linestyle="--", linewidth=1)
    around_one(ax, [v for b in boxes for v in (b.low, b.high, *b.fliers)], stats.noise_floor)
    ax.set_xlabel("runtime / default runtime (dashed: the default; < 1 is faster)")


def status_counts(stats: ReportStats, ax: Any) -> None:
    if not stats.statuses:
        empty(ax, "configs")
        return
    names = list(stats.statuses)
    values = [stats.statuses[n] for n in names]
    bars = ax.bar(names, values, color=[_COLOURS.get(n, "#1565c0") for n in names])
    ax.bar_label(bars)
    ax.margins(y=0.12)  # room for the top bar's count under the title
    ax.set_ylabel("rows")
    ax.tick_params(axis="x", rotation=30)


def graph_sizes(stats: ReportStats, ax: Any) -> None:
    sizes = np.asarray(stats.num_nodes, dtype=np.float64)
    if not sizes.size:
        empty(ax, "graphs")
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
    """One stacked bar per graph while they fit, else histograms with one bin per count."""
    from matplotlib.ticker import MaxNLocator

    total = np.asarray(stats.configs_per_graph)
    if not total.size:
        empty(ax, "graphs")
        return
    labels = np.asarray(stats.ok_per_graph)
    controls = np.asarray(stats.controls_per_graph or [0] * total.size)
    if total.size <= MAX_GRAPH_BARS:
        rows = np.arange(total.size)
        ax.barh(rows, labels, color="#2e7d32", label="labels (ok configs)")
        ax.barh(rows, total - labels, left=labels, color="#9e9e9e",
                label="other configs (no-op, duplicate, failed)")
        ax.barh(rows, controls, left=total, color="#90caf9", label="control rows")
        ax.set_yticks(rows, stats.graph_ids, fontsize="small")
        ax.invert_yaxis()
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("rows per graph")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
                  fontsize="small")
        return
    top = max(int(total.max()), 1)
    bins = np.arange(-0.5, top + 1.5) if top < 60 else np.linspace(0, top + 1, 31)
    ax.hist([total, labels], bins=bins, label=["configs", "labels (ok)"],
            color=["#90caf9", "#2e7d32"])
    ax.set_xlabel("configs per graph")
    ax.set_ylabel("graphs")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


PLOTS: list[tuple[str, str, str, Callable[[ReportStats, Any], None]]] = [
    ("fastest_per_graph.png", "Fastest config ÷ default, per graph, with its 95% CI",
     "Green: the whole CI below 1 (faster than the default); red: above 1 (slower); grey: "
     "the CI holds 1, not resolved; hollow: no CI. The shaded band is the A/A noise floor "
     f"(median half-width of the A/A controls' CIs). At most {MAX_GRAPHS} graphs, evenly "
     "spaced by fastest ÷ default.", fastest_per_graph),
    ("labels_per_graph.png", "Every label of a graph with its 95% CI",
     "One band per graph: its ok non-default configs' labels (up to 60, evenly spaced by "
     "label), each with its CI, coloured as above, against the A/A noise floor. At most "
     f"{MAX_LABEL_GRAPHS} graphs.", labels_per_graph),
    ("relative_runtime.png", "Runtime relative to the default config, per program",
     "One box per program over its ok, non-default configs; left of the dashed line is faster "
     f"than the compiler default. At most {MAX_PROGRAMS} programs (most measured configs).",
     relative_runtime),
    ("status_counts.png", "Rows per status (errors, no-ops and control rows included)",
     "Green: measured; grey: no-op or duplicate of an earlier config (not timed); red: "
     "failures (compile/runtime errors, timeouts, crashes, wrong results); blue: control "
     "rows (A/A controls, repeats), which are not configs.", status_counts),
    ("graph_sizes.png", "Graph size", "Nodes (HLO instructions) per graph.", graph_sizes),
    ("configs_per_graph.png", "Configs per graph",
     "Per graph: labels (ok configs), the other configs (no-op, duplicate, failed) and the "
     f"control rows; above {MAX_GRAPH_BARS} graphs, histograms of configs and labels per "
     "graph.", configs_per_graph),
]


def _height(name: str, stats: ReportStats) -> float:
    """Inches: room for each row's label and marks."""
    graphs = sum(1 for g in stats.labels if g.headroom is not None)
    rows = {"relative_runtime.png": (min(MAX_PROGRAMS, len(stats.programs)), 0.3),
            "fastest_per_graph.png": (min(MAX_GRAPHS, graphs), 0.3),
            "labels_per_graph.png": (min(MAX_LABEL_GRAPHS, graphs), 0.6),
            "configs_per_graph.png": (stats.graphs if stats.graphs <= MAX_GRAPH_BARS else 0,
                                      0.3)}
    count, each = rows.get(name, (0, 0.0))
    return max(4.0, 1.4 + each * count)


def write_plots(stats: ReportStats, folder: Path) -> list[tuple[str, str, str]]:
    """Draw every plot into ``folder``; returns (file name, title, caption) in page order."""
    figure, canvas, integer_ticks = _matplotlib()
    written = []
    for name, title, caption, draw in PLOTS:
        height = _height(name, stats)
        fig = figure(figsize=(9, height), dpi=DPI, layout="constrained")
        canvas(fig)
        ax = fig.add_subplot()
        ax.set_title(title)
        draw(stats, ax)
        if name in ("graph_sizes.png", "status_counts.png"):
            ax.yaxis.set_major_locator(integer_ticks(integer=True))
        fig.savefig(folder / name, format="png")
        written.append((name, title, caption))
    return written
