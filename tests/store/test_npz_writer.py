"""One npz writer: the store's graphs and the exporter's files come from the same function."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tpugraphs_tools import store
from tpugraphs_tools.publish.tree import export


def test_the_exporter_writes_npz_with_the_stores_writer():
    assert export.write_npz is store.write_npz


def test_write_npz_creates_the_folder_and_round_trips(tmp_path: Path):
    path = tmp_path / "a" / "b" / "g.npz"
    arrays = {"config_runtime": np.array([3, 1, 2], dtype=np.int64),
              "node_feat": np.ones((2, 3), dtype=np.float32)}
    store.write_npz(path, arrays)
    with np.load(path, allow_pickle=False) as npz:
        assert npz.files == list(arrays)
        for key, value in arrays.items():
            np.testing.assert_array_equal(npz[key], value)
            assert npz[key].dtype == value.dtype
