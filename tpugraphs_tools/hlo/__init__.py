"""HLO ingestion: parsed modules from jax programs, HLO text and serialized protos."""

from tpugraphs_tools.hlo.module import Computation, Instruction, Module, Shape
from tpugraphs_tools.hlo.sources import (
    HloSource,
    fingerprint,
    from_compiled,
    from_file,
    from_lowered,
)
from tpugraphs_tools.hlo.text import parse_hlo_text, parse_shape

__all__ = [
    "Computation", "HloSource", "Instruction", "Module", "Shape", "fingerprint", "from_compiled",
    "from_file", "from_lowered", "parse_hlo_text", "parse_shape",
]
