"""Collection pipelines: programs/HLO → graphs → configs → measured runtimes → dataset."""

from tpugraphs_tools.collect.graphs import CollectedGraph, collect_hlo_file, collect_source
from tpugraphs_tools.collect.run import CollectRequest, CollectSummary, collect

__all__ = ["CollectRequest", "CollectSummary", "CollectedGraph", "collect", "collect_hlo_file",
           "collect_source"]
