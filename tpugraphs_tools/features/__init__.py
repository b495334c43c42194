"""Featurizers: HLO modules → TpuGraphs arrays."""

from tpugraphs_tools.features.opcodes import (
    CONFIGURABLE_OPCODES,
    OPCODE_IDS,
    OPCODE_NAMES,
    opcode_id,
)
from tpugraphs_tools.features.tpugraphs import NUM_NODE_FEATURES, Graph, featurize

__all__ = [
    "CONFIGURABLE_OPCODES",
    "NUM_NODE_FEATURES",
    "OPCODE_IDS",
    "OPCODE_NAMES",
    "Graph",
    "featurize",
    "opcode_id",
]
