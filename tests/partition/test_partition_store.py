"""`tgt partition` on a dataset: rows, files in the manifest, idempotence, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from tpugraphs_tools.baseline.synthetic import write_synthetic_dataset
from tpugraphs_tools.cli import main
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.partition import (
    load_partition,
    partition_dataset,
    partition_name,
    stored_partitions,
)
from tpugraphs_tools.store import Dataset


@pytest.fixture()
def dataset(tmp_path):
    return write_synthetic_dataset(tmp_path / "ds", programs=2, graphs_per_program=2,
                                   nodes=(30, 60), configs=4)


def test_partition_dataset_rows_files_and_idempotence(dataset: Dataset) -> None:
    results = partition_dataset(dataset, segments=4)
    assert len(results) == 4
    table = dataset.table("partitions")
    assert table.height == 4
    row = table.row(0, named=True)
    assert row["partition"] == "metis-4" and row["method"] == "metis"
    assert row["file"] == f"partitions/metis-4/{row['graph_id']}.npz"
    assert sum(json.loads(row["segment_sizes"])) == row["num_nodes"]
    assert row["file"] in dataset.manifest["files"]
    seg = load_partition(dataset, row["graph_id"], "metis-4")
    assert seg.dtype == np.int32 and seg.shape == (row["num_nodes"],)
    digest = dataset.manifest["files"][row["file"]]["sha256"]

    partition_dataset(Dataset.open(dataset.root), segments=4)  # re-run: same rows, same bytes
    again = Dataset.open(dataset.root)
    assert again.table("partitions").height == 4
    assert again.manifest["files"][row["file"]]["sha256"] == digest
    assert again.manifest["tables"]["partitions"]["rows"] == 4

    partition_dataset(again, method="contiguous", max_segment_nodes=20)
    assert stored_partitions(again) == ["contiguous-max20", "metis-4"]
    assert again.table("partitions").height == 8


def test_partition_selection_and_errors(dataset: Dataset) -> None:
    gid = dataset.graphs()["graph_id"][0]
    partition_dataset(dataset, segments=2, graph_ids=[gid])
    assert dataset.table("partitions")["graph_id"].to_list() == [gid]
    with pytest.raises(DatasetError):
        partition_dataset(dataset, segments=2, graph_ids=["missing"])
    with pytest.raises(DatasetError):
        load_partition(dataset, gid, "metis-99")
    assert partition_name("metis", max_segment_nodes=500) == "metis-max500"


def test_cli_partition(dataset: Dataset) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["partition", str(dataset.root), "--segments", "3",
                                  "--method", "contiguous"])
    assert result.exit_code == 0, result.output
    table = Dataset.open(dataset.root).table("partitions")
    assert set(table["partition"]) == {"contiguous-3"}
    both = runner.invoke(main, ["partition", str(dataset.root), "--segments", "3",
                                "--max-segment-nodes", "5"])
    assert both.exit_code == 2
    missing = runner.invoke(main, ["partition", str(dataset.root / "nope")])
    assert missing.exit_code == 1
