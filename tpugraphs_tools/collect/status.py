"""Progress of a (possibly interrupted) collection: committed graphs and journaled configs."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from tpugraphs_tools.collect.journal import PartialGraph, partial_collections
from tpugraphs_tools.store import Dataset


class CommittedGraph(TypedDict):
    """A committed graph: its config rows by status."""

    graph_id: str
    program: str | None
    num_configs: int | None
    config_rows: int
    statuses: dict[str, int]


class CollectionStatus(TypedDict):
    """``tgt collect --status``: committed graphs, and graphs with a journal (interrupted)."""

    dataset: str
    committed: list[CommittedGraph]
    partial: dict[str, PartialGraph]


def collection_status(root: str | Path) -> CollectionStatus:
    root = Path(root)
    dataset = Dataset.open(root)
    graphs = dataset.graphs()
    counts: dict[str, dict[str, int]] = {}
    for gid, status, n in dataset.scan("configs").group_by("graph_id", "status").len() \
            .sort("graph_id", "status").collect().iter_rows():
        counts.setdefault(gid, {})[status] = int(n)
    committed: list[CommittedGraph] = []
    for row in graphs.select("graph_id", "program", "num_configs").to_dicts():
        statuses = counts.get(row["graph_id"], {})
        committed.append({"graph_id": row["graph_id"], "program": row["program"],
                          "num_configs": row["num_configs"],
                          "config_rows": sum(statuses.values()), "statuses": statuses})
    return {"dataset": str(root), "committed": committed, "partial": partial_collections(root)}
