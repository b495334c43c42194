"""HLO ingestion: parsed modules from jax programs, HLO text and serialized protos, and the
kernels of an optimized module as modules of their own (``kernels.py``).

``attributes`` is a deliberately public module (attribute parsers used as ``A.window(...)``).
"""

from tpugraphs_tools.hlo import attributes
from tpugraphs_tools.hlo.kernels import Extraction, Kernel, compilable_text, extract_kernels
from tpugraphs_tools.hlo.module import Computation, Instruction, Module, Shape
from tpugraphs_tools.hlo.parse import parse_hlo_text
from tpugraphs_tools.hlo.paths import (
    absolute_paths,
    portable_graph_row,
    portable_path,
    portable_stored_hlo,
    portable_text,
    stored_source_files,
)
from tpugraphs_tools.hlo.proto import proto_to_text
from tpugraphs_tools.hlo.sources import (
    HloSource,
    check_file,
    fingerprint,
    from_compiled,
    from_file,
    from_lowered,
    stored_hlo,
)
from tpugraphs_tools.hlo.text import (
    computation_header,
    match_close,
    parse_shape,
    split_top_level,
)

__all__ = [
    "Computation", "Extraction", "HloSource", "Instruction", "Kernel", "Module", "Shape",
    "absolute_paths", "attributes", "check_file", "compilable_text", "computation_header",
    "extract_kernels", "fingerprint", "from_compiled", "from_file", "from_lowered",
    "match_close", "parse_hlo_text", "parse_shape", "portable_graph_row",
    "portable_path", "portable_stored_hlo",
    "portable_text", "proto_to_text", "split_top_level", "stored_hlo", "stored_source_files",
]
