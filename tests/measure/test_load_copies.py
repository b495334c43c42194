"""How the measurement worker loads and warms up copies: shuffled, and fewer when memory runs
out."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tpugraphs_tools.measure import workers


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
    monkeypatch.setattr(workers.X, "deserialize_executable", fake)
    loaded: list[list[Any]] = [["checked"], ["checked"], []]
    defaults = workers.load_copies(b"D", [b"a", b"b", b"c"], loaded, 8, device=None)
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
    monkeypatch.setattr(workers.X, "deserialize_executable", fake)
    monkeypatch.setattr(workers, "_max_maps", lambda: 10_000)
    monkeypatch.setattr(workers, "_maps_in_use", lambda: 1_000 + 300 * len(fake.calls))
    loaded: list[list[Any]] = [[], []]
    defaults = workers.load_copies(b"D", [b"a", b"b"], loaded, 8, device=None)
    # One group costs 900 mappings; half the limit (5,000) holds 1 + (5,000 - 1,900) // 900.
    assert len(defaults) == 4 and all(len(c) == 4 for c in loaded)
    monkeypatch.setattr(workers, "_maps_in_use", lambda: None)   # unknown: as asked
    assert len(workers.load_copies(b"D", [b"a"], [[]], 8, device=None)) == 8


def test_warm_up_runs_every_copy_each_pass_and_the_default_not_first() -> None:
    """Every loaded copy (the default's, the control's, the configs') runs once per pass, in a
    fresh order: the default's copies are not set apart by running first."""
    ran: list[str] = []
    names = [f"default{j}" for j in range(3)] + [f"{p}{j}" for p in ("c", "control")
                                                  for j in range(3)]
    runs = [lambda n=n: ran.append(n) for n in names]
    workers.warm_up_shuffled(runs, 4, random.Random(5))
    passes = [ran[k * len(names):(k + 1) * len(names)] for k in range(4)]
    assert all(sorted(p) == sorted(names) for p in passes)
    assert len({tuple(p) for p in passes}) == 4
    assert any(not p[0].startswith("default") for p in passes)
