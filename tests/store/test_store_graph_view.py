"""A stored graph as a networkx DiGraph: attributes and edges match the npz, and back."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.features import featurize
from tpugraphs_tools.format import OPCODE_NAMES
from tpugraphs_tools.hlo import parse_hlo_text
from tpugraphs_tools.store import Dataset, graph_to_networkx, networkx_to_arrays

GID = "tiny.000000000001"


@pytest.fixture
def stored(tmp_path: Path, tiny_hlo: str) -> Dataset:
    graph = featurize(parse_hlo_text(tiny_hlo))
    nc = len(graph.node_config_ids)
    arrays = {**graph.arrays(),
              "node_config_feat": np.zeros((1, nc, 18), dtype=np.float32),
              "config_runtime": np.array([1000], dtype=np.int64)}
    row = {"graph_id": GID, "collection": "layout", "program": "tiny", "program_args": "{}",
           "source": "hlo-text", "hlo_stage": "unoptimized",
           "fingerprint": hashlib.sha256(b"tiny").hexdigest(), "backend": "cpu",
           "num_nodes": graph.node_feat.shape[0], "num_edges": graph.edge_index.shape[0],
           "num_configurable": nc, "num_configs": 1}
    ds = Dataset.open(tmp_path / "ds", create=True)
    with ds.transaction() as tx:
        tx.put_graph(row, arrays)
    return Dataset.open(tmp_path / "ds")


def test_nodes_edges_and_graph_attributes_match_the_npz(stored: Dataset) -> None:
    arrays = stored.load_arrays(GID)
    g = stored.to_networkx(GID)
    n, ids = arrays["node_feat"].shape[0], arrays["node_config_ids"].tolist()
    assert len(ids) >= 1 and list(g.nodes) == list(range(n))
    for i, attrs in g.nodes(data=True):
        assert attrs["opcode"] == arrays["node_opcode"][i]
        assert attrs["opcode_name"] == OPCODE_NAMES[arrays["node_opcode"][i]]
        assert attrs["features"].dtype == np.float32
        np.testing.assert_array_equal(attrs["features"], arrays["node_feat"][i])
        assert attrs["configurable"] == (i in ids)
        assert attrs["config_index"] == (ids.index(i) if i in ids else None)
    # TpuGraphs direction: row [u, v] is the edge u -> v (u consumes v); rows kept in order.
    assert [(u, v) for u, v, _ in sorted(g.edges(data="row"), key=lambda e: e[2])] \
        == [tuple(e) for e in arrays["edge_index"].tolist()]
    assert all(u > v for u, v in g.edges)
    assert g.graph["graph_id"] == GID and g.graph["program"] == "tiny"
    assert g.graph["collection"] == "layout" and g.graph["num_configs"] == 1
    assert g.graph["node_splits"] == arrays["node_splits"].reshape(-1).tolist()


def test_a_graph_read_back_from_networkx_equals_the_arrays(stored: Dataset) -> None:
    arrays = stored.load_arrays(GID)
    back = networkx_to_arrays(stored.to_networkx(GID))
    assert set(back) == {"node_feat", "node_opcode", "edge_index", "node_config_ids",
                         "node_splits"}
    for key, value in back.items():
        assert value.dtype == arrays[key].dtype, key
        np.testing.assert_array_equal(value, arrays[key].reshape(value.shape), err_msg=key)


def test_tile_graph_has_no_configurable_nodes_and_round_trips() -> None:
    feat = np.arange(3 * 140, dtype=np.float32).reshape(3, 140)
    arrays = {"node_feat": feat, "node_opcode": np.array([1, 2, 3], dtype=np.uint8),
              "edge_index": np.array([[2, 0], [1, 0], [2, 1]], dtype=np.int64)}
    g = graph_to_networkx({"graph_id": "k.tile.1", "collection": "tile"}, arrays)
    assert not any(c for _, c in g.nodes(data="configurable"))
    assert g.graph["node_splits"] is None
    back = networkx_to_arrays(g)
    assert set(back) == set(arrays)  # edges in their stored (unsorted) row order
    for key in arrays:
        np.testing.assert_array_equal(back[key], arrays[key], err_msg=key)


@pytest.mark.parametrize(("edges", "message"), [
    ([[1, 0], [1, 0]], "repeats an edge"),
    ([[5, 0]], "outside 0..1"),
])
def test_arrays_a_digraph_cannot_hold_are_refused(edges: list[list[int]], message: str) -> None:
    arrays = {"node_feat": np.zeros((2, 140), dtype=np.float32),
              "node_opcode": np.zeros(2, dtype=np.uint8),
              "edge_index": np.array(edges, dtype=np.int64)}
    with pytest.raises(DatasetError, match=message):
        graph_to_networkx({"graph_id": "bad.1"}, arrays)


def test_reading_a_dataset_does_not_import_networkx() -> None:
    code = ("import sys, tpugraphs_tools.store, tpugraphs_tools.validate, tpugraphs_tools.cli;"
            "assert 'networkx' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
