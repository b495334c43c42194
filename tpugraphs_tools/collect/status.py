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
    configs = dataset.configs()
    committed = []
    for row in graphs.select("graph_id", "program", "num_configs").to_dicts():
        statuses = configs.filter(configs["graph_id"] == row["graph_id"])["status"]
        committed.append({**row, "config_rows": statuses.len(),
                          "statuses": dict(statuses.value_counts().iter_rows())})
    return {"dataset": str(root), "committed": committed, "partial": partial_collections(root)}
