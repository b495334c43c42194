"""The report's plots of labels with their 95% CIs, against the A/A noise floor.

A label is "faster than the default" only when its whole CI lies below 1 (slower: above 1);
one whose CI holds 1 is not resolved, whatever side its point falls on. Axes span the data
around 1, not 0, so a 1% difference is visible.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpugraphs_tools.publish.report.labels import GraphLabels
from tpugraphs_tools.publish.report.stats import ReportStats

MAX_GRAPHS = 40        # rows of the fastest-config forest plot
MAX_LABEL_GRAPHS = 20  # rows of the all-labels plot
FASTER, UNRESOLVED, SLOWER, NO_CI = "#2e7d32", "#757575", "#c62828", "#9e9e9e"
FLOOR = "#ffcc80"


def empty(ax: Any, what: str) -> None:
    """A plot with nothing to draw says so."""
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def certainty(low: float | None, high: float | None) -> str:
    """The colour of a label by what its CI says about it against the default."""
    if low is None or high is None or np.isnan(low) or np.isnan(high):
        return NO_CI
    return FASTER if high < 1.0 else SLOWER if low > 1.0 else UNRESOLVED


def evenly(items: list[Any], limit: int) -> list[Any]:
    """At most ``limit`` of ``items`` (sorted by the caller), evenly spaced, ends kept."""
    if len(items) <= limit:
        return items
    return [items[i] for i in np.unique(np.linspace(0, len(items) - 1, limit).round()
                                        .astype(int))]


def around_one(ax: Any, values: list[float], floor: float | None) -> None:
    """An x axis over the values, 1 and the noise floor band, ticked finely enough that a 1%
    difference shows (log scale only when the values span more than 3×)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator

    finite = [v for v in values if v is not None and np.isfinite(v) and v > 0]
    band = floor or 0.0
    lo, hi = min([*finite, 1 - band, 0.995]), max([*finite, 1 + band, 1.005])
    if hi / lo > 3:
        ax.set_xscale("log")
        ax.set_xlim(lo / 1.1, hi * 1.1)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        return
    pad = 0.08 * (hi - lo)
    ax.set_xlim(lo - pad, hi + pad)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=9, steps=[1, 2, 2.5, 5, 10]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.3f}"))
    if hi - lo <= 0.3:
        ax.xaxis.set_minor_locator(MultipleLocator(0.01 if hi - lo > 0.03 else 0.001))
    ax.grid(axis="x", which="major", color="#e0e0e0", linewidth=0.8)
    ax.set_axisbelow(True)


def _reference(ax: Any, floor: float | None) -> list[Any]:
    """The line at 1 and the noise floor band; their legend handles."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Line2D([], [], color="black", linewidth=1, label="default (1)")]
    ax.axvline(1.0, color="black", linewidth=1)
    if floor:
        ax.axvspan(1 - floor, 1 + floor, color=FLOOR, alpha=0.5, linewidth=0)
        handles.append(Patch(color=FLOOR, alpha=0.5,
                             label=f"A/A noise floor ±{100 * floor:.2f}%"))
    return handles


def _legend(ax: Any, handles: list[Any], colours: set[str]) -> None:
    """Beside the axes, never over the data."""
    from matplotlib.lines import Line2D

    words = {FASTER: "CI below 1: faster", UNRESOLVED: "CI holds 1: not resolved",
             SLOWER: "CI above 1: slower", NO_CI: "no CI"}
    handles += [Line2D([], [], color=c, marker="o", label=w) for c, w in words.items()
                if c in colours]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
              fontsize="small")


def _graph_axis(ax: Any, shown: list[GraphLabels]) -> None:
    ax.set_yticks(range(len(shown)), [g.graph_id for g in shown], fontsize="small")
    ax.set_ylim(-0.7, len(shown) - 0.3)
    ax.invert_yaxis()


def _graphs_to_draw(ax: Any, graphs: list[GraphLabels], limit: int) -> list[GraphLabels]:
    """At most ``limit`` graphs, evenly spread from the fastest headroom up; none drawn: the
    axes say so."""
    if not graphs:
        empty(ax, "labelled non-default configs")
        return []
    return evenly(sorted(graphs, key=lambda g: g.headroom.fastest if g.headroom else 0.0),
                  limit)


def fastest_per_graph(stats: ReportStats, ax: Any) -> None:
    """Forest plot: each graph's fastest config ÷ default with its 95% CI."""
    shown = _graphs_to_draw(ax, [g for g in stats.labels if g.headroom is not None],
                            MAX_GRAPHS)
    if not shown:
        return
    handles = _reference(ax, stats.noise_floor)
    colours, values = set(), []
    for row, g in enumerate(shown):
        room = g.headroom
        assert room is not None
        colour = certainty(room.fastest_low, room.fastest_high)
        colours.add(colour)
        values.append(room.fastest)
        if room.fastest_low is not None and room.fastest_high is not None:
            values += [room.fastest_low, room.fastest_high]
            ax.errorbar(room.fastest, row, xerr=[[room.fastest - room.fastest_low],
                                                 [room.fastest_high - room.fastest]],
                        fmt="o", color=colour, capsize=3, markersize=5)
        else:
            ax.plot(room.fastest, row, "o", color=colour, markerfacecolor="none")
    _graph_axis(ax, shown)
    around_one(ax, values, stats.noise_floor)
    ax.set_xlabel("fastest config ÷ default, with its 95% CI (< 1 is faster)")
    _legend(ax, handles, colours)


def labels_per_graph(stats: ReportStats, ax: Any) -> None:
    """Every (sampled) non-default label of a graph with its CI, one band per graph."""
    shown = _graphs_to_draw(
        ax, [g for g in stats.labels if g.points is not None and len(g.points)],
        MAX_LABEL_GRAPHS)
    if not shown:
        return
    handles = _reference(ax, stats.noise_floor)
    colours: set[str] = set()
    values: list[float] = []
    for row, g in enumerate(shown):
        points = g.points
        assert points is not None
        label, low, high = points[:, 0], points[:, 1], points[:, 2]
        offsets = row + (np.linspace(-0.35, 0.35, len(label)) if len(label) > 1
                         else np.zeros(1))
        colour = [certainty(lo, hi) for lo, hi in zip(low, high, strict=True)]
        colours.update(colour)
        has_ci = ~(np.isnan(low) | np.isnan(high))
        ax.hlines(offsets[has_ci], low[has_ci], high[has_ci],
                  colors=[c for c, k in zip(colour, has_ci, strict=True) if k], linewidth=1)
        ax.scatter(label, offsets, c=colour, s=9, zorder=3)
        if row:
            ax.axhline(row - 0.5, color="#e0e0e0", linewidth=0.8)
        values += [*label, *low[has_ci], *high[has_ci]]
    _graph_axis(ax, shown)
    around_one(ax, values, stats.noise_floor)
    ax.set_xlabel("config ÷ default, with its 95% CI (< 1 is faster)")
    _legend(ax, handles, colours)
