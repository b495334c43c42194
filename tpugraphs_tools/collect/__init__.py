"""Collection pipelines: programs/HLO → graphs → configs → measured runtimes → dataset."""

from tpugraphs_tools.collect.failures import EXIT_PARTIAL, RETRY_FLAG
from tpugraphs_tools.collect.graphs import CollectedGraph, collect_hlo_file, collect_source
from tpugraphs_tools.collect.layout import collect_layout_configs
from tpugraphs_tools.collect.plan import (
    load_plan_file,
    make_item,
    plan_warnings,
    request_from_plan,
)
from tpugraphs_tools.collect.progress import BarLine, ProgressEvent, bar_lines, format_eta
from tpugraphs_tools.collect.ray_executor import collect_with_ray
from tpugraphs_tools.collect.request import CollectItem, CollectRequest
from tpugraphs_tools.collect.run import CollectSummary, collect
from tpugraphs_tools.collect.status import collection_status
from tpugraphs_tools.collect.tile.options import TileOptions
from tpugraphs_tools.collect.tile.program import TileResult, collect_tile
from tpugraphs_tools.measure import MeasureOptions

__all__ = [
    "EXIT_PARTIAL", "RETRY_FLAG", "BarLine", "CollectItem", "CollectRequest", "CollectSummary",
    "CollectedGraph", "MeasureOptions", "ProgressEvent", "TileOptions", "TileResult", "bar_lines",
    "collect", "collect_hlo_file", "collect_layout_configs", "collect_source", "collect_tile",
    "collect_with_ray", "collection_status", "format_eta", "load_plan_file", "make_item",
    "plan_warnings", "request_from_plan",
]
