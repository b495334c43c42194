"""Where the optimized module holds a value, and in which layout, in the value's own dims.

XLA:GPU keeps nearly every value inside a fusion: a constrained tensor exists in memory only
as an operand or an output of that fusion (the fused computation's parameters and root), often
transposed, re-shaped or with its size-1 dims dropped on the way, and the top level reaches
those through bitcasts and get-tuple-elements. :class:`Fusions` follows a value to those
holders and :func:`slot_layout` reads a holder's layout in a constrained slot's dim numbering.
Kept apart from ``realized.py``, which decides what counts as evidence for a slot and builds
the ``realized`` record from it (docs/gpu.md, "Layout slots on XLA:GPU").
"""

from __future__ import annotations

from collections import defaultdict

from tpugraphs_tools.compiler.apply import ConstraintSlot
from tpugraphs_tools.hlo import Computation, Instruction, Module, Shape
from tpugraphs_tools.hlo import attributes as A


def slot_layout(shape: Shape | None, slot: ConstraintSlot) -> tuple[int, ...] | None:
    """The layout of ``shape`` in the slot's dim numbering, if it holds a tensor of the slot's
    type and dims; dims of size 1 may differ (XLA:GPU drops or adds them with bitcasts), since
    they do not change the memory order (configs.physical_order ignores them), and so may a
    bitcast's split or merged dims (:func:`_regrouped`)."""
    if (shape is None or shape.is_tuple or shape.element_type != slot["element_type"]
            or shape.minor_to_major is None):
        return None
    if list(shape.dims) == slot["dims"]:
        return tuple(shape.minor_to_major)
    order = _regrouped(shape, slot["dims"])
    if order is None:
        return None
    return (*order, *(i for i, d in enumerate(slot["dims"]) if d == 1))


def _regrouped(shape: Shape, dims: list[int]) -> list[int] | None:
    """The dims (size > 1) of ``dims`` in memory order, minor first, read from ``shape``, a
    bitcast of that tensor: the same dims, or some of them split or merged (XLA:GPU splits the
    contracting dim of a split-K GEMM, [256, 512] read as [256, 4, 128], and merges heads and
    head dims, [256, 8, 64] written as [256, 512]). A split dim's parts must lie together in
    memory, row-major, else ``shape`` is not a view of that tensor; None then."""
    own = [i for i, d in enumerate(shape.dims) if d != 1]
    want = [i for i, d in enumerate(dims) if d != 1]
    groups: list[tuple[list[int], list[int]]] = []  # shape dims <-> the dims they hold
    a = b = 0
    while a < len(own) and b < len(want):
        held, wanted = [own[a]], [want[b]]
        size, target = shape.dims[own[a]], dims[want[b]]
        a, b = a + 1, b + 1
        while size != target:
            if size < target and a < len(own):
                held.append(own[a])
                size, a = size * shape.dims[own[a]], a + 1
            elif target < size and b < len(want):
                wanted.append(want[b])
                target, b = target * dims[want[b]], b + 1
            else:
                return None
        if len(held) > 1 and len(wanted) > 1:
            return None  # a reshape that is not a split or a merge
        groups.append((held, wanted))
    if a != len(own) or b != len(want):
        return None
    rank = {d: r for r, d in enumerate(d for d in shape.minor_to_major or () if d in own)}
    for held, _ in groups:  # parts of a split dim: adjacent, the last one minor
        if [rank[d] for d in held] != list(range(rank[held[0]], rank[held[-1]] - 1, -1)):
            return None
    groups.sort(key=lambda group: rank[group[0][-1]])
    return [d for _, wanted in groups for d in reversed(wanted)]


# Ops that hand a value on unchanged (maybe re-laid out or re-shaped): a constrained value is
# followed through them to the boundary of the fusion that holds it.
_SAME_VALUE = frozenset({"bitcast", "copy", "transpose", "reshape", "custom-call", "convert"})
_TOP_LEVEL_SAME = frozenset({"bitcast"})
DimMap = dict[int, int]  # a dim (size > 1) of the instruction reached -> the start's dim


def _non_unit_physical(shape: Shape) -> list[int]:
    return [d for d in reversed(shape.minor_to_major or ()) if shape.dims[d] != 1]


def _through(step: Instruction, source: Shape, target: Shape, dims: DimMap, forward: bool
             ) -> DimMap | None:
    """``dims`` (of ``source``) carried to ``target`` across ``step``; None: not mappable."""
    if step.opcode == "transpose":
        perm = A.int_list(step.attrs.get("dimensions"))  # output dim i = operand dim perm[i]
        if forward:
            return {i: dims[p] for i, p in enumerate(perm) if p in dims}
        return {p: dims[i] for i, p in enumerate(perm) if i in dims}
    if list(source.dims) == list(target.dims) and step.opcode != "bitcast":
        return dims
    if source.minor_to_major is None or target.minor_to_major is None:
        return None
    src, dst = _non_unit_physical(source), _non_unit_physical(target)
    if [source.dims[d] for d in src] != [target.dims[d] for d in dst]:
        return None  # a reshape that splits or merges dims: the value's dims are gone
    return {t: dims[s] for s, t in zip(src, dst, strict=True) if s in dims}


def _view(shape: Shape, dims: DimMap, start: Shape) -> Shape | None:
    """``shape``'s memory order written in the start instruction's dims."""
    wanted = {i for i, d in enumerate(start.dims) if d != 1}
    if shape.is_tuple or shape.minor_to_major is None or set(dims.values()) != wanted:
        return None
    if shape.dims == start.dims and all(k == v for k, v in dims.items()):
        return shape  # the value itself, or a copy of it with its own dims
    order = [dims[d] for d in shape.minor_to_major if d in dims]
    units = [i for i, d in enumerate(start.dims) if d == 1]
    return Shape(shape.element_type, start.dims, (*order, *units))


class Fusions:
    """Where XLA:GPU keeps a tensor: a value computed inside a fusion exists in memory only
    as an operand or an output of that fusion (the fused computation's parameters and root),
    often transposed or re-shaped on the way; the top level reaches those through bitcasts
    and get-tuple-elements. Each holder's layout is mapped back to the value's own dims."""

    def __init__(self, module: Module) -> None:
        self.callers: dict[str, tuple[Computation, Instruction]] = {}
        self.by_name: dict[str, dict[str, Instruction]] = {}
        self.users: dict[str, dict[str, list[Instruction]]] = {}
        for comp in module.computations:
            self.by_name[comp.name] = {i.name: i for i in comp.instructions}
            users: dict[str, list[Instruction]] = defaultdict(list)
            for inst in comp.instructions:
                for operand in inst.operands:
                    users[operand].append(inst)
                if inst.opcode == "fusion":
                    for called in inst.called_computations:
                        self.callers[called] = (comp, inst)
            self.users[comp.name] = users

    def _same_value(self, comp: Computation) -> frozenset[str]:
        """Inside a fusion every op on the way to its boundary is followed; at the top level
        only bitcasts (the same bytes): a top-level copy made for another user's layout is
        not evidence of what the constraint got."""
        return _SAME_VALUE if comp.name in self.callers else _TOP_LEVEL_SAME

    def _sources(self, comp: Computation, inst: Instruction, dims: DimMap, depth: int = 8
                 ) -> list[tuple[Instruction, DimMap]]:
        """``inst`` and what holds the same value before it: through same-value ops back to a
        fused computation's parameter, then the caller's operand, recursively."""
        out = [(inst, dims)]
        names = self.by_name[comp.name]
        if depth <= 0:
            return out
        if (inst.opcode in self._same_value(comp) and inst.operands
                and inst.operands[0] in names):
            operand = names[inst.operands[0]]
            carried = _through(inst, inst.shape, operand.shape, dims, forward=False)
            if carried:
                out += self._sources(comp, operand, carried, depth - 1)
        elif inst.opcode == "parameter" and comp.name in self.callers:
            caller_comp, fusion = self.callers[comp.name]
            number = inst.parameter_number
            if number is not None and number < len(fusion.operands):
                outside = self.by_name[caller_comp.name].get(fusion.operands[number])
                if outside is not None:
                    out += self._sources(caller_comp, outside, dims, depth - 1)
        return out

    def _sinks(self, comp: Computation, inst: Instruction, dims: DimMap, depth: int = 8
               ) -> list[tuple[Instruction, DimMap]]:
        """What holds ``inst``'s value after it: same-value users, a fused computation's root
        (or root tuple element) becoming the fusion's output or get-tuple-element."""
        out = [(inst, dims)]
        if depth <= 0:
            return out
        for user in self.users[comp.name].get(inst.name, []):
            if user.opcode in self._same_value(comp) and user.operands[0] == inst.name:
                carried = _through(user, inst.shape, user.shape, dims, forward=True)
                if carried:
                    out += self._sinks(comp, user, carried, depth - 1)
            elif user.opcode == "tuple" and user.is_root and comp.name in self.callers:
                caller_comp, fusion = self.callers[comp.name]
                index = user.operands.index(inst.name)
                for gte in self.users[caller_comp.name].get(fusion.name, []):
                    if gte.opcode == "get-tuple-element" and \
                            gte.attrs.get("index") == str(index):
                        out += self._sinks(caller_comp, gte, dims, depth - 1)
        if inst.is_root and comp.name in self.callers:
            caller_comp, fusion = self.callers[comp.name]
            out += self._sinks(caller_comp, fusion, dims, depth - 1)
        return out

    @staticmethod
    def _start(inst: Instruction) -> DimMap:
        return {i: i for i, d in enumerate(inst.shape.dims) if d != 1}

    def operand_holders(self, comp: Computation, inst: Instruction, index: int | None = None
                        ) -> list[Shape]:
        """What holds the values ``inst`` reads (operand ``index`` only, if given), each
        layout in that operand's dims."""
        names = self.by_name[comp.name]
        operands = inst.operands if index is None else inst.operands[index:index + 1]
        out = []
        for name in operands:
            if name not in names or names[name].shape.is_tuple:
                continue
            start = names[name]
            out += [view for held, dims in self._sources(comp, start, self._start(start))
                    if (view := _view(held.shape, dims, start.shape)) is not None]
        return out

    def value_holders(self, comp: Computation, inst: Instruction) -> list[Shape]:
        """What holds ``inst``'s own value (itself, and where it leaves its fusion), each
        layout in ``inst``'s dims."""
        if inst.shape.is_tuple:
            return []
        return [view for held, dims in self._sinks(comp, inst, self._start(inst))
                if (view := _view(held.shape, dims, inst.shape)) is not None]
