"""Process settings of the ``tgt`` command that must precede the import of pyarrow.

Why: Arrow picks its default allocator once, when pyarrow is loaded, from
``ARROW_DEFAULT_MEMORY_POOL``, and its Parquet reader always allocates from that pool. For
``tgt validate``, which reads millions of config rows batch by batch, the system allocator kept
peak RSS 35 MiB lower and grew less with the dataset than mimalloc, pyarrow's default
(validate/arrow_memory.py; docs/benchmarks.md, "Scale"). Other commands keep Arrow's default:
``tgt report`` peaks lower with it but grows more with the dataset (+12% from 1,200 to 4,800
graphs, against +6% with mimalloc in the same runs). A pool the user chose in the environment
stands.

``cli/__init__.py`` imports this module before any command module (they import pyarrow), so
both ``tgt`` and ``python -m tpugraphs_tools.cli`` get it; importing the CLI from a process
whose arguments are not a tgt command line (a test runner) changes nothing.
"""

from __future__ import annotations

import os
import sys

SYSTEM_ALLOCATOR_COMMANDS = ("validate",)


def command_of(argv: list[str]) -> str | None:
    """The subcommand: the first argument that is not an option (tgt's group takes no option
    with a value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def choose_arrow_allocator(argv: list[str]) -> None:
    if command_of(argv) in SYSTEM_ALLOCATOR_COMMANDS and "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


choose_arrow_allocator(sys.argv[1:])
