"""Program zoo: JAX programs tgt lowers to HLO (see docs/programs.md)."""

from tpugraphs_tools.programs.registry import (
    Program,
    ProgramArgs,
    ProgramArgsError,
    UnknownPresetError,
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
    "default_args",
    "get_program",
    "list_programs",
    "lower",
    "register",
]
