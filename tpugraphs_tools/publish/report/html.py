"""The report page: one self-contained HTML file next to its PNGs (works offline)."""

from __future__ import annotations

from html import escape

from tpugraphs_tools.publish.report.labels import GraphLabels, pooled_ceiling
from tpugraphs_tools.publish.report.stats import ReportStats
from tpugraphs_tools.store import Headroom, NoiseCeiling

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1000px; color: #222; }
h1 { margin-bottom: 0.2rem; } .muted { color: #666; }
.cards { display: flex; gap: 1rem; flex-wrap: wrap; margin: 1rem 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 0.6rem 1rem; min-width: 8rem; }
.card b { display: block; font-size: 1.4rem; }
figure { margin: 1.5rem 0; } figure img { max-width: 100%; border: 1px solid #eee; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #eee; padding: 0.25rem 0.5rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
"""


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}g}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f}%"


def _noise_line(stats: ReportStats) -> str:
    """The dataset's noise floor: how far identical programs' labels drift apart."""
    if not stats.controls:
        return ""
    return (f"<p><b>Noise floor</b>: every timed batch also timed an independent copy of the "
            f"default (A/A control); its 95% CI held 1.0 in {stats.controls_held}/"
            f"{stats.controls} batches, median half-width ±{_pct(stats.noise_floor)}. "
            "Label differences below that are not resolved." + _apart_sentence(stats) + "</p>")


def _apart(pairs: int, separated: int) -> str:
    return f"{separated}/{pairs} ({100 * separated / pairs:.0f}%)" if pairs else "–"


def _apart_sentence(stats: ReportStats) -> str:
    """How much ranking the labels carry: config pairs whose 95% CIs are disjoint."""
    if not stats.pairs:
        return ""
    return (f" Within a graph, {_apart(stats.pairs, stats.pairs_separated)} of the config "
            "pairs have disjoint 95% CIs: those are the orders the labels claim.")


def _program_table(stats: ReportStats) -> str:
    head = ("<tr><th>program</th><th>graphs</th><th>configs</th><th>labels</th>"
            "<th>no-op / duplicate</th><th>errors</th><th>median runtime / default</th>"
            "<th>best speed-up</th><th>median CI ±</th><th>pairs told apart</th>"
            "<th>A/A control holds 1.0</th>"
            "<th>noise floor ±</th></tr>")
    rows = "".join(
        f"<tr><td>{escape(p.program)}</td><td>{p.graphs}</td><td>{p.configs}</td>"
        f"<td>{p.ok}</td><td>{p.skipped}</td><td>{p.errors}</td>"
        f"<td>{_fmt(p.median_relative)}</td><td>{_fmt(p.best_speedup)}</td>"
        f"<td>{_pct(p.ci_half_width)}</td><td>{_apart(p.pairs, p.pairs_separated)}</td>"
        f"<td>{f'{p.controls_held}/{p.controls}' if p.controls else '–'}</td>"
        f"<td>{_pct(p.noise_floor)}</td></tr>"
        for p in stats.programs)
    return f"<table>{head}{rows}</table>"


NO_CI = "no CI: ceiling unknown"


def _tau(value: float) -> str:
    return "–" if value != value else f"{value:.3f}"   # NaN: no pair to score


def _ceiling_cells(ceiling: NoiseCeiling | None) -> str:
    if ceiling is None:
        return f'<td colspan="2">{NO_CI}</td>'
    return f"<td>{_tau(ceiling.kendall_tau)}</td><td>{_tau(ceiling.kendall_tau_sure)}</td>"


def _headroom_cells(room: Headroom | None) -> str:
    if room is None:
        return '<td colspan="5">no labelled non-default config</td>'
    ci = (f" [{room.fastest_low:.3f}, {room.fastest_high:.3f}]"
          if room.fastest_low is not None and room.fastest_high is not None else "")
    surely = _pct(room.surely_faster_share)
    return (f"<td>{room.configs}</td><td>{room.fastest:.3f}{ci}</td>"
            f"<td>{_pct(room.faster_share)}</td><td>{surely}</td>"
            f"<td>{room.p5:.3f} – {room.median:.3f} – {room.p95:.3f}</td>")


def _pooled_line(labels: list[GraphLabels]) -> str:
    pooled = pooled_ceiling(labels)
    if pooled is None:
        return ""
    if not pooled.graphs:
        return f"<p><b>Noise ceiling</b>: {NO_CI} (the labels carry no confidence intervals).</p>"
    unknown = f"; {pooled.unknown} graph(s) without CIs left out" if pooled.unknown else ""
    return (f"<p><b>Noise ceiling</b>: two independent measurements of the same configs "
            f"would agree with Kendall τ {_tau(pooled.kendall_tau)} (over the pairs whose CIs "
            f"are disjoint: {_tau(pooled.kendall_tau_sure)}), mean of {pooled.graphs} "
            f"graph(s){unknown}. A cost model scored on these labels cannot be expected to "
            "do better.</p>")


def headline(stats: ReportStats) -> str:
    """The page's first claim, held to the labels' CIs: a graph counts as having a faster
    config only when some config's whole 95% CI lies below 1."""
    counted = stats.beats_default()
    if not counted.graphs:
        return ""
    unsure = (f" {counted.unknown} of them carry no CIs, so whether they have one is not known."
              if counted.unknown else "")
    return (f"<p><b>Headroom</b>: a config beats the default (its whole 95% CI below 1) in "
            f"<b>{counted.beaten}/{counted.graphs}</b> graphs with measured configs.{unsure} "
            "A label whose CI holds 1 is not counted, whichever side of 1 it falls on.</p>")


def labels_table(labels: list[GraphLabels]) -> str:
    """Per graph: headroom over the default and the noise ceiling (section of the page)."""
    if not labels:
        return ""
    head = ("<tr><th>graph</th><th>program</th><th>non-default labels</th>"
            "<th>fastest ÷ default [95% CI]</th><th>faster than default</th>"
            "<th>CI below 1</th><th>p5 – median – p95</th><th>ceiling τ</th>"
            "<th>ceiling τ, sure pairs</th></tr>")
    rows = "".join(
        f"<tr><td>{escape(g.graph_id)}</td><td>{escape(g.program)}</td>"
        f"{_headroom_cells(g.headroom)}{_ceiling_cells(g.ceiling)}</tr>" for g in labels)
    return (f"<h2>Per graph: headroom and noise ceiling</h2>{_pooled_line(labels)}"
            f"<table>{head}{rows}</table>"
            "<p class=\"muted\">Headroom over ok non-default configs' labels (runtime ÷ "
            "default): the fastest one with its 95% CI (a config is faster than the default "
            "only when its whole CI lies below 1), the share with a label below 1, the share "
            "whose whole CI lies below 1, and the "
            "spread of the labels. Ceiling τ: the Kendall τ expected between two independent "
            "measurements of the graph's configs, each label drawn normal on the log scale "
            "with the standard error its CI gives; sure pairs: the pairs whose CIs are "
            "disjoint.</p>")


def _failures_table(stats: ReportStats) -> str:
    """Failed config rows counted by reason (status and the first line that says why)."""
    if not stats.failures:
        return ""
    rows = "".join(f"<tr><td>{n}</td><td>{escape(reason)}</td></tr>"
                   for reason, n in stats.failures.items())
    return ("<h2>Failures by reason</h2><table><tr><th>configs</th><th>reason</th></tr>"
            f"{rows}</table><p class=\"muted\">The whole output of the compile and "
            "measurement workers is in the dataset's .tgt-logs/collect.log.</p>")


def report_html(title: str, stats: ReportStats, plots: list[tuple[str, str, str]],
                facts: dict[str, str]) -> str:
    """The page; ``plots`` are (png file name, title, caption), ``facts`` provenance lines."""
    cards = {"graphs": stats.graphs, "configs": stats.counts.configs,
             "labels": stats.counts.labels, "control rows": stats.counts.control_rows,
             "programs": len(stats.programs),
             **{f"{k} graphs": v for k, v in stats.collections.items()},
             **{f"status {k}": v for k, v in stats.statuses.items()}}
    card_html = "".join(f'<div class="card"><b>{v}</b>{escape(k)}</div>'
                        for k, v in cards.items())
    figures = "".join(
        f'<figure><img src="{escape(name)}" alt="{escape(plot_title)}">'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
        for name, plot_title, caption in plots)
    fact_html = "".join(f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in facts.items())
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><p class=\"muted\">tgt dataset report</p>"
        f"<div class=\"cards\">{card_html}</div>{headline(stats)}<ul>{fact_html}</ul>"
        f"{figures}"
        f"<h2>Per program</h2>{_noise_line(stats)}{_program_table(stats)}"
        "<p class=\"muted\">Configs: one per configuration tried, the default included, any "
        "status; labels: the ok ones (a measured runtime each); control rows (A/A controls, "
        "repeats) are timing checks, not configs. "
        "Relative runtime: ok, non-default configs (runtime over the "
        "default's runtime in the same timing window). Median CI ±: half-width of the labels' "
        "95% confidence intervals. Pairs told apart: config pairs of one graph (the default "
        "included) whose CIs are disjoint. Best speed-up: default runtime over the "
        f"fastest config's.</p>{labels_table(stats.labels)}{_failures_table(stats)}"
        "</body></html>\n"
    )
