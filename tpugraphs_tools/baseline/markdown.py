"""Markdown for results: a report's tables, the whole report, and doc subsection updates.

Benchmarks write into ``docs/benchmarks.md``; each benchmark owns one ``### `` subsection of a
``## `` section, so two benchmarks can share a section without overwriting each other.
"""

from __future__ import annotations

import math
import re
from typing import Any

from tpugraphs_tools.baseline.report import BaselineReport, Evaluation

COLUMNS = (("Kendall τ", "kendall_tau"), ("τ sure pairs", "kendall_tau_sure"),
           ("τ ÷ ceiling", "kendall_tau_of_ceiling"),
           ("τ sure ÷ ceiling", "kendall_tau_sure_of_ceiling"), ("OPA", "opa"),
           ("slowdown@1", "slowdown@1"), ("slowdown@5", "slowdown@5"),
           ("top-5 err", "top5_error"), ("Kaggle tile", "kaggle_tile_score"))
CEILING = "noise-ceiling"
NO_CI = "no CI: ceiling unknown"


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.3f}"


def evaluation_title(name: str, evaluation: Evaluation) -> str:
    """One line saying what was held out: programs (graphs per split) or configs."""
    g = evaluation.graphs
    c = evaluation.configs
    if evaluation.holdout == "configs" and c is not None:
        return (f"{name}, held-out configs within each graph: {g['test']} graph(s), "
                f"{c['train']} train / {c['held_out']} held-out configs, split "
                f"{evaluation.split_method}")
    return (f"{name}, held-out programs: {g['train']}/{g['valid']}/{g['test']} "
            f"train/valid/test graphs, split {evaluation.split_method}")


def results_markdown(report: BaselineReport) -> str:
    """One table per collection and evaluation: split × method rows (model first)."""
    out = []
    for name, ev in report.evaluations():
        out.append(f"**{evaluation_title(name, ev)}**, training {ev.train.seconds:.1f} s.\n")
        out.append("| split | method | graphs | " + " | ".join(c for c, _ in COLUMNS) + " |")
        out.append("|---|---|---:|" + "---:|" * len(COLUMNS))
        for split, methods in ev.results.items():
            for method, values in methods.items():
                cells = " | ".join(_fmt(values.get(k)) for _, k in COLUMNS)
                label = {"model": f"**{method}**", CEILING: f"*{method}*"}.get(method, method)
                out.append(f"| {split} | {label} | {int(values.get('graphs', 0))} | {cells} |")
                if method == "model" and CEILING not in methods:
                    out.append(f"| {split} | *{CEILING}* | – | {NO_CI} |"
                               + " |" * (len(COLUMNS) - 1))
        out.append("")
    legend = {m: text for _, ev in report.evaluations() for m, text in ev.methods.items()}
    if legend:
        out.append("Methods:\n")
        out.extend(f"- {method}: {text}" for method, text in legend.items())
        out.append("")
    return "\n".join(out)


def _room(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def headroom_markdown(report: BaselineReport) -> str:
    """Per collection and graph: fastest ÷ default [CI], share faster, spread of the labels."""
    out = []
    for name, section in report.collections.items():
        if not section.headroom:
            continue
        out += [f"**{name}: headroom over the default** "
                f"({section.beats_default().describe()})\n",
                "| graph | program | configs | fastest ÷ default [95% CI] | faster than default "
                "| CI below 1 | p5 – median – p95 |", "|---|---|---:|---:|---:|---:|---:|"]
        for gid, r in section.headroom.items():
            ci = (f" [{r['fastest_low']:.3f}, {r['fastest_high']:.3f}]"
                  if r.get("fastest_low") is not None and r.get("fastest_high") is not None
                  else "")
            surely = r.get("surely_faster_share")
            out.append(f"| {gid} | {r['program']} | {r['configs']} | {r['fastest']:.3f}{ci} | "
                       f"{100 * r['faster_share']:.0f}% | "
                       f"{'–' if surely is None else f'{100 * surely:.0f}%'} | "
                       f"{_room(r['p5'])} – {_room(r['median'])} – {_room(r['p95'])} |")
        out.append("")
    return "\n".join(out)


def report_markdown(report: BaselineReport) -> str:
    """The whole report for a reader: what was scored, how it was split, versions, notes."""
    split = report.split
    versions = ", ".join(f"{k} {v}" for k, v in report.versions.items() if v)
    options = report.options
    layer = options.get("layer", options.get("model"))   # "model": reports of older tgt
    lines = [f"# tgt baseline report: {report.source}", "",
             f"- tgt {report.tgt_version}; {versions}",
             f"- programs split {split.policy} "
             f"{'/'.join(f'{r:g}' for r in split.ratios)} (seed {split.seed}); "
             f"within each graph {split.within_graph_share:g} of the configs held out "
             f"(graphs with ≥ {split.within_graph_min_configs} configs)",
             f"- model {layer}, {options['train']['epochs']} epochs, "
             f"loss {options['train']['loss']}", "",
             results_markdown(report), headroom_markdown(report)]
    for name, reason in report.skipped.items():
        lines.append(f"- {name}: not scored: {reason}")
    for name, section in report.collections.items():
        lines.extend(f"- {name}: {n}" for n in section.all_notes())
    return "\n".join(lines).rstrip() + "\n"


def replace_subsection(text: str, section: str, subsection: str, body: str) -> str:
    """``text`` with ``### subsection`` under ``## section`` set to ``body`` (created if absent).

    Only that subsection changes; the section's other subsections and every other section stay.
    """
    block = f"### {subsection}\n\n{body.strip()}\n"
    sec = re.compile(rf"^## {re.escape(section)}\n.*?(?=^## |\Z)", re.S | re.M)
    match = sec.search(text)
    if match is None:
        return text.rstrip() + f"\n\n## {section}\n\n{block}"
    current = match.group(0)
    sub = re.compile(rf"^### {re.escape(subsection)}\n.*?(?=^### |^## |\Z)", re.S | re.M)
    if sub.search(current):
        updated = sub.sub(lambda _m: block + "\n", current, count=1)
    else:
        updated = current.rstrip() + "\n\n" + block + "\n"
    return text[:match.start()] + updated + text[match.end():]
