"""In-memory HLO module: the one structure every reader produces and the featurizer consumes.

Attributes are kept as their raw HLO-text strings and decoded on demand (see ``attributes.py``),
because only a few instructions need any of them and decoding all of them would dominate the
cost of ingesting a 100k-instruction module.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Shape:
    """An HLO shape: an array (element type + dims + optional layout) or a tuple of shapes."""

    element_type: str
    dims: tuple[int, ...] = ()
    minor_to_major: tuple[int, ...] | None = None
    tuple_shapes: tuple[Shape, ...] = ()

    @property
    def is_tuple(self) -> bool:
        return self.element_type == "tuple"

    @property
    def rank(self) -> int:
        return len(self.dims)

    def to_text(self, layout: bool = True) -> str:
        """HLO text of this shape, e.g. ``f32[2,3]{1,0}``."""
        if self.is_tuple:
            return "(" + ", ".join(s.to_text(layout) for s in self.tuple_shapes) + ")"
        text = f"{self.element_type}[{','.join(str(d) for d in self.dims)}]"
        if layout and self.minor_to_major is not None and self.dims:
            text += "{" + ",".join(str(d) for d in self.minor_to_major) + "}"
        return text


@dataclass(slots=True)
class Instruction:
    """One HLO instruction; ``attrs`` maps attribute names to their unparsed text."""

    name: str
    opcode: str
    shape: Shape
    operands: list[str]
    attrs: dict[str, str] = field(default_factory=dict)
    is_root: bool = False
    parameter_number: int = 0
    called_computations: list[str] = field(default_factory=list)
    line: int = 0  # source line of the text it was read from (0: not from text)


@dataclass(slots=True)
class Computation:
    name: str
    instructions: list[Instruction]
    is_entry: bool = False
    execution_thread: str = "main"  # ``}, execution_thread="host"`` in the text

    @property
    def root(self) -> Instruction:
        for inst in reversed(self.instructions):
            if inst.is_root:
                return inst
        return self.instructions[-1]


@dataclass(slots=True)
class Module:
    """A parsed module; ``computations`` are in post order (callees first, entry last)."""

    name: str
    computations: list[Computation]
    header: dict[str, str] = field(default_factory=dict)

    @property
    def entry(self) -> Computation:
        for comp in self.computations:
            if comp.is_entry:
                return comp
        return self.computations[-1]

    def computation(self, name: str) -> Computation:
        for comp in self.computations:
            if comp.name == name:
                return comp
        raise KeyError(name)

    def instructions(self) -> Iterator[tuple[Computation, Instruction]]:
        """Every instruction in TpuGraphs node order (computation post order, then topological)."""
        for comp in self.computations:
            for inst in comp.instructions:
                yield comp, inst

    @property
    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations)
