"""Dataset storage: manifest + Parquet tables + one TpuGraphs npz per graph."""

from tpugraphs_tools.store.atomic import (
    CACHE_DIR,
    JOURNAL,
    LOG_DIR,
    TEMP_MARK,
    WORK_DIR,
    write_bytes_atomic,
)
from tpugraphs_tools.store.counts import (
    CONTROL_STATUSES,
    INFEASIBLE_STATUS,
    ConfigCounts,
    config_counts,
    total_counts,
)
from tpugraphs_tools.store.dataset import Dataset, make_graph_id
from tpugraphs_tools.store.graph_npz import NPZ_ERRORS, read_npz, write_npz
from tpugraphs_tools.store.graph_view import graph_to_networkx, networkx_to_arrays
from tpugraphs_tools.store.key_batches import WholeKeys, key_batches, last_rows
from tpugraphs_tools.store.label_stats import (
    LABEL_COLUMNS,
    Z95,
    Headroom,
    NoiseCeiling,
    disjoint_pairs,
    graph_label_stats,
    headroom,
    log_se,
    noise_ceiling,
    shared_log_se,
)
from tpugraphs_tools.store.manifest import FORMAT_VERSION, MANIFEST, jax_versions, now, sha256_file
from tpugraphs_tools.store.schema import arrow_schema, load_schema, schema_dir, to_arrow_table
from tpugraphs_tools.store.tables import (
    ROW_GROUP_ROWS,
    TABLES_DIR,
    Part,
    TableInfo,
    parts_for_key,
    table_info,
)
from tpugraphs_tools.store.transaction import Transaction

__all__ = [
    "CACHE_DIR",
    "CONTROL_STATUSES",
    "FORMAT_VERSION",
    "INFEASIBLE_STATUS",
    "JOURNAL",
    "LABEL_COLUMNS",
    "LOG_DIR",
    "MANIFEST",
    "NPZ_ERRORS",
    "ROW_GROUP_ROWS",
    "TABLES_DIR",
    "TEMP_MARK",
    "WORK_DIR",
    "Z95",
    "ConfigCounts",
    "Dataset",
    "Headroom",
    "NoiseCeiling",
    "Part",
    "TableInfo",
    "Transaction",
    "WholeKeys",
    "arrow_schema",
    "config_counts",
    "disjoint_pairs",
    "graph_label_stats",
    "graph_to_networkx",
    "headroom",
    "jax_versions",
    "key_batches",
    "last_rows",
    "load_schema",
    "log_se",
    "make_graph_id",
    "networkx_to_arrays",
    "noise_ceiling",
    "now",
    "parts_for_key",
    "read_npz",
    "schema_dir",
    "sha256_file",
    "shared_log_se",
    "table_info",
    "to_arrow_table",
    "total_counts",
    "write_bytes_atomic",
    "write_npz",
]
