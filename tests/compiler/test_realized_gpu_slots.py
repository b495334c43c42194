"""Every constrained slot of the recorded GPU layout collection, located in gpt small's optimized
XLA:GPU module (H200, jax 0.11.2; docs/benchmarks/history/2026-12-04-gpu-h200-first-run.md).

Fixtures in tests/compiler/data, gzipped as recorded: ``gpu_gpt_small_unoptimized.hlo.gz`` is the
dataset's graphs/gpt.814772b10a1e.hlo.pb printed by ``hlo.proto_to_text`` (the module tgt
constrained), ``gpu_gpt_small_optimized.hlo.gz`` the probe's optimized module of the same program
(probes/extracted_kernels/gpt_small_bf16_optimized.hlo), ``gpu_gpt_small_layout_configs.json``
the 11 non-default configs of datasets/gpt_small_layout_a with the ``honoured`` the run stored
(null for 26 of the 27 slots with the lookup of that day).

The slots are built as the collection built them (``constraint_slots`` on the unoptimized module
with each recorded config). The optimized module was compiled without constraints, so it carries
jax's metadata, not tgt's tags; the tags are put where XLA's metadata propagation would put
them, by one rule for every slot (:func:`_derived`):

1. an instruction XLA cloned keeps its name with suffixes (``split.28`` is ``split.28.1.clone.1``
   inside a fusion) and its jax metadata (op_name and source location): same name up to
   ``.<n>``/``.clone`` suffixes and same metadata;
2. an instruction XLA rewrote keeps the metadata of the one it replaces under a new name (the
   ``dot_general`` of a split-K GEMM becomes ``dot``, ``reduce`` and ``convert``; a broadcast
   folds into the next one): jax emits a source op as a chain of instructions with one metadata,
   joined by data flow; the k-th chain with a given metadata in the unoptimized module (program
   order) is the k-th one in the optimized module (execution order, through fusion boundaries),
   when both modules hold as many. Every instruction of the chain derives from every one of the
   unoptimized chain.

An instruction deriving from several tagged instructions carries one op_name: that of one with
its own opcode, else the earliest. 23 of the 27 slots are located (the first GPU run: 1). The
other 4 are values XLA removed from this default compile: the softmax's ``max(x, -inf)`` (three
slots: its broadcasts of ``max``) and the causal mask XLA turned into a compare inside the
softmax fusion. Caveat: a constrained compile may fuse differently from this default-compiled
module (a constraint can keep a value XLA removes here), so this checks the lookup on real
XLA:GPU structure, not what any recorded config's compile did.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tpugraphs_tools.compiler.apply import ConstraintSlot, constraint_slots
from tpugraphs_tools.compiler.realized import check_slots
from tpugraphs_tools.configs import SLOTS, LayoutConfig, layout_space
from tpugraphs_tools.hlo import Computation, Instruction, Module, parse_hlo_text

DATA = Path(__file__).parent / "data"
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_FRAME = re.compile(r"stack_frame_id=(\d+)")
_CALLS = frozenset({"fusion", "call"})
Origin = tuple[str, tuple[tuple[str, ...], ...]]  # op_name, source frames in the program


def _read(name: str) -> str:
    return gzip.decompress((DATA / name).read_bytes()).decode()


def _frames(text: str) -> dict[str, tuple[tuple[str, ...], ...]]:
    """stack_frame_id -> the frames in tgt's program code (the callers differ: CLI vs probe)."""
    def table(name: str) -> dict[str, str]:
        match = re.search(rf"^{name}\n(.*?)(?:\n\n|\Z)", text, re.S | re.M)
        return dict(line.split(" ", 1) for line in match.group(1).splitlines()) if match else {}

    files, functions = table("FileNames"), table("FunctionNames")
    locations = {}
    for key, value in table("FileLocations").items():
        fields = dict(re.findall(r"(\w+)=(\d+)", value))
        locations[key] = (files[fields["file_name_id"]].strip('"'),
                          functions[fields["function_name_id"]].strip('"'),
                          fields["line"], fields["column"])
    frames = {k: dict(re.findall(r"(\w+)=(\d+)", v)) for k, v in table("StackFrames").items()}
    out = {}
    for key in frames:
        chain, frame, seen = [], key, set()
        while frame in frames and frame not in seen:
            seen.add(frame)
            path, *rest = locations[frames[frame]["file_location_id"]]
            if "tpugraphs_tools/programs/" in path:
                chain.append((path.rsplit("/", 1)[1], *rest))
            frame = frames[frame].get("parent_frame_id", "")
        out[key] = tuple(chain)
    return out


class _Origins:
    """Each instruction's jax metadata and the module's instructions in execution order
    (computations called by fusions and calls walked where they are called)."""

    def __init__(self, module: Module, text: str) -> None:
        frames = _frames(text)
        self.comps = {c.name: c for c in module.computations}
        self.by_name = {c.name: {i.name: i for i in c.instructions} for c in module.computations}
        self.callers: dict[str, Instruction] = {}
        self.caller_comp: dict[str, str] = {}
        for comp in module.computations:
            for inst in comp.instructions:
                if inst.opcode in _CALLS:
                    for called in inst.called_computations:
                        self.callers[called], self.caller_comp[called] = inst, comp.name
        self.order: list[tuple[str, Instruction]] = []
        entry = next(c for c in module.computations if c.is_entry)
        self._walk(entry)
        self.origin: dict[tuple[str, str], Origin | None] = {}
        for comp, inst in self.order:
            op_name = _OP_NAME.search(inst.attrs.get("metadata", ""))
            frame = _FRAME.search(inst.attrs.get("metadata", ""))
            self.origin[comp, inst.name] = (
                (op_name.group(1), frames.get(frame.group(1), ()) if frame else ())
                if op_name else None)

    def _walk(self, comp: Computation) -> None:
        for inst in comp.instructions:
            if inst.opcode in _CALLS:
                for called in inst.called_computations:
                    self._walk(self.comps[called])
            else:
                self.order.append((comp.name, inst))

    def producers(self, comp: str, name: str, depth: int = 16) -> list[tuple[str, str]]:
        """What computes operand ``name``: through fusion parameters, fusion outputs, tuple
        elements and instructions without metadata (bitcasts XLA made)."""
        inst = self.by_name[comp].get(name)
        if inst is None or depth == 0:
            return []
        if inst.opcode == "parameter" and comp in self.callers:
            caller = self.callers[comp]
            number = inst.parameter_number
            return (self.producers(self.caller_comp[comp], caller.operands[number], depth - 1)
                    if number < len(caller.operands) else [])
        if inst.opcode in _CALLS:
            called = inst.called_computations[0]
            return self.producers(called, self.comps[called].root.name, depth - 1)
        if inst.opcode == "get-tuple-element":
            source = self.by_name[comp].get(inst.operands[0])
            if source is not None and source.opcode in _CALLS:
                called = source.called_computations[0]
                root = self.comps[called].root
                if root.opcode == "tuple":
                    return self.producers(called, root.operands[int(inst.attrs["index"])],
                                          depth - 1)
            return []
        if inst.opcode == "tuple":
            return []
        if self.origin.get((comp, name)) is None and inst.opcode == "bitcast":
            return self.producers(comp, inst.operands[0], depth - 1)
        return [(comp, name)]

    def chains(self) -> dict[Origin, list[list[str]]]:
        """Instructions of one metadata joined by data flow, in execution order; a chain of
        bitcasts alone is a view XLA made, not a computation."""
        parent = {(c, i.name): (c, i.name) for c, i in self.order}

        def find(node: tuple[str, str]) -> tuple[str, str]:
            while parent[node] != node:
                node = parent[node]
            return node

        for comp, inst in self.order:
            origin = self.origin[comp, inst.name]
            for operand in inst.operands if origin is not None else ():
                for producer in self.producers(comp, operand):
                    if self.origin.get(producer) == origin:
                        parent[find((comp, inst.name))] = find(producer)
        members: dict[tuple[str, str], list[Instruction]] = {}  # in order of first member
        for comp, inst in self.order:
            if self.origin[comp, inst.name] is not None:
                members.setdefault(find((comp, inst.name)), []).append(inst)
        out: dict[Origin, list[list[str]]] = defaultdict(list)
        for root, insts in members.items():
            origin = self.origin[root]
            if origin is not None and any(i.opcode != "bitcast" for i in insts):
                out[origin].append([i.name for i in insts])
        return out


def _derived(unoptimized: _Origins, optimized: _Origins) -> dict[str, set[str]]:
    """Unoptimized instruction name -> the optimized instructions carrying its metadata
    (rules 1 and 2 of the module docstring)."""
    origins = {name: origin for (_, name), origin in unoptimized.origin.items()}
    out: dict[str, set[str]] = defaultdict(set)
    for comp, inst in optimized.order:                   # 1: the name survives
        name = inst.name
        while True:
            if name in origins and origins[name] == optimized.origin[comp, inst.name] \
                    and origins[name] is not None:
                out[name].add(inst.name)
                break
            shorter = re.sub(r"\.(?:\d+|clone)$", "", name)
            if shorter == name:
                break
            name = shorter
    theirs = optimized.chains()
    for origin, chains in unoptimized.chains().items():  # 2: the k-th chain of a metadata
        if len(theirs.get(origin, ())) == len(chains):
            for ours, their in zip(chains, theirs[origin], strict=True):
                for name in ours:
                    out[name] |= set(their)
    return out


def _tagged(text: str, slots: list[ConstraintSlot], derived: dict[str, set[str]],
            unoptimized: Module) -> Module:
    """The optimized module with each slot's ``tgt.source:`` tags on the instructions deriving
    from the tagged instruction (``<name>.tgt_out`` is the renamed node ``<name>``)."""
    opcode = {i.name: i.opcode for _, i in unoptimized.instructions()}
    position = {i.name: k for k, (_, i) in enumerate(unoptimized.instructions())}
    wanted: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for slot in slots:
        for tag in {*slot["value_tags"], slot["node_tag"]}:
            source = tag.removeprefix("tgt.source:").removesuffix(".tgt_out")
            for name in derived.get(source, ()):
                wanted[name].add((tag, source))
    module = parse_hlo_text(text)
    for _, inst in module.instructions():
        if inst.name in wanted:
            tag, _source = min(wanted[inst.name], key=lambda ts: (
                opcode.get(ts[1]) != inst.opcode, position.get(ts[1], len(position)), ts[0]))
            metadata = _OP_NAME.sub("", inst.attrs.get("metadata", "")).strip(" ,")
            inst.attrs["metadata"] = f'op_name="{tag}"' + (f" {metadata}" if metadata else "")
    return module


@pytest.fixture(scope="module")
def recorded():
    """(unoptimized module, its layout space, optimized text, derived map, config rows)."""
    unopt_text, opt_text = _read("gpu_gpt_small_unoptimized.hlo.gz"), \
        _read("gpu_gpt_small_optimized.hlo.gz")
    unoptimized = parse_hlo_text(unopt_text)
    derived = _derived(_Origins(unoptimized, unopt_text),
                       _Origins(parse_hlo_text(opt_text), opt_text))
    rows = json.loads((DATA / "gpu_gpt_small_layout_configs.json").read_text())
    return unoptimized, layout_space(unoptimized), opt_text, derived, rows


def _checked(recorded, row, wanted=None):
    """(slots, records) of one recorded config; ``wanted(slot)`` replaces the requests."""
    unoptimized, space, opt_text, derived, _rows = recorded
    keys = {(t.node, SLOTS[t.slot]): key for key, t in space.by_key().items()}
    config = LayoutConfig.of({keys[node, slot]: tuple(layout)
                              for node, by_slot in json.loads(row["config"]).items()
                              for slot, layout in by_slot.items()})
    slots = constraint_slots(unoptimized, space, config)
    if wanted is not None:
        slots = [{**slot, "wanted": wanted(slot)} for slot in slots]
    return slots, check_slots(_tagged(opt_text, slots, derived, unoptimized), slots)


def test_most_recorded_slots_are_located_in_the_gpu_module(recorded):
    located, total, honoured_before = [], 0, 0
    for row in recorded[4]:
        slots, records = _checked(recorded, row)
        stored = json.loads(row["honoured"])
        assert {(s["node"], s["slot"]) for s in slots} == \
            {(n, s) for n, by_slot in stored.items() for s in by_slot}  # the recorded slots
        honoured_before += sum(v is not None for by_slot in stored.values()
                               for v in by_slot.values())
        total += len(records)
        located += [(r["node"], r["slot"]) for r in records if r["honoured"] is not None]
    assert (total, honoured_before) == (27, 1)
    assert len(located) >= 0.8 * total, f"{len(located)} of {total} located"
    assert len(located) == 23


def test_located_slots_read_the_memory_order_the_gpu_module_holds(recorded):
    """The recorded configs ask for orders the default compile does not use: located, they
    are not honoured; asked for the order the optimized module holds, they are."""
    by_slot = {}
    for row in recorded[4]:
        _slots, records = _checked(recorded, row)
        by_slot |= {(r["node"], r["slot"]): r for r in records if r["honoured"] is not None}
    assert all(r["honoured"] is False for r in by_slot.values())
    # read by hand from the optimized module: split-K GEMM outputs and layer outputs
    # row-major; the attention GEMM's K operand and output as [q, heads, d]; weights row-major
    expected = {
        ("dot_general.55", "output"): [2, 1, 0],     # convert of the split-K reduce
        ("dot_general.72", "output"): [2, 1, 0],
        ("dot_general.58", "input"): [2, 1, 0],      # read as [256, 4, 128] by split-K
        ("dot_general.39", "kernel"): [3, 1, 2, 0],  # bf16[8,256,64]{2,0,1}
        ("dot_general.71", "kernel"): [1, 0],
        ("dot_general.64", "kernel"): [1, 0],        # read as [4, 128, 512] by split-K
        ("reshape.45", "output"): [3, 2, 1, 0],      # the q/k/v slice, [1, 256, 512]
        ("reshape.43", "input"): [3, 2, 1, 0],       # the GEMM's transposed write
        ("div.61", "input"): [2, 1, 0, 3],           # the softmax sum, f32[8,256]
    }
    for key, layout in expected.items():
        assert layout in by_slot[key]["found"], (key, by_slot[key]["found"])
    assert by_slot["dot_general.57", "output"]["found"] == [[3, 1, 2, 0], [3, 2, 1, 0]]

    def held(slot):  # the order the optimized module holds each value in, as a request
        return expected.get((slot["node"], slot["slot"]), slot["wanted"])

    for row in recorded[4]:
        _slots, records = _checked(recorded, row, wanted=held)
        for record in records:
            if (record["node"], record["slot"]) in expected:
                assert record["honoured"] is True, record
