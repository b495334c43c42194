"""Collection pipelines: programs/HLO → graphs → configs → measured runtimes → dataset."""

from tpugraphs_tools.collect.graphs import CollectedGraph, collect_hlo_file, collect_source
from tpugraphs_tools.collect.layout import collect_layout_configs
from tpugraphs_tools.collect.run import CollectItem, CollectRequest, CollectSummary, collect
from tpugraphs_tools.measure.options import MeasureOptions

__all__ = ["CollectItem", "CollectRequest", "CollectSummary", "CollectedGraph", "MeasureOptions",
           "collect", "collect_hlo_file", "collect_layout_configs", "collect_source"]
