"""Publishing: the official TpuGraphs tree (export/import), HF/Croissant datasets, reports.

One subpackage per family (``tree``, ``tuning``, ``hub``, ``report``) over the helpers they
share (``staging``, ``tally``); docs/architecture.md gives their layers.
"""

from tpugraphs_tools.format import (
    DEFAULT_RATIOS,
    SPLIT_BY,
    SplitPlan,
    assign_splits,
    parse_ratios,
)
from tpugraphs_tools.publish.hub.publish import PublishResult, dataset_name, publish_dataset
from tpugraphs_tools.publish.report.page import ReportResult, write_report
from tpugraphs_tools.publish.report.stats import ReportStats, compute_stats
from tpugraphs_tools.publish.tree.export import (
    ExportResult,
    FilePlan,
    export_tpugraphs,
    plan_export,
)
from tpugraphs_tools.publish.tree.importer import (
    ImportResult,
    arrays_fingerprint,
    import_tpugraphs,
    scan_tree,
)
from tpugraphs_tools.publish.tree.official import (
    KEYS,
    SPLITS,
    TreeEntry,
    parse_tree_path,
    tree_path,
)
from tpugraphs_tools.publish.tuning.importer import (
    FileSummary,
    TuningImportResult,
    import_tuning_data,
)
from tpugraphs_tools.publish.tuning.proto import TuningFile, decode_tuning_file

__all__ = [
    "DEFAULT_RATIOS", "KEYS", "SPLITS", "SPLIT_BY", "ExportResult", "FilePlan", "FileSummary",
    "ImportResult",
    "PublishResult", "ReportResult", "ReportStats", "SplitPlan", "TreeEntry", "TuningFile",
    "TuningImportResult", "arrays_fingerprint", "assign_splits", "compute_stats", "dataset_name",
    "decode_tuning_file", "export_tpugraphs", "import_tpugraphs", "import_tuning_data",
    "parse_ratios", "parse_tree_path", "plan_export", "publish_dataset", "scan_tree",
    "tree_path", "write_report",
]
