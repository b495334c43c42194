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
from tpugraphs_tools.store.graph_npz import NPZ_ERRORS, missing_npz, read_npz, write_npz
from tpugraphs_tools.store.graph_view import graph_to_networkx, networkx_to_arrays
from tpugraphs_tools.store.key_batches import WholeKeys, key_batches, last_rows
from tpugraphs_tools.store.label_stats import (
    LABEL_COLUMNS,
    Z95,
    BeatsDefault,
    Headroom,
    NoiseCeiling,
    beats_default,
    disjoint_pairs,
    graph_label_stats,
    headroom,
    log_se,
    noise_ceiling,
    shared_log_se,
)
from tpugraphs_tools.store.lock import (
    LEASE_S,
    LOCK_FILE,
    Holder,
    dataset_lock,
    live_holder,
    lock_if_dataset,
)
from tpugraphs_tools.store.manifest import FORMAT_VERSION, MANIFEST, jax_versions, now, sha256_file
from tpugraphs_tools.store.out_folder import check_out_folder, dataset_writer
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
    "LEASE_S",
    "LOCK_FILE",
    "LOG_DIR",
    "MANIFEST",
    "NPZ_ERRORS",
    "ROW_GROUP_ROWS",
    "TABLES_DIR",
    "TEMP_MARK",
    "WORK_DIR",
    "Z95",
    "BeatsDefault",
    "ConfigCounts",
    "Dataset",
    "Headroom",
    "Holder",
    "NoiseCeiling",
    "Part",
    "TableInfo",
    "Transaction",
    "WholeKeys",
    "arrow_schema",
    "beats_default",
    "check_out_folder",
    "config_counts",
    "dataset_lock",
    "dataset_writer",
    "disjoint_pairs",
    "graph_label_stats",
    "graph_to_networkx",
    "headroom",
    "jax_versions",
    "key_batches",
    "last_rows",
    "live_holder",
    "load_schema",
    "lock_if_dataset",
    "log_se",
    "make_graph_id",
    "missing_npz",
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
