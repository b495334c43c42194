"""What the compiler actually did with a config, read back from the optimized module.

Instruction names do not survive the HLO → MLIR → HLO compile route (``conv.2.tgt_out``
becomes ``conv_2_tgt_out.1``, and the optimized module reuses original names for unrelated
instructions), so constrained tensors are found by the ``op_name`` tags compiler/apply.py puts
on each constraint and on the value it constrains; the copies layout assignment inserts inherit
the op_name of the value they copy. For each constrained slot the evidence is:

- *constraint*: a non-fusion instruction tagged with the constraint reads an operand of the
  tensor's element type and dims: that operand holds the constrained value (a copy out of
  the requested layout reads it, in whatever layout it really has);
- *producer*: a non-fusion instruction tagged with the value's producer, of the tensor's
  element type and dims: the value itself or a copy of it (the copy into the requested layout);
  a tagged broadcast's operand too, when XLA folded the value's own broadcast into it;
- *same value*: an input constraint that reads another constraint (the operand's output is
  constrained too) holds the same value: one's evidence in a layout of the same memory order
  counts for the other.

``honoured`` is true when some evidence has the requested memory order (size-1 dims ignored),
false when the tensor was located but only in other orders, null when nothing was located.
Evidence is a set, so the record does not depend on instruction order or names. Where a
value is held (through fusion boundaries, XLA:GPU) is found in ``value_holders.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from typing import Any, NotRequired, TypedDict

from tpugraphs_tools.compiler.apply import ConstraintSlot
from tpugraphs_tools.compiler.value_holders import Fusions, slot_layout
from tpugraphs_tools.configs import SLOTS as SLOT_NAMES
from tpugraphs_tools.configs import physical_order
from tpugraphs_tools.hlo import Computation, Instruction, Module, Shape, fingerprint

COPY_OPCODES = frozenset({"copy", "transpose"})
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')


class SlotCheck(TypedDict):
    """What the optimized module showed for one constrained slot (:func:`check_slots`)."""

    node: str
    slot: str                      # configs.SLOTS name
    wanted: list[int]              # the requested minor_to_major
    realized: list[int] | None     # a layout found in the requested order, else the first found
    found: list[list[int]]         # every layout the value was seen in, sorted
    honoured: bool | None          # requested order found / only others / not located
    node_layout: list[int] | None  # the layout the node itself used, when it used one


class Realized(TypedDict):
    """What the compiler did with a config, read back from the optimized module: the
    configs.parquet ``realized`` JSON (sorted keys) of a layout config; the tile collection
    adds its kernel space's facts to the JSON (collect/tile/kernel.py)."""

    copies: int                    # copy/transpose instructions in the optimized module
    slots: list[SlotCheck]         # one per constrained slot (none for the default)
    fingerprint: str               # of the optimized module
    # SessionSpec.dedupe_on_code: hash of the generated machine code (None: no code dumped)
    code_hash: NotRequired[str | None]


def options_key(optimized_fingerprint: str, options: dict[str, Any] | None) -> str:
    """Dedupe key: the same optimized HLO under different options can run at different speeds."""
    payload = optimized_fingerprint + json.dumps(options or {}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def code_key(optimized_fingerprint: str, code_hash: str | None) -> str:
    """Dedupe key on generated code (``SessionSpec.dedupe_on_code``): no dumped code means
    library/runtime thunks only, and the HLO decides everything. A resumed tile kernel rebuilds
    its measured configs' keys from their stored fingerprint and code hash."""
    return options_key(f"{optimized_fingerprint}:{code_hash or 'no-code'}", None)


def op_name(inst: Instruction) -> str | None:
    match = _OP_NAME.search(inst.attrs.get("metadata", ""))
    return match.group(1) if match else None


def _evidence(optimized: Module, slots: list[ConstraintSlot]
              ) -> tuple[dict[str, set[tuple[int, ...]]], list[set[tuple[int, ...]]]]:
    """Layouts each constrained value was seen in, and per slot those the node itself used."""
    tagged: dict[str, list[tuple[Computation, Instruction]]] = defaultdict(list)
    for comp in optimized.computations:
        for inst in comp.instructions:
            name = op_name(inst)
            if name is not None and name.startswith("tgt.") and inst.opcode != "fusion":
                tagged[name].append((comp, inst))
    fusions = Fusions(optimized)

    def layouts(shapes: list[Shape], slot: ConstraintSlot) -> set[tuple[int, ...]]:
        return {layout for s in shapes if (layout := slot_layout(s, slot)) is not None}

    values: dict[str, set[tuple[int, ...]]] = defaultdict(set)
    nodes = []
    for slot in slots:
        seen = values[slot["value"]]
        for comp, inst in tagged.get(slot["tag"], []):   # copies out of / into the constraint
            seen |= layouts([*fusions.value_holders(comp, inst),
                             *fusions.operand_holders(comp, inst)], slot)
        for tag in slot["value_tags"]:                   # the producer and copies of it
            for comp, inst in tagged.get(tag, []):
                seen |= layouts(fusions.value_holders(comp, inst), slot)
                if inst.opcode == "broadcast":           # a broadcast merged into this one
                    seen |= layouts(fusions.operand_holders(comp, inst), slot)
        node: set[tuple[int, ...]] = set()
        index = SLOT_NAMES.index(slot["slot"]) - 1       # operand index; -1 is the output
        for comp, inst in tagged.get(slot["node_tag"], []):
            if inst.opcode != slot["opcode"]:
                continue
            if index < 0:
                node |= layouts(fusions.value_holders(comp, inst), slot)
            else:
                node |= _operand_layouts(fusions, comp, inst, index, slot)
        seen |= node
        nodes.append(node)
    return values, nodes


def _operand_layouts(fusions: Fusions, comp: Computation, inst: Instruction, index: int,
                     slot: ConstraintSlot) -> set[tuple[int, ...]]:
    """Layouts of the node's operand ``index``; when that operand does not hold the slot's
    tensor, those of the one other operand that does: XLA:GPU swaps a GEMM's operands to
    write its output in the order it wants (a weight read as the left operand)."""
    def held(i: int) -> set[tuple[int, ...]]:
        return {lay for s in fusions.operand_holders(comp, inst, i)
                if (lay := slot_layout(s, slot)) is not None}

    own = held(index) if index < len(inst.operands) else set()
    if own:
        return own
    others = [found for i in range(len(inst.operands)) if i != index and (found := held(i))]
    return others[0] if len(others) == 1 else set()


def check_slots(optimized: Module, slots: list[ConstraintSlot]) -> list[SlotCheck]:
    """One record per constrained slot: requested layout, layouts found, ``honoured``."""
    values, nodes = _evidence(optimized, slots)
    records: list[SlotCheck] = []
    for slot, node in zip(slots, nodes, strict=True):
        dims = tuple(slot["dims"])
        found = sorted(values[slot["value"]])
        order = physical_order(dims, tuple(slot["wanted"]))
        match = [lay for lay in found if physical_order(dims, lay) == order]
        realized = match[0] if match else (found[0] if found else None)
        used = sorted(node)
        records.append({
            "node": slot["node"], "slot": slot["slot"], "wanted": slot["wanted"],
            "realized": list(realized) if realized is not None else None,
            "found": [list(lay) for lay in found],
            "honoured": True if match else (False if found else None),
            "node_layout": list(used[0]) if len(used) == 1 else None,
        })
    return records


def realized_layouts(optimized: Module, slots: list[ConstraintSlot]) -> Realized:
    """Copies/transposes XLA inserted, the per-slot check, the optimized fingerprint."""
    copies = sum(inst.opcode in COPY_OPCODES for _, inst in optimized.instructions())
    return {"copies": copies, "slots": check_slots(optimized, slots),
            "fingerprint": fingerprint(optimized)}


def honoured_json(realized: Realized | None) -> str | None:
    """configs.parquet ``honoured``: node → slot → true/false/null, like ``config``."""
    if not realized or "slots" not in realized:
        return None
    out: dict[str, dict[str, bool | None]] = {}
    for record in realized["slots"]:
        out.setdefault(record["node"], {})[record["slot"]] = record["honoured"]
    return json.dumps(out, sort_keys=True)
