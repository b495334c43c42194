"""``--executor ray`` for import and validate: the same results as local processes, split by
file across a (here: local) Ray instance; a clear error when ray is not installed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from tpugraphs_tools.baseline.synthetic import layout_graph, tile_graph
from tpugraphs_tools.cli import main
from tpugraphs_tools.errors import DatasetError, TgtError
from tpugraphs_tools.parallel import make_pool
from tpugraphs_tools.publish import import_tpugraphs
from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

TILE_KEYS = ("node_feat", "node_opcode", "edge_index", "config_feat", "config_runtime",
             "config_runtime_normalizers")


def _tree(root: Path, graphs: int = 5) -> Path:
    for i in range(graphs):
        split = ("train", "train", "valid", "test")[i % 4]
        arrays, _ = layout_graph(i, 30 + i, 6)
        path = root / f"npz/layout/xla/random/{split}/graph_{i}.npz"
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, **arrays)
    tile = tile_graph(99, 12, 5)
    path = root / "npz/tile/xla/train/kernel_0.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **{k: tile[k] for k in TILE_KEYS})
    return root


@pytest.fixture(scope="module")
def ray_local() -> Iterator[object]:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _same(a: Dataset, b: Dataset) -> None:
    def graphs(ds: Dataset) -> pl.DataFrame:
        return ds.graphs().drop("created_at")

    assert graphs(a).equals(graphs(b)) and a.configs().equals(b.configs())
    for gid in a.graphs()["graph_id"]:
        x, y = a.load_arrays(gid), b.load_arrays(gid)
        assert list(x) == list(y) and all(np.array_equal(x[k], y[k]) for k in x)


def test_ray_import_and_validate_equal_local(ray_local: object, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    local = Dataset.open(import_tpugraphs(tree, tmp_path / "local", jobs=1).out)
    on_ray = Dataset.open(import_tpugraphs(tree, tmp_path / "ray", executor="ray",
                                           batch_bytes=1).out)
    _same(local, on_ray)
    assert len(on_ray.table_info("configs").parts) > 1
    gid = local.graphs()["graph_id"][1]
    arrays = local.load_arrays(gid)
    arrays["node_feat"][0, 0] = np.nan          # a finding in one npz
    np.savez(local.npz_path(gid), **arrays)
    for target in (tmp_path / "local", tree):
        want = validate_path(target, jobs=1).findings
        assert validate_path(target, executor="ray").findings == want
    assert {f.check for f in validate_path(tmp_path / "local", executor="ray").findings} >= \
        {"values.non_finite"}


def test_ray_errors_name_the_file(ray_local: object, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    (tree / "npz/layout/xla/random/train/zz.npz").write_bytes(b"not a zip at all")
    with pytest.raises(DatasetError, match=r"zz\.npz: not a readable npz"):
        import_tpugraphs(tree, tmp_path / "data", executor="ray")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]


def test_cli_executor_ray(ray_local: object, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree", graphs=2)
    runner = CliRunner()
    res = runner.invoke(main, ["import", str(tree), "--out", str(tmp_path / "d"),
                               "--executor", "ray"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["validate", str(tmp_path / "d"), "--executor", "ray"])
    assert res.exit_code == 0 and "clean" in res.output, res.output


def test_executor_ray_without_ray(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)      # import ray → ImportError
    tree = _tree(tmp_path / "tree", graphs=1)
    with pytest.raises(TgtError, match=r"--executor ray needs ray: pip install"):
        list(make_pool("ray").map(str, [1]))
    res = CliRunner().invoke(main, ["validate", str(tree), "--executor", "ray"])
    assert res.exit_code != 0 and "needs ray" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["import", str(tree), "--out", str(tmp_path / "d"),
                                    "--executor", "ray"])
    assert res.exit_code != 0 and "needs ray" in res.output
    assert not (tmp_path / "d").exists()
