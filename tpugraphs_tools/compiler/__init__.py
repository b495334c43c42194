"""The compiler side of a config: apply it to HLO text, compile with the entry interface
pinned, and read back from the optimized module what the compiler did (realized layouts,
the key that tells a new program from one compiled before).

Apart from ``measure/`` (process plumbing, timing engines, statistics): these functions run
in one process on one module and know nothing of workers or labels.
"""

from tpugraphs_tools.compiler.apply import ConstraintSlot, apply_layout_config, constraint_slots
from tpugraphs_tools.compiler.compile import (
    EntrySignature,
    compile_hlo_source,
    compile_text,
    compile_with_code_hash,
    entry_signature,
    input_bytes,
    make_inputs,
    run,
)
from tpugraphs_tools.compiler.readback import compile_and_read
from tpugraphs_tools.compiler.realized import (
    Realized,
    check_slots,
    code_key,
    honoured_json,
    options_key,
    realized_layouts,
)

__all__ = [
    "ConstraintSlot",
    "EntrySignature",
    "Realized",
    "apply_layout_config",
    "check_slots",
    "code_key",
    "compile_and_read",
    "compile_hlo_source",
    "compile_text",
    "compile_with_code_hash",
    "constraint_slots",
    "entry_signature",
    "honoured_json",
    "input_bytes",
    "make_inputs",
    "options_key",
    "realized_layouts",
    "run",
]
