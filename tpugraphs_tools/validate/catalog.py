"""Every check id the validator can emit, with its default severity and a one-line meaning.

One table so the report, the docs (docs/validate.md lists every id, enforced by a test) and the
fault-injection suite all agree on the names. An id's prefix is its fault class.
"""

from __future__ import annotations

from dataclasses import dataclass

from tpugraphs_tools.format import LAYOUT_CONFIG_WIDTH, NODE_FEATURE_WIDTH, TILE_CONFIG_WIDTH

ERROR = "error"
WARNING = "warning"
CLASSES = ("structure", "graph", "values", "dataset")


@dataclass(frozen=True)
class Check:
    id: str
    severity: str
    meaning: str


_TABLE: tuple[tuple[str, str, str], ...] = (
    # -- structure: can the file be read at all, and does it have the TpuGraphs keys/shapes --
    ("structure.unreadable", ERROR, "file is not a readable npz/parquet (truncated, bad CRC, "
                                    "bad npy header, corrupt page)"),
    ("structure.pickled", ERROR, "npz member holds an object array (would need unpickling)"),
    ("structure.missing_key", ERROR, "a key required by the collection is missing"),
    ("structure.extra_key", ERROR, "a key (or non-.npy member) not in the TpuGraphs format"),
    ("structure.dtype", ERROR, "array dtype differs from the TpuGraphs dtype"),
    ("structure.rank", ERROR, "array has the wrong number of dimensions"),
    ("structure.shape", ERROR, f"a fixed dimension is wrong ({NODE_FEATURE_WIDTH} node "
                               f"features, edge pairs, {LAYOUT_CONFIG_WIDTH} layout / "
                               f"{TILE_CONFIG_WIDTH} tile config features)"),
    ("structure.absurd_size", ERROR, "npy header declares more data than the member holds, "
                                     "than deflate can produce, or than the size cap"),
    # -- graph: nodes, edges, configurable nodes, splits, opcodes --
    ("graph.node_count_mismatch", ERROR, "node_feat rows differ from node_opcode length"),
    ("graph.edge_out_of_range", ERROR, "edge endpoint negative or >= number of nodes"),
    ("graph.self_loop", ERROR, "edge [u, u] (TpuGraphs has none)"),
    ("graph.duplicate_edge", ERROR, "the same [u, v] edge appears twice"),
    ("graph.not_topological", ERROR, "edge [u, v] with u < v: a cycle or nodes not in "
                                     "topological order"),
    ("graph.config_id_out_of_range", ERROR, "node_config_ids entry negative or >= nodes"),
    ("graph.config_id_duplicate", ERROR, "node_config_ids lists a node twice"),
    ("graph.config_id_not_configurable", ERROR, "node_config_ids points at a node whose "
                                                "opcode is not convolution/dot/reshape"),
    ("graph.splits_bounds", ERROR, "node_splits does not start at 0 / end at n / stay in "
                                   "[0, n]"),
    ("graph.splits_not_increasing", ERROR, "node_splits not strictly increasing"),
    ("graph.opcode_out_of_range", ERROR, "node_opcode id outside the table 0..120"),
    ("graph.opcode_tombstone", WARNING, "node_opcode uses a tombstone id (97 trace, "
                                        "101 tuple-select)"),
    # -- values: features, runtimes, layout/tile configs --
    ("values.non_finite", ERROR, "NaN or inf in a feature array"),
    ("values.runtime_not_finite", ERROR, "NaN/inf runtime (float runtime arrays only)"),
    ("values.runtime_nonpositive", ERROR, "runtime <= 0 ns"),
    ("values.runtime_absurd", ERROR, "runtime > 1 hour (3.6e12 ns)"),
    ("values.normalizer_nonpositive", ERROR, "tile config_runtime_normalizers <= 0"),
    ("values.layout_out_of_range", ERROR, "layout config value not an integer in -1..5"),
    ("values.layout_group", ERROR, "a 6-slot layout group is neither all -1 nor a "
                                   "permutation of 0..k-1 followed by -1s"),
    ("values.layout_rank", ERROR, "output-slot permutation length differs from the node's "
                                  "rank (nonzero node_feat[21:27])"),
    ("values.config_count_mismatch", ERROR, "config arrays disagree on the number of configs "
                                            "or of configurable nodes"),
    ("values.duplicate_config_conflict", WARNING, "identical configs whose runtimes differ "
                                                  "by more than 5%"),
    # -- dataset: manifest, files, tables, cross-file consistency, splits --
    ("dataset.not_a_dataset", ERROR, "neither a manifest.json nor any npz file under the path"),
    ("dataset.manifest_missing", ERROR, "no manifest.json"),
    ("dataset.manifest_unreadable", ERROR, "manifest.json is not valid JSON"),
    ("dataset.manifest_schema", ERROR, "manifest.json violates schemas/manifest.schema.json"),
    ("dataset.format_too_new", ERROR, "format_version newer than this tgt supports"),
    ("dataset.file_missing", ERROR, "file listed in the manifest is missing"),
    ("dataset.file_unlisted", ERROR, "file present but not listed in the manifest"),
    ("dataset.size_mismatch", ERROR, "file byte count differs from the manifest"),
    ("dataset.checksum_mismatch", ERROR, "file sha256 differs from the manifest"),
    ("dataset.interrupted_write", WARNING, "leftover of an interrupted commit (journal/temp)"),
    ("dataset.being_written", WARNING, "another tgt run holds the dataset's write lock: what "
                                       "is checked may change under it"),
    ("dataset.partial_collection", WARNING, "a collection in progress or interrupted: config "
                                            "rows journaled in .tgt-work/, not yet committed"),
    ("dataset.table_missing", ERROR, "a table named in the manifest has no file"),
    ("dataset.row_count_mismatch", ERROR, "table rows differ from the manifest's count"),
    ("dataset.schema_column_missing", ERROR, "required column missing from a table"),
    ("dataset.schema_column_unknown", WARNING, "column not in the table's schema"),
    ("dataset.schema_type", ERROR, "column type differs from the schema"),
    ("dataset.schema_null", ERROR, "null in a required column"),
    ("dataset.schema_enum", ERROR, "value not in the column's enum"),
    ("dataset.schema_pattern", ERROR, "string does not match the column's pattern"),
    ("dataset.schema_minimum", ERROR, "number below the column's minimum"),
    ("dataset.schema_duplicate_id", ERROR, "the table's unique key repeats"),
    ("dataset.schema_foreign_key", ERROR, "value not found in the referenced table column"),
    ("dataset.npz_missing", ERROR, "graph row points at an npz that does not exist"),
    ("dataset.hlo_missing", ERROR, "graph row points at an HLO file that does not exist"),
    ("dataset.npz_orphan", WARNING, "npz under graphs/ that no graph row references"),
    ("dataset.absolute_path", WARNING, "a stored HLO file or graph row holds an absolute path "
                                       "of the collecting machine (tgt collect "
                                       "--keep-source-paths)"),
    ("dataset.partition_invalid", ERROR, "a partitions.parquet row whose file is missing, or "
                                         "whose node_segment is not int32 [num_nodes] with ids "
                                         "in 0..num_segments-1"),
    ("dataset.graph_row_mismatch", ERROR, "num_nodes/num_edges/num_configurable differ "
                                          "from the npz"),
    ("dataset.num_configs_mismatch", ERROR, "graphs.num_configs differs from the npz config "
                                            "count"),
    ("dataset.npz_row_missing", ERROR, "ok config row without npz_row"),
    ("dataset.npz_row_unexpected", ERROR, "non-ok config row with an npz_row"),
    ("dataset.npz_row_out_of_range", ERROR, "npz_row outside the graph's config arrays"),
    ("dataset.npz_row_duplicate", ERROR, "two config rows of a graph share an npz_row"),
    ("dataset.npz_row_unreferenced", WARNING, "npz config row no ok config row points at"),
    ("dataset.ok_runtime_invalid", ERROR, "ok config row with null or <= 0 runtime_min_ns"),
    ("dataset.honoured_invalid", ERROR, "configs honoured is not JSON node -> slot -> "
                                        "true/false/null over exactly the config's slots"),
    ("dataset.relative_ci_invalid", ERROR, "relative_to_default outside its own "
                                           "[relative_ci_low, relative_ci_high], CI bounds "
                                           "out of order, or a ratio/bound <= 0"),
    ("dataset.control_outside_ci", WARNING, "a graph's A/A control (status control) has a CI "
                                            "that excludes 1.0: its batches are noisier than "
                                            "their CIs claim"),
    ("dataset.timing_cpus_mixed", WARNING, "a graph's config rows were timed on different "
                                           "numbers of CPUs (timing_cpus): one ranking from "
                                           "two measurements"),
    ("dataset.timer_mixed", WARNING, "a graph's labels were timed by different timers (host "
                                     "and device time, or a label whose processes disagreed): "
                                     "one ranking from two measurements"),
    ("dataset.tile_not_as_requested", WARNING, "ok tile configs compiled to another tile than "
                                               "requested (realized matches_request false): "
                                               "their features encode the tile that ran"),
    ("dataset.tile_infeasible", WARNING, "tile configs over the device's registers or shared "
                                         "memory (status infeasible): never compiled, counted "
                                         "apart from compile_error"),
    ("dataset.split_overlap", ERROR, "a program/fingerprint (or official file stem) is in "
                                     "two splits"),
    ("dataset.collection_unknown", ERROR, "cannot tell whether an npz is layout or tile"),
)

CHECKS: dict[str, Check] = {cid: Check(cid, sev, meaning) for cid, sev, meaning in _TABLE}


def severity(check_id: str) -> str:
    """Default severity; unknown ids raise so a typo in a check never ships silently."""
    return CHECKS[check_id].severity


def fault_class(check_id: str) -> str:
    return check_id.split(".", 1)[0]
