"""Featurizers: HLO modules → TpuGraphs arrays (the opcode-id table lives in ``format``)."""

from tpugraphs_tools.features.tpugraphs import NUM_NODE_FEATURES, Graph, featurize

__all__ = ["NUM_NODE_FEATURES", "Graph", "featurize"]
