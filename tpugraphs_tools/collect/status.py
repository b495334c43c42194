"""Progress of a (possibly interrupted) collection: committed graphs, journaled configs, and
the kernels of tile programs not yet settled.

Read from what a kill leaves: the committed tables (if any commit happened yet) and the files
in ``.tgt-work/``, so a collection stopped during its first graph, before any manifest exists,
still shows its journaled rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from tpugraphs_tools.collect.journal import PartialGraph, partial_collections
from tpugraphs_tools.collect.tile.record import KERNELS_SUFFIX, read_program
from tpugraphs_tools.store import MANIFEST, WORK_DIR, Dataset, live_holder


class CommittedGraph(TypedDict):
    """A committed graph: its config rows by status."""

    graph_id: str
    program: str | None
    num_configs: int | None
    config_rows: int
    statuses: dict[str, int]


class TileProgram(TypedDict):
    """A tile program whose kernels are not all settled: kernel graph ids by state."""

    program: str
    kernels: int
    committed: list[str]
    in_progress: dict[str, int]   # graph id -> rows journaled
    skipped: dict[str, str]       # kernel name -> why it is not stored
    left: list[str]               # graph ids not started


class CollectionStatus(TypedDict):
    """``tgt collect --status``: committed graphs, graphs with a journal (interrupted), tile
    programs in progress."""

    dataset: str
    committed: list[CommittedGraph]
    partial: dict[str, PartialGraph]
    tile_programs: dict[str, TileProgram]   # parent graph id -> its kernels' progress
    writer: str | None  # the live run holding the write lock (pid, host, since, command)


def collection_status(root: str | Path) -> CollectionStatus:
    root = Path(root)
    partial = partial_collections(root)
    programs = sorted((root / WORK_DIR).glob(f"*{KERNELS_SUFFIX}"))
    if not (root / MANIFEST).exists() and (partial or programs):
        committed: list[CommittedGraph] = []  # interrupted before its first commit
        graph_ids: set[str] = set()
    else:
        dataset = Dataset.open(root)  # no manifest and no journal: not a tgt dataset
        committed = _committed(dataset)
        graph_ids = {g["graph_id"] for g in committed}
    tiles: dict[str, TileProgram] = {}
    for path in programs:
        record = read_program(path)
        names = {k["name"]: k["graph_id"] for k in record["kernels"]}
        skipped_ids = {names.get(n) for n in record["skipped"]}
        ids = [k["graph_id"] for k in record["kernels"]]
        tiles[path.name.removesuffix(KERNELS_SUFFIX)] = {
            "program": record["program"], "kernels": len(ids),
            "committed": [g for g in ids if g in graph_ids],
            "in_progress": {g: sum(partial[g]["statuses"].values()) for g in ids if g in partial},
            "skipped": dict(record["skipped"]),
            "left": [g for g in ids if g not in graph_ids and g not in partial
                     and g not in skipped_ids]}
    holder = live_holder(root)
    return {"dataset": str(root), "committed": committed, "partial": partial,
            "tile_programs": tiles, "writer": holder.describe() if holder else None}


def _committed(dataset: Dataset) -> list[CommittedGraph]:
    graphs = dataset.graphs()
    if graphs.height == 0:
        return []
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
    return committed
