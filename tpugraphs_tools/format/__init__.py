"""The TpuGraphs format in one place: per-kind npz contract, widths, opcode ids, splits, tree.

Export, import, validate, baseline and collect derive from these records; a new collection kind
is one more :class:`Collection` here.
"""

from tpugraphs_tools.format._collections import (
    COLLECTIONS,
    KINDS,
    LAYOUT,
    LAYOUT_CONFIG_WIDTH,
    LAYOUT_SOURCES,
    NODE_FEATURE_WIDTH,
    TILE,
    TILE_CONFIG_WIDTH,
    ArraySpec,
    Collection,
    Kind,
    collection_of,
    detect_kind,
    official_keys_table,
)
from tpugraphs_tools.format._opcodes import (
    CONFIGURABLE_IDS,
    CONFIGURABLE_OPCODES,
    OPCODE_IDS,
    OPCODE_NAMES,
    TOMBSTONE_IDS,
    UNKNOWN_ID,
    opcode_id,
)
from tpugraphs_tools.format._splits import (
    DEFAULT_RATIOS,
    SPLIT_BY,
    SplitPlan,
    assign_splits,
    group_quotas,
    parse_ratios,
)
from tpugraphs_tools.format._tree import (
    SPLITS,
    TPUGRAPHS_SOURCE,
    TreeEntry,
    TreeHints,
    check_name,
    parse_tree_path,
    tree_hints,
    tree_path,
)

__all__ = [
    "COLLECTIONS", "CONFIGURABLE_IDS", "CONFIGURABLE_OPCODES", "DEFAULT_RATIOS", "KINDS", "LAYOUT",
    "LAYOUT_CONFIG_WIDTH", "LAYOUT_SOURCES", "NODE_FEATURE_WIDTH", "OPCODE_IDS", "OPCODE_NAMES",
    "SPLITS", "SPLIT_BY", "TILE", "TILE_CONFIG_WIDTH", "TOMBSTONE_IDS", "TPUGRAPHS_SOURCE",
    "UNKNOWN_ID", "ArraySpec",
    "Collection", "Kind", "SplitPlan", "TreeEntry", "TreeHints", "assign_splits", "check_name",
    "collection_of", "detect_kind", "group_quotas", "official_keys_table", "opcode_id",
    "parse_ratios", "parse_tree_path", "tree_hints", "tree_path"
]
