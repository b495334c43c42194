"""The report page: one self-contained HTML file next to its PNGs (works offline)."""

from __future__ import annotations

from html import escape

from tpugraphs_tools.publish._report_stats import ReportStats

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
    head = ("<tr><th>program</th><th>graphs</th><th>configs</th><th>ok</th>"
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


def report_html(title: str, stats: ReportStats, plots: list[tuple[str, str, str]],
                facts: dict[str, str]) -> str:
    """The page; ``plots`` are (png file name, title, caption), ``facts`` provenance lines."""
    cards = {"graphs": stats.graphs, "configs": stats.configs,
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
        f"<div class=\"cards\">{card_html}</div><ul>{fact_html}</ul>{figures}"
        f"<h2>Per program</h2>{_noise_line(stats)}{_program_table(stats)}"
        "<p class=\"muted\">Relative runtime: ok, non-default configs (runtime over the "
        "default's runtime in the same timing window). Median CI ±: half-width of the labels' "
        "95% confidence intervals. Pairs told apart: config pairs of one graph (the default "
        "included) whose CIs are disjoint. Best speed-up: default runtime over the "
        "fastest config's.</p></body></html>\n"
    )
