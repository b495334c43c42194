"""Labels as the paired engine writes them, for the report tests: values near 1 with CIs."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def label_cis(root: Path, *, unresolved: str | None = None) -> dict[str, int]:
    """Give ``root``'s ok labels tile-like values near 1 with 95% CIs (±0.2–0.9%) and one A/A
    control row per graph, as the paired engine writes them. Every graph's fastest config is
    then surely faster (CI below 1) except in ``unresolved`` (default: the first graph), whose
    fastest label sits at 0.995 with a CI holding 1, like resnet18 at 0.995 [0.988, 1.002].
    Returns the graphs' non-default label counts."""
    from tpugraphs_tools.store import Dataset

    rng = np.random.default_rng(3)
    dataset = Dataset.open(root)
    ids = sorted(dataset.graphs()["graph_id"].to_list())
    unresolved = unresolved or ids[0]
    counts = {}
    with dataset.transaction() as tx:
        for gid in ids:
            rows = dataset.configs_of(gid).sort("config_index").to_dicts()
            others = [r for r in rows if r["status"] == "ok" and not r["is_default"]]
            counts[gid] = len(others)
            for i, row in enumerate(others):
                if gid == unresolved:
                    rel, half = 0.995 + 0.004 * i, 0.007
                else:
                    rel, half = (0.97 if i == 0 else 1 + rng.normal(0, 0.01)), 0.002 + 0.007 * (
                        i % 2)
                row.update(relative_to_default=rel, relative_ci_low=rel - half,
                           relative_ci_high=rel + half)
            for row in rows:
                if row["status"] == "ok" and row["is_default"]:
                    row.update(relative_to_default=1.0, relative_ci_low=1.0,
                               relative_ci_high=1.0)
            control = {**rows[0], "config_index": len(rows), "status": "control",
                       "is_default": False, "npz_row": None, "duplicate_of": 0,
                       "relative_to_default": 1.002, "relative_ci_low": 0.996,
                       "relative_ci_high": 1.008}
            tx.put_configs(gid, [*rows, control])
    return counts
