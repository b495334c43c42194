"""Graph partitioning (METIS k-way or contiguous node-id ranges) for segment training."""

from tpugraphs_tools.partition._csr import Csr, connected_csr, undirected_csr, undirected_edges
from tpugraphs_tools.partition._methods import (
    METHODS,
    Partition,
    Partitioner,
    contiguous_partition,
    dense_relabel,
    metis_csr,
    metis_partition,
    partition_graph,
    reduction,
    segments_for,
)
from tpugraphs_tools.partition._store import (
    NODE_SEGMENT,
    PARTITIONS_DIR,
    TABLE,
    PartitionResult,
    load_partition,
    npz_bytes,
    partition_dataset,
    partition_file,
    partition_name,
    stored_partitions,
)

__all__ = [
    "METHODS", "NODE_SEGMENT", "PARTITIONS_DIR", "TABLE", "Csr", "Partition", "PartitionResult",
    "Partitioner", "connected_csr", "contiguous_partition", "dense_relabel", "load_partition",
    "metis_csr", "metis_partition", "npz_bytes", "partition_dataset", "partition_file",
    "partition_graph", "partition_name", "reduction", "segments_for", "stored_partitions",
    "undirected_csr", "undirected_edges",
]
