"""Program zoo: JAX programs tgt lowers to HLO (see docs/programs.md).

``sizes`` is a deliberately public module, and a script (``python -m
tpugraphs_tools.programs.sizes``): not imported here, so running it does not import it twice.
"""

from tpugraphs_tools.programs.catalog import catalog_status
from tpugraphs_tools.programs.registry import (
    Program,
    ProgramArgs,
    ProgramArgsError,
    UnknownPresetError,
    check_buildable,
    default_args,
    get_program,
    list_programs,
    lower,
    register,
)

__all__ = [
    "Program",
    "ProgramArgs",
    "ProgramArgsError",
    "UnknownPresetError",
    "catalog_status",
    "check_buildable",
    "default_args",
    "get_program",
    "list_programs",
    "lower",
    "register",
]
