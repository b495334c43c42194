"""Graph collection: a program or an HLO file → featurized graph rows in a dataset.

Configs and runtimes are added by the layout/tile collections on top of these rows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from tpugraphs_tools.collect.rows import ConfigRow, GraphRow, stored_row
from tpugraphs_tools.features import Graph, featurize
from tpugraphs_tools.format import LAYOUT, TILE, Kind, collection_of
from tpugraphs_tools.hlo import (
    HloSource,
    fingerprint,
    from_file,
    from_lowered,
    portable_graph_row,
    portable_stored_hlo,
    stored_hlo,
)
from tpugraphs_tools.measure import platform_of
from tpugraphs_tools.store import Dataset, jax_versions, make_graph_id


@dataclass(frozen=True)
class CollectedGraph:
    """One graph on its way into the store; measuring it makes a new one
    (``dataclasses.replace`` with the config arrays and the row's ``num_configs``)."""

    source: HloSource
    graph: Graph
    row: GraphRow
    config_arrays: dict[str, np.ndarray] = field(default_factory=dict)
    keep_source_paths: bool = False  # store this machine's paths (hlo/paths.py; opt-in)

    @property
    def graph_id(self) -> str:
        return self.row["graph_id"]

    def arrays(self) -> dict[str, np.ndarray]:
        """Every npz key: the graph's, plus config arrays (empty until configs are measured).

        Tile graphs hold TpuGraphs' tile keys only: no layout ``node_config_ids``.
        """
        graph = self.graph.arrays()
        if not collection_of(self.row.get("collection") or Kind.LAYOUT).has_node_configs:
            graph.pop("node_config_ids")
            return {**graph, **(self.config_arrays or empty_tile_config_arrays())}
        return {**graph, **(self.config_arrays or empty_config_arrays(self.graph))}


def graph_row(src: HloSource, graph: Graph, *, program: str, program_args: dict[str, Any],
              collection: str, backend: str, device_kind: str | None,
              config_space: str | None = None) -> GraphRow:
    fp = fingerprint(src.module)
    jax_v, jaxlib_v = jax_versions()
    return {
        "graph_id": make_graph_id(program, fp),
        "collection": collection,
        "program": program,
        "program_args": json.dumps(program_args, sort_keys=True),
        "source": src.kind,
        "source_path": None if src.kind == "jax" else src.origin,
        "hlo_stage": src.stage,
        "fingerprint": fp,
        "backend": backend,
        "device_kind": device_kind,
        "config_space": config_space,
        "num_nodes": graph.num_nodes,
        "num_edges": int(graph.edge_index.shape[0]),
        "num_configurable": int(graph.node_config_ids.shape[0]),
        "num_configs": 0,
        "jax_version": jax_v,
        "jaxlib_version": jaxlib_v,
        "xla_flags": os.environ.get("XLA_FLAGS"),
    }


def collect_source(src: HloSource, *, program: str, program_args: dict[str, Any],
                   collection: str = "layout", backend: str | None = None) -> CollectedGraph:
    platform = platform_of(backend)
    graph = featurize(src.module)
    per_node = collection_of(collection).per_node_configs
    row = graph_row(src, graph, program=program, program_args=program_args,
                    collection=collection, backend=platform.name,
                    device_kind=platform.device_kind,
                    config_space=collection if per_node else None)
    return CollectedGraph(src, graph, row)


def lower_program(name: str, args: Any) -> tuple[Any, HloSource]:
    """Lower a zoo/user program; returns (lowered, un-optimized source)."""
    from tpugraphs_tools.programs import get_program, lower

    program = get_program(name)
    lowered = lower(program, args)
    return lowered, from_lowered(lowered, origin=program.name)


def write_graphs(dataset: Dataset, collected: list[CollectedGraph],
                 configs: Mapping[str, Sequence[ConfigRow]] | None = None,
                 journal: Path | None = None) -> None:
    """Store graphs (npz + raw HLO) and their config rows in one atomic commit, which also
    removes ``journal`` (the rows' work journal, obsolete once they are committed)."""
    configs = configs or {}
    with dataset.transaction() as tx:
        if journal is not None:
            tx.settle_with_commit(journal)
        for item in collected:
            hlo, suffix = stored_hlo(item.source)
            row = item.row
            if not item.keep_source_paths:
                hlo, row = portable_stored_hlo(hlo, suffix), portable_row(row)
            tx.put_graph(row, item.arrays(), hlo=hlo, hlo_suffix=suffix)
            tx.add_device(item.row["backend"], item.row["device_kind"] or "")
            rows = configs.get(item.graph_id, [])
            tx.put_configs(item.graph_id, [stored_row(r) for r in rows])


def portable_row(row: GraphRow) -> GraphRow:
    """A graph row without this machine's directories (hlo/paths.py)."""
    return cast(GraphRow, portable_graph_row(row))


def collect_hlo_file(path: str, *, collection: str = "layout",
                     backend: str | None = None) -> CollectedGraph:
    src = from_file(path)
    return collect_source(src, program=src.module.name, program_args={"file": str(path)},
                          collection=collection, backend=backend)


def empty_config_arrays(graph: Graph) -> dict[str, np.ndarray]:
    """Layout config arrays with zero configs, so a graph-only npz still has every key."""
    nc = graph.node_config_ids.shape[0]
    return LAYOUT.empty_configs(nc)


def empty_tile_config_arrays() -> dict[str, np.ndarray]:
    """Tile config arrays with zero configs."""
    return TILE.empty_configs()
