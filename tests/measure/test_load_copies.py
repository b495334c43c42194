"""How the paired engine loads, warms up and feeds copies: shuffled, fewer when memory
runs out, and each copy on its own argument set."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tpugraphs_tools.measure.engines import paired as engine


class FakeLoader:
    """``deserialize_executable`` that records what it loaded and fails from call ``fail_at``."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls: list[bytes] = []
        self.fail_at = fail_at

    def __call__(self, blob: bytes, device: Any) -> tuple[bytes, int]:
        if self.fail_at is not None and len(self.calls) >= self.fail_at:
            raise RuntimeError("LLVM compilation error: Cannot allocate memory")
        self.calls.append(blob)
        return blob, len(self.calls)


def test_every_group_holds_one_copy_of_each_program_in_a_shuffled_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeLoader()
    monkeypatch.setattr(engine.X, "deserialize_executable", fake)
    loaded: list[list[Any]] = [["checked"], ["checked"], []]
    defaults = engine.load_copies(b"D", [b"a", b"b", b"c"], loaded, 8, device=None)
    assert len(defaults) == 8 and all(len(c) == 8 for c in loaded)
    assert all(e[0] == b"D" for e in defaults) and {e[0] for e in loaded[1]} == {b"b"}
    groups = [fake.calls[4 * j:4 * j + 4] for j in range(8)]
    assert all(sorted(g) == [b"D", b"a", b"b", b"c"] for g in groups)
    # The default is not always loaded first (it read slower than its A/A copy when it was).
    assert len({g.index(b"D") for g in groups}) > 1


def test_copies_are_capped_to_fit_half_the_memory_mappings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A process past vm.max_map_count dies inside LLVM: the first group's mappings decide how
    many groups fit, and every program gets the same number of copies."""
    fake = FakeLoader()
    monkeypatch.setattr(engine.X, "deserialize_executable", fake)
    monkeypatch.setattr(engine, "_max_maps", lambda: 10_000)
    monkeypatch.setattr(engine, "_maps_in_use", lambda: 1_000 + 300 * len(fake.calls))
    loaded: list[list[Any]] = [[], []]
    defaults = engine.load_copies(b"D", [b"a", b"b"], loaded, 8, device=None)
    # One group costs 900 mappings; half the limit (5,000) holds 1 + (5,000 - 1,900) // 900.
    assert len(defaults) == 4 and all(len(c) == 4 for c in loaded)
    monkeypatch.setattr(engine, "_maps_in_use", lambda: None)   # unknown: as asked
    assert len(engine.load_copies(b"D", [b"a"], [[]], 8, device=None)) == 8


def test_warm_up_runs_every_copy_each_pass_and_the_default_not_first() -> None:
    """Every loaded copy (the default's, the control's, the configs') runs once per pass, in a
    fresh order: the default's copies are not set apart by running first."""
    ran: list[str] = []
    names = [f"default{j}" for j in range(3)] + [f"{p}{j}" for p in ("c", "control")
                                                  for j in range(3)]
    runs = [lambda n=n: ran.append(n) for n in names]
    engine.warm_up_shuffled(runs, 4, random.Random(5))
    passes = [ran[k * len(names):(k + 1) * len(names)] for k in range(4)]
    assert all(sorted(p) == sorted(names) for p in passes)
    assert len({tuple(p) for p in passes}) == 4
    assert any(not p[0].startswith("default") for p in passes)


def test_copy_j_of_every_program_runs_on_argument_set_j() -> None:
    calls: list[tuple[str, int]] = []
    sets = [["set0"], ["set1"], ["set2"]]

    def run(exe: str, args: list[str]) -> None:
        calls.append((exe, sets.index(args)))

    for runner in [*engine.bind_copies(["d0", "d1", "d2", "d3"], sets, run),
                   *engine.bind_copies(["c0", "c1", "c2", "c3"], sets, run)]:
        runner()
    assert calls == [("d0", 0), ("d1", 1), ("d2", 2), ("d3", 0),
                     ("c0", 0), ("c1", 1), ("c2", 2), ("c3", 0)]


@pytest.mark.parametrize(("count", "set_bytes", "budget", "want"), [
    (4, 100, 1000, 4),   # all fit
    (4, 300, 1000, 4),   # 1 + 3 extra sets = 900 bytes
    (4, 400, 1000, 3),   # 1 + 2 extra
    (4, 2000, 1000, 1),  # only the set the numerics check used
    (4, 0, 1000, 4),     # no arguments
])
def test_argument_sets_are_capped_by_their_memory(count: int, set_bytes: int, budget: int,
                                                  want: int) -> None:
    assert engine.input_sets_that_fit(count, set_bytes, budget) == want


def test_argument_set_size_counts_every_parameter() -> None:
    from tpugraphs_tools.compiler import compile as C
    from tpugraphs_tools.hlo import parse_hlo_text

    module = parse_hlo_text("""\
HloModule m, entry_computation_layout={(f32[2,3]{1,0}, bf16[4]{0})->f32[2,3]{1,0}}
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  b = bf16[4]{0} parameter(1)
  ROOT n = f32[2,3]{1,0} negate(a)
}
""")
    assert C.input_bytes(C.entry_signature(module)) == 2 * 3 * 4 + 4 * 2
