"""What one program's tile collection reports: kernels stored and skipped, statuses, effects.

Apart from ``program.py`` because a resumed program is summarized over every kernel it holds,
those committed by an earlier run (read back from the dataset) as well as this run's.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from tpugraphs_tools.collect.summary import TileEffect, TileSummary
from tpugraphs_tools.collect.tile.labels import pooled_quality
from tpugraphs_tools.measure import CONTROL, INFEASIBLE, OK, REPEAT, Status, Traits
from tpugraphs_tools.store import ConfigCounts

KernelRows = tuple[Mapping[str, Any], Sequence[Any]]  # (graph row, its config rows)


def summarize(graphs: Sequence[KernelRows], skipped: dict[str, str], space: str,
              traits: Traits, restarts: int = 0,
              tried: Counter[Status] | None = None) -> TileSummary:
    """Counts, statuses (of every config tried, stored kernels or not) and the largest effect
    vs default over the stored kernels (fixed engine: in units of CV; ratio labels: the
    largest ratio whose CI excludes 1.0), and how sure the labels are (ratio labels).
    ``graphs``: each stored kernel's graph row and config rows; ``traits``: the engine's."""
    rows = [(g, r) for g, rs in graphs for r in rs if r["status"] not in (CONTROL, REPEAT)]
    paired = traits.ratio_labels
    effects = []
    apart: list[TileEffect] = []  # configs whose 95% CI excludes the default's 1.0
    not_as_requested = 0
    for g, r in rows:
        ratio = r["relative_to_default"]
        if r["status"] != OK or r["is_default"]:
            continue
        real = json.loads(r["realized"] or "{}")
        not_as_requested += real.get("matches_request") is False
        if ratio is None:
            continue
        effect = TileEffect(
            graph_id=g["graph_id"], parent_instruction=g["parent_instruction"],
            config=json.loads(r["config"]), relative_to_default=ratio,
            effect_cv=real.get("effect_cv"), runtime_cv=r["runtime_cv"],
            default_cv=real.get("default_cv"))
        effects.append(effect)
        low, high = r["relative_ci_low"], r["relative_ci_high"]
        if low is not None and high is not None and not low <= 1.0 <= high:
            apart.append(effect)
    effects.sort(key=lambda e: -(e.effect_cv or 0))
    apart.sort(key=lambda e: -abs(math.log(e.relative_to_default)))
    relative = [e.relative_to_default for e in effects]
    status = tried if tried is not None else Counter(r["status"] for _, r in rows)
    largest = (apart[0] if apart else None) if paired else (effects[0] if effects else None)
    return TileSummary(
        config_space=space, kernels=len(graphs), kernels_skipped=len(skipped),
        skipped=skipped, configs=sum(status.values()) - status.get(INFEASIBLE, 0),
        configs_stored=sum(r["status"] != INFEASIBLE for _, r in rows),
        status=dict(status), worker_restarts=restarts,
        effects_over_3cv=sum(1 for e in effects if (e.effect_cv or 0) > 3),
        largest_effect=largest,
        best_speedup=1 / min(relative) if relative else None,
        worst_slowdown=max(relative) if relative else None,
        apart_from_default=len(apart) if paired else None,
        labels=pooled_quality([rs for _, rs in graphs], traits), ratio_labels=paired,
        not_as_requested=not_as_requested,
        infeasible=status.get(INFEASIBLE, 0),
        counts=ConfigCounts.of_rows(r["status"] for _, rs in graphs for r in rs))
