"""Valid inputs for the fault-injection suite, built once per session and copied per test.

* a tgt dataset written through the store API: two layout graphs (train, valid) and one tile
  graph, featurized from a hand-written HLO module (dot + reshape are the configurable nodes);
* an official-style TpuGraphs tree: npz/layout/xla/default/{train,valid}, npz/tile/xla/train.

Helpers rewrite a file and (for tgt datasets) re-stamp its manifest entry, so each case injects
exactly one fault and nothing else.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from validate_helpers import (
    HLO,
    LAYOUT_RT,
    TILE_RT,
    TREE_LAYOUT,
    TREE_LAYOUT_VALID,
    TREE_TILE,
    config_rows,
    graph_row,
    layout_config_feat,
)

from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import parse_hlo_text
from tpugraphs_tools.store import Dataset


@pytest.fixture(scope="session")
def graph_arrays() -> dict[str, np.ndarray]:
    return featurize(parse_hlo_text(HLO, source="tiny")).arrays()


@pytest.fixture(scope="session")
def layout_arrays(graph_arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {**graph_arrays, "node_config_feat": layout_config_feat(),
            "config_runtime": LAYOUT_RT.copy()}


@pytest.fixture(scope="session")
def tile_arrays(graph_arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    feat = np.arange(3 * 24, dtype=np.float32).reshape(3, 24) + 1
    tile = {k: graph_arrays[k] for k in ("node_feat", "node_opcode", "edge_index")}
    return {**tile, "config_feat": feat, "config_runtime": TILE_RT.copy(),
            "config_runtime_normalizers": np.full(3, 1000, np.int64)}


@pytest.fixture(scope="session")
def tgt_template(tmp_path_factory: pytest.TempPathFactory, layout_arrays: dict,
                 graph_arrays: dict, tile_arrays: dict) -> Path:
    root = tmp_path_factory.mktemp("tgt") / "ds"
    ds = Dataset.open(root, create=True)
    tile_npz = {**tile_arrays, "node_splits": graph_arrays["node_splits"],
                "node_config_ids": graph_arrays["node_config_ids"]}
    with ds.transaction() as tx:
        for program, fp, coll, split, arrays, rt in (
                ("tiny_a", "a" * 64, "layout", "train", layout_arrays, LAYOUT_RT),
                ("tiny_b", "b" * 64, "layout", "valid", layout_arrays, LAYOUT_RT),
                ("tiny_t", "c" * 64, "tile", None, tile_npz, TILE_RT)):
            row = graph_row(program, fp, coll, split, len(rt))
            tx.put_graph(row, arrays, hlo=HLO.encode(), hlo_suffix=".hlo.txt")
            tx.put_configs(row["graph_id"], config_rows(rt, failed=coll == "layout"))
    return root


@pytest.fixture(scope="session")
def tree_template(tmp_path_factory: pytest.TempPathFactory, layout_arrays: dict,
                  tile_arrays: dict) -> Path:
    root = tmp_path_factory.mktemp("tree") / "tpugraphs"
    for rel, arrays in ((TREE_LAYOUT, layout_arrays), (TREE_LAYOUT_VALID, layout_arrays),
                        (TREE_TILE, tile_arrays)):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **arrays)
    return root


@pytest.fixture
def tgt_ds(tgt_template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(tgt_template, tmp_path / "ds"))


@pytest.fixture
def tree(tree_template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(tree_template, tmp_path / "tree"))


