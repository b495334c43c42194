"""Train/valid/test assignment by group (program or fingerprint) so nothing leaks across splits.

TpuGraphs holds out whole programs; a model that saw another lowering of the same program in
training would be scored on a memorised graph. Splits already in graphs.parquet are kept, and
the rest of their group follows them. This is the one split policy of tgt: ``tgt export``,
``tgt publish`` and ``tgt baseline`` all call :func:`assign_splits`. The default 80/10/10 of
the groups is the proportion of TpuGraphs' own train/valid/test folders.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format._tree import SPLITS

SPLIT_BY = ("program", "fingerprint")
DEFAULT_RATIOS = (0.8, 0.1, 0.1)


@dataclass
class SplitPlan:
    """graph_id → split, plus groups whose stored splits already disagree."""

    splits: dict[str, str]
    conflicts: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        found = Counter(self.splits.values())
        return {s: found.get(s, 0) for s in SPLITS}


def parse_ratios(text: str) -> tuple[float, float, float]:
    """``"0.8,0.1,0.1"`` → normalised (train, valid, test) fractions."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"ratios {text!r}: expected three numbers like 0.8,0.1,0.1") from None
    if len(values) != 3 or any(v < 0 for v in values) or sum(values) <= 0:
        raise ValueError(f"ratios {text!r}: expected three non-negative numbers with a "
                         "positive sum (train,valid,test)")
    total = sum(values)
    return (values[0] / total, values[1] / total, values[2] / total)


def group_quotas(groups: int, ratios: tuple[float, float, float]) -> list[int]:
    """Groups per split: largest remainders, and at least one per non-zero ratio if possible."""
    raw = [r * groups for r in ratios]
    quotas = [int(x) for x in raw]
    order = sorted(range(3), key=lambda i: (raw[i] - quotas[i], -i), reverse=True)
    for i in order[: groups - sum(quotas)]:
        quotas[i] += 1
    wanted = [i for i in range(3) if ratios[i] > 0]
    if groups >= len(wanted):
        for i in wanted:
            if quotas[i] == 0:
                donor = max(range(3), key=lambda j: quotas[j])
                quotas[donor] -= 1
                quotas[i] += 1
    return quotas


def assign_splits(graphs: pl.DataFrame, by: str = "program", seed: int = 0,
                  ratios: tuple[float, float, float] = DEFAULT_RATIOS) -> SplitPlan:
    """Split of every graph; deterministic for a given table, ``by``, ``seed`` and ratios."""
    if by not in SPLIT_BY:
        raise ValueError(f"split-by {by!r}: expected one of {', '.join(SPLIT_BY)}")
    rows = graphs.select(["graph_id", by, *(["split"] if "split" in graphs.columns else [])])
    members: dict[str, list[tuple[str, str | None]]] = {}
    for row in rows.iter_rows(named=True):
        if row.get("split") is not None and row["split"] not in SPLITS:
            raise DatasetError(f"graphs.parquet: graph {row['graph_id']} has split "
                               f"{row['split']!r}; expected one of {', '.join(SPLITS)}")
        members.setdefault(str(row[by]), []).append((row["graph_id"], row.get("split")))
    plan = SplitPlan({})
    free: list[str] = []
    for key in sorted(members):
        stored = Counter(s for _, s in members[key] if s)
        if not stored:
            free.append(key)
            continue
        if len(stored) > 1:
            plan.conflicts.append(f"{by} {key!r} is already in splits "
                                  f"{', '.join(sorted(stored))} (graphs.parquet split column)")
        group_split = max(SPLITS, key=lambda s: (stored.get(s, 0), -SPLITS.index(s)))
        for graph_id, split in members[key]:
            plan.splits[graph_id] = split or group_split
    order = np.random.default_rng(seed).permutation(len(free))
    quotas = group_quotas(len(free), ratios)
    bounds = np.cumsum(quotas)
    for position, index in enumerate(order):
        split = SPLITS[int(np.searchsorted(bounds, position, side="right"))]
        for graph_id, _ in members[free[index]]:
            plan.splits[graph_id] = split
    return plan
