"""Which config orders a collection claims and whether a rerun keeps them, for the label
benchmarks (bench_labels.py, bench_label_cost.py): computed from saved config rows, so a
report can be rebuilt from runs saved long ago.

Pairs are only formed inside one graph (a tile collection stores one graph per kernel, each
with its own default); rows without a ``graph_id`` belong to one graph."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

Row = dict[str, Any]
Key = tuple[Any, int]  # (graph_id, config_index)


def ok_labels(rows: Iterable[Row]) -> dict[Key, Row]:
    """The ok rows (labels, the default included) by (graph, config index)."""
    return {(r.get("graph_id"), r["config_index"]): r for r in rows if r["status"] == "ok"}


def has_ci(row: Row) -> bool:
    return row.get("relative_ci_low") is not None and row.get("relative_ci_high") is not None


def _claims(x: Row, y: Row, rule: str) -> bool:
    """Does a run claim the order of x and y? ``ci``: their 95% CIs are disjoint (touching is
    not), as ``collect.labels.separated_pairs`` counts them; ``cv``: the old fixed engine's
    rule, |Δ| > 2 × the larger CV of the two relative runtimes."""
    if rule == "ci":
        if not (has_ci(x) and has_ci(y)):
            return False
        return x["relative_ci_high"] < y["relative_ci_low"] or \
            y["relative_ci_high"] < x["relative_ci_low"]
    cv = max(x.get("runtime_cv") or 0, y.get("runtime_cv") or 0)
    rx, ry = x["relative_to_default"], y["relative_to_default"]
    return bool(abs(rx - ry) > 2 * cv * max(rx, ry))


def _common_pairs(a: dict[Key, Row], b: dict[Key, Row]) -> Iterable[tuple[Key, Key]]:
    """Pairs of configs of one graph that are ok in both runs."""
    common = sorted(set(a) & set(b), key=lambda k: (str(k[0]), k[1]))
    for i, j in itertools.combinations(common, 2):
        if i[0] == j[0]:
            yield i, j


def claimed_pairs(first: Sequence[Row], rerun: Sequence[Row], rule: str) -> tuple[int, int, int]:
    """(pairs, pairs whose order the first run claims, claimed orders the rerun keeps), over
    the configs ok in both runs."""
    la, lb = ok_labels(first), ok_labels(rerun)
    pairs = claimed = kept = 0
    for i, j in _common_pairs(la, lb):
        pairs += 1
        if not _claims(la[i], la[j], rule):
            continue
        claimed += 1
        d1 = la[i]["relative_to_default"] - la[j]["relative_to_default"]
        d2 = lb[i]["relative_to_default"] - lb[j]["relative_to_default"]
        kept += int(np.sign(d1) == np.sign(d2))
    return pairs, claimed, kept


def concordance(first: Sequence[Row], rerun: Sequence[Row]) -> float | None:
    """Kendall τ (τ-a) of two runs' relative runtimes over the pairs of configs of one graph:
    (concordant − discordant) / pairs. None with no pair."""
    la, lb = ok_labels(first), ok_labels(rerun)
    total = score = 0
    for i, j in _common_pairs(la, lb):
        total += 1
        score += int(np.sign(la[i]["relative_to_default"] - la[j]["relative_to_default"])
                     * np.sign(lb[i]["relative_to_default"] - lb[j]["relative_to_default"]))
    return score / total if total else None


def controls(rows: Iterable[Row]) -> tuple[int, int]:
    """(A/A control rows whose CI holds 1.0, control rows)."""
    got = [r for r in rows if r["status"] == "control" and has_ci(r)]
    return sum(1 for r in got if r["relative_ci_low"] <= 1.0 <= r["relative_ci_high"]), len(got)
