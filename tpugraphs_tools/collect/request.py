"""What a collection is asked to do: its items (``CollectItem``) and the request around them.

Apart from ``run.py`` (which carries a request out) so that the checks made before the first
compile (``check.py``) and the plan reader (``plan.py``) can use the records without importing
the pipeline that runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tpugraphs_tools.measure import MeasureOptions


@dataclass
class CollectItem:
    """One graph to collect: ``program`` (zoo or ``module:fn``) or ``hlo`` (a file path)."""

    program: str | None = None
    hlo: str | None = None
    program_args: Any = None               # ProgramArgs (None fields: the preset's defaults)
    options: MeasureOptions | None = None  # layout: None or configs == 0 is graph only
    collection: str = "layout"             # "layout" (whole program) | "tile" (its kernels)
    # the name the dataset already stores this user program under (collect/program_names.py)
    stored_as: str | None = None
    # the plan item it came from (errors name it); not part of what is collected
    where: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if (self.program is None) == (self.hlo is None):
            raise ValueError("a collect item names exactly one of program or hlo")

    @property
    def label(self) -> str:
        return self.program or self.hlo or "?"

    @property
    def program_name(self) -> str:
        """The program of an item that has no HLO file."""
        assert self.program is not None  # __post_init__: one of the two is set
        return self.program


@dataclass
class CollectRequest:
    items: list[CollectItem] = field(default_factory=list)
    out: str = "data/"
    backend: str | None = None
    retry_unmeasured: bool = False  # measure again graphs stored unmeasured (failures.py)
    keep_source_paths: bool = False  # store this machine's paths in HLO and rows (opt-in)
    # False: worker output (XLA's logging included) goes to <out>/.tgt-logs/collect.log;
    # True: to this process's stdout/stderr, raw (``tgt collect --verbose``).
    verbose: bool = False


def resolve_args(name: str, requested: Any) -> Any:
    """Fill the preset's image_size/seq_len so every stored graph has explicit arguments."""
    from tpugraphs_tools.programs import ProgramArgs, default_args, get_program

    requested = requested or ProgramArgs()
    overrides = {k: v for k, v in requested.as_dict().items() if v is not None and k != "preset"}
    return default_args(get_program(name), requested.preset, **overrides)
