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


def test_cli_says_which_graphs_got_fewer_segments_and_why(dataset: Dataset) -> None:
    """--segments 64 on 30–60-node graphs gave fewer segments with no word why."""
    result = CliRunner(env={"COLUMNS": "300"}).invoke(main, ["partition", str(dataset.root),
                                                             "--segments", "64"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "fewer segments: 4 of 4 graphs got fewer segments than asked:" in text
    rows = Dataset.open(dataset.root).table("partitions").to_dicts()
    for row in rows:  # every graph has fewer than 64 nodes: at most one segment per node
        assert (f"{row['graph_id']}: {row['num_segments']} of 64 segments: the graph has "
                f"{row['num_nodes']} nodes and a segment holds at least one") in text
    result = CliRunner().invoke(main, ["partition", str(dataset.root), "--segments", "2"])
    assert result.exit_code == 0 and "fewer segments" not in result.output


def test_metis_leaving_parts_empty_is_told_apart_from_a_small_graph() -> None:
    from tpugraphs_tools.partition import partition_graph, reduction

    chain = np.stack([np.arange(1, 100), np.arange(0, 99)], axis=1)
    part = partition_graph(chain, 100, segments=64)
    assert part.num_segments < 64  # METIS with contiguous parts on a 100-node chain
    assert reduction(part, 64) == (f"{part.num_segments} of 64 segments: METIS left "
                                   f"{64 - part.num_segments} parts empty (1.6 nodes per part "
                                   "asked, each part contiguous)")
    assert reduction(partition_graph(chain, 100, segments=4), 4) is None
