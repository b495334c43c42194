"""Layout configurations: a ``minor_to_major`` per tensor slot of each configurable node.

Slots follow TpuGraphs' layout features (``format.LAYOUT_CONFIG_WIDTH``): slot 0 is the node's
output, slot 1 its first operand (input / lhs), slot 2 its second operand (convolution kernel,
dot rhs). A slot left to the compiler is encoded as six −1; a chosen layout as its
minor_to_major followed by −1 padding.

Physical identity: a dense layout's memory order is fixed by the order of the dims larger than
1 (a size-1 dim always has index 0, so its stride never matters; a tensor with a 0-size dim holds
nothing). Two ``minor_to_major`` of one tensor are the same memory order iff their
:func:`physical_order` is equal. Only tensors with at least two dims larger than 1 (and none of
size 0) can be laid out in more than one way, so only they are configurable, and every chosen
layout is stored as its canonical representative (:meth:`LayoutTensor.canonical`): equal
configs are then exactly the physically identical ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpugraphs_tools.format import CONFIGURABLE_OPCODES, LAYOUT_CONFIG_WIDTH
from tpugraphs_tools.hlo import Module

NUM_LAYOUT_FEATURES = LAYOUT_CONFIG_WIDTH
SLOTS = ("output", "input", "kernel")
MAX_RANK = 6
Layout = tuple[int, ...]


@dataclass(frozen=True)
class LayoutTensor:
    """One configurable tensor: node ``config_index`` (row in node_config_ids), slot, shape."""

    config_index: int
    node_index: int
    node: str
    computation: str
    opcode: str
    slot: int
    operand: str | None      # producing instruction for input slots; None for the output
    element_type: str
    dims: tuple[int, ...]
    default: Layout          # the layout the module states (row-major for jax lowerings)
    node_operands: tuple[str, ...] = ()   # the node's operands (a reshape's output is theirs)

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def can_differ(self) -> bool:
        """Whether two layouts of this tensor can be different memory orders."""
        return can_differ(self.dims)

    def physical(self, layout: Layout) -> Layout:
        return physical_order(self.dims, layout)

    def canonical(self, layout: Layout) -> Layout:
        """The representative ``minor_to_major`` of ``layout``'s memory order.

        The dims larger than 1 take, in ``layout``'s order, the positions they hold in the
        default layout; size-1 dims stay where the default has them. So the representative is
        always a valid permutation, and it *is* the default when the order is the default's.
        """
        order = iter(self.physical(layout))
        return tuple(next(order) if self.dims[d] > 1 else d for d in self.default)

    def is_default_order(self, layout: Layout) -> bool:
        return self.physical(layout) == self.physical(self.default)


def physical_order(dims: tuple[int, ...], layout: Layout) -> Layout:
    """The dims larger than 1 in ``layout``'s minor-to-major order (empty if any dim is 0)."""
    if any(d == 0 for d in dims):
        return ()
    return tuple(d for d in layout if dims[d] > 1)


def can_differ(dims: tuple[int, ...]) -> bool:
    """At least two dims larger than 1 and none empty: more than one memory order exists."""
    return all(d != 0 for d in dims) and sum(d > 1 for d in dims) >= 2


@dataclass
class LayoutSpace:
    """Every tensor a layout config may constrain, for one module."""

    num_config_nodes: int
    tensors: list[LayoutTensor]

    def by_key(self) -> dict[tuple[int, int], LayoutTensor]:
        return {(t.config_index, t.slot): t for t in self.tensors}

    def canonical(self, config: LayoutConfig) -> LayoutConfig:
        """``config`` with every layout replaced by its canonical representative."""
        tensors = self.by_key()
        return LayoutConfig.of({key: tensors[key].canonical(layout) if key in tensors else layout
                                for key, layout in config.layouts})


def _row_major(rank: int) -> Layout:
    return tuple(range(rank - 1, -1, -1))


def layout_space(module: Module) -> LayoutSpace:
    """Configurable tensors of ``module``: the slot tensors whose layouts can differ."""
    space = slot_tensors(module)
    return LayoutSpace(space.num_config_nodes, [t for t in space.tensors if t.can_differ])


def slot_tensors(module: Module) -> LayoutSpace:
    """Every array slot tensor of rank 2–6 of the configurable nodes, trivial ones included.

    What the config space held before size-1 dims were taken into account; kept for the
    measurement of how many of them have a single memory order (bench/bench_layout_space.py).
    """
    tensors: list[LayoutTensor] = []
    config_index = 0
    for node_index, (comp, inst) in enumerate(module.instructions()):
        if inst.opcode not in CONFIGURABLE_OPCODES:
            continue
        by_name = {i.name: i for i in comp.instructions}
        output: str | None = None  # slot 0, the output, has no producing operand
        candidates = [(0, output, inst.shape)]
        for slot, position in ((1, 0), (2, 1)):
            if position < len(inst.operands):
                producer = by_name.get(inst.operands[position])
                if producer is not None:
                    candidates.append((slot, producer.name, producer.shape))
        for slot, operand, shape in candidates:
            if shape.is_tuple or not 2 <= shape.rank <= MAX_RANK:
                continue
            default = shape.minor_to_major or _row_major(shape.rank)
            tensors.append(LayoutTensor(config_index, node_index, inst.name, comp.name,
                                        inst.opcode, slot, operand, shape.element_type,
                                        shape.dims, tuple(default), tuple(inst.operands)))
        config_index += 1
    return LayoutSpace(config_index, tensors)


@dataclass(frozen=True)
class LayoutConfig:
    """Chosen layouts keyed by (config_index, slot); absent keys are left to the compiler."""

    layouts: tuple[tuple[tuple[int, int], Layout], ...] = ()

    @classmethod
    def of(cls, layouts: dict[tuple[int, int], Layout]) -> LayoutConfig:
        return cls(tuple(sorted((k, tuple(v)) for k, v in layouts.items())))

    @property
    def is_default(self) -> bool:
        return not self.layouts

    def as_dict(self) -> dict[tuple[int, int], Layout]:
        return dict(self.layouts)

    def encode(self, num_config_nodes: int) -> np.ndarray:
        """TpuGraphs ``node_config_feat`` row: float32 [nc, NUM_LAYOUT_FEATURES], −1 where the
        compiler picks."""
        feat = np.full((num_config_nodes, NUM_LAYOUT_FEATURES), -1.0, dtype=np.float32)
        for (node, slot), layout in self.layouts:
            feat[node, slot * MAX_RANK: slot * MAX_RANK + len(layout)] = layout
        return feat

    def to_json(self, space: LayoutSpace) -> dict[str, dict[str, list[int]]]:
        """Human-readable form for configs.parquet: node name → slot name → minor_to_major."""
        tensors = space.by_key()
        out: dict[str, dict[str, list[int]]] = {}
        for key, layout in self.layouts:
            t = tensors[key]
            out.setdefault(t.node, {})[SLOTS[t.slot]] = list(layout)
        return out

