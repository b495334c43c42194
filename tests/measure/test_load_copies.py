"""How the measurement worker loads copies: shuffled per group, and fewer when memory runs out."""

from __future__ import annotations

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


def test_running_out_of_memory_keeps_the_complete_groups(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers.X, "deserialize_executable", FakeLoader(fail_at=3 * 5 + 2))
    loaded: list[list[Any]] = [[], []]
    defaults = workers.load_copies(b"D", [b"a", b"b"], loaded, 8, device=None)
    assert len(defaults) == 5 and all(len(c) == 5 for c in loaded)
    monkeypatch.setattr(workers.X, "deserialize_executable", FakeLoader(fail_at=3 + 1))
    with pytest.raises(RuntimeError, match="Cannot allocate"):   # fewer than 2 copies: fail
        workers.load_copies(b"D", [b"a", b"b"], [[], []], 8, device=None)
