"""One stored graph as a ``networkx.DiGraph``, and back to TpuGraphs arrays.

Why: people analyse graphs with networkx (paths, centrality, drawing), and the npz arrays are
awkward for that. networkx is imported here only when a view is asked for, so reading,
validating and publishing datasets never pay for it.

Edges keep the TpuGraphs direction: a row ``[u, v]`` of ``edge_index`` becomes the edge
``u -> v``, where u consumes v (or v is the root of a computation u calls), so edges point
against the data flow; ``graph.reverse(copy=False)`` gives the data-flow view.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import NODE_FEATURE_WIDTH, OPCODE_NAMES

#: npz keys a view is built from (the graph's structure, not its config arrays).
GRAPH_KEYS = ("node_feat", "node_opcode", "edge_index", "node_config_ids", "node_splits")


def _networkx() -> Any:
    try:
        import networkx  # type: ignore[import-untyped]  # ships no type information
    except ImportError:  # declared as a dependency; a broken install gets a clear line
        raise DatasetError("the networkx view needs networkx: pip install networkx") from None
    return networkx


def graph_to_networkx(row: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """A ``networkx.DiGraph`` of one graph: ``row`` is its graphs-table row, ``arrays`` its
    npz arrays (at least ``node_feat``, ``node_opcode``, ``edge_index``).

    Node ``i`` (the npz row) carries ``opcode`` (id), ``opcode_name``, ``features`` (its 140
    floats, float32), ``configurable`` and ``config_index`` (its position in
    ``node_config_ids``, the second axis of ``node_config_feat``; None if not configurable).
    Edge ``u -> v`` carries ``row``, its row in ``edge_index``. ``graph.graph`` holds the row's
    columns and ``node_splits`` (a list; None when the file has none).
    """
    name = row.get("graph_id", "?")
    missing = [k for k in GRAPH_KEYS[:3] if k not in arrays]
    if missing:
        raise DatasetError(f"graph {name}: no {', '.join(missing)} in its arrays")
    feat, opcode, edges = (arrays[k] for k in ("node_feat", "node_opcode", "edge_index"))
    n = feat.shape[0]
    if feat.ndim != 2 or opcode.shape != (n,) or edges.ndim != 2 or edges.shape[1] != 2:
        raise DatasetError(f"graph {name}: arrays do not form a graph (node_feat {feat.shape}, "
                           f"node_opcode {opcode.shape}, edge_index {edges.shape})")
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise DatasetError(f"graph {name}: edge_index refers to nodes outside 0..{n - 1}")
    config_ids = arrays.get("node_config_ids")
    position = ({int(node): i for i, node in enumerate(config_ids)}
                if config_ids is not None else {})
    splits = arrays.get("node_splits")

    nx = _networkx()
    graph = nx.DiGraph()
    graph.graph.update(row)
    graph.graph["node_splits"] = None if splits is None else splits.reshape(-1).tolist()
    for i in range(n):
        op = int(opcode[i])
        graph.add_node(i, opcode=op,
                       opcode_name=OPCODE_NAMES[op] if op < len(OPCODE_NAMES) else None,
                       features=feat[i], configurable=i in position,
                       config_index=position.get(i))
    graph.add_edges_from((int(u), int(v), {"row": r}) for r, (u, v) in enumerate(edges))
    if graph.number_of_edges() != len(edges):
        raise DatasetError(f"graph {name}: edge_index repeats an edge, which a DiGraph "
                           "cannot hold")
    return graph


def networkx_to_arrays(graph: Any) -> dict[str, np.ndarray]:
    """The TpuGraphs graph arrays of a DiGraph shaped like :func:`graph_to_networkx`'s.

    Nodes must be 0..n-1; edges are ordered by their ``row`` attribute (edges without one
    follow, sorted by (u, v)); ``node_config_ids`` lists configurable nodes by
    ``config_index``. Config arrays are not part of the view.
    """
    n = graph.number_of_nodes()
    if set(graph.nodes) != set(range(n)):
        raise DatasetError("networkx graph: nodes must be the integers 0..n-1")
    nodes = graph.nodes
    feat = np.zeros((n, NODE_FEATURE_WIDTH), dtype=np.float32)
    for i in range(n):
        feat[i] = nodes[i]["features"]
    opcode = np.array([nodes[i]["opcode"] for i in range(n)], dtype=np.uint8)
    edges = sorted(graph.edges(data="row"),
                   key=lambda e: (e[2] is None, e[2] if e[2] is not None else 0, e[0], e[1]))
    edge_index = np.array([(u, v) for u, v, _ in edges], dtype=np.int64).reshape(-1, 2)
    arrays = {"node_feat": feat, "node_opcode": opcode, "edge_index": edge_index}
    configurable = sorted((nodes[i]["config_index"], i) for i in range(n)
                          if nodes[i].get("configurable"))
    if configurable or graph.graph.get("collection") != "tile":  # tile files have no such key
        arrays["node_config_ids"] = np.array([i for _, i in configurable], dtype=np.int64)
    splits = graph.graph.get("node_splits")
    if splits is not None:
        arrays["node_splits"] = np.asarray(splits, dtype=np.int64)
    return arrays
