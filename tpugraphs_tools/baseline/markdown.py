"""Markdown for results: a report's comparison table and in-place doc subsection updates.

Benchmarks write into ``docs/benchmarks.md``; each benchmark owns one ``### `` subsection of a
``## `` section, so two benchmarks can share a section without overwriting each other.
"""

from __future__ import annotations

import math
import re
from typing import Any

COLUMNS = (("Kendall τ", "kendall_tau"), ("OPA", "opa"), ("slowdown@1", "slowdown@1"),
           ("slowdown@5", "slowdown@5"), ("top-5 err", "top5_error"),
           ("Kaggle tile", "kaggle_tile_score"))


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.3f}"


def results_markdown(report: dict[str, Any]) -> str:
    """One table per collection: split × method rows (model first, then trivial rankers)."""
    out = []
    for name, section in report["collections"].items():
        g = section["graphs"]
        out.append(f"**{name}** — {g['train']} train / {g['valid']} valid / {g['test']} test "
                   f"graphs, split {section['split_method']}, training "
                   f"{section['train']['seconds']:.1f} s.\n")
        out.append("| split | method | graphs | " + " | ".join(c for c, _ in COLUMNS) + " |")
        out.append("|---|---|---:|" + "---:|" * len(COLUMNS))
        for split, methods in section["results"].items():
            for method, values in methods.items():
                cells = " | ".join(_fmt(values.get(k)) for _, k in COLUMNS)
                label = f"**{method}**" if method == "model" else method
                out.append(f"| {split} | {label} | {int(values.get('graphs', 0))} | {cells} |")
        out.append("")
    return "\n".join(out)


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
