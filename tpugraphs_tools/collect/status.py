"""Progress of a (possibly interrupted) collection: committed graphs and journaled configs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tpugraphs_tools.collect.journal import partial_collections
from tpugraphs_tools.store import Dataset


def collection_status(root: str | Path) -> dict[str, Any]:
    root = Path(root)
    dataset = Dataset.open(root)
    graphs = dataset.graphs()
    counts: dict[str, dict[str, int]] = {}
    for gid, status, n in dataset.scan("configs").group_by("graph_id", "status").len() \
            .sort("graph_id", "status").collect().iter_rows():
        counts.setdefault(gid, {})[status] = int(n)
    committed = []
    for row in graphs.select("graph_id", "program", "num_configs").to_dicts():
        statuses = counts.get(row["graph_id"], {})
        committed.append({**row, "config_rows": sum(statuses.values()),
                          "statuses": statuses})
    return {"dataset": str(root), "committed": committed, "partial": partial_collections(root)}
