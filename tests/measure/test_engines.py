"""The timing engines behind one contract (measure/engines/), driven without XLA: programs are
plain callables, so what an engine does with a batch is visible."""

from __future__ import annotations

from typing import Any

import pytest

from tpugraphs_tools.measure.engines import (
    ENGINE_CLASSES,
    ENGINES,
    DefaultProgram,
    FixedEngine,
    PairedEngine,
    TimedItem,
    make_engine,
    traits_of,
)
from tpugraphs_tools.measure.engines import paired as paired_engine
from tpugraphs_tools.measure.messages import Batch, DefaultInfo, SessionSpec
from tpugraphs_tools.measure.options import OPTION_INFO, option_default
from tpugraphs_tools.measure.results import CONTROL, OK, ConfigResult
from tpugraphs_tools.measure.stats.stopping import StopRule


def fake_default(engine: str, runs: list[str], **spec: Any) -> DefaultProgram:
    """A default program ``"default"``; running an executable records its name."""
    def run(exe: Any, inputs: list[Any]) -> list[Any]:
        runs.append(exe)
        return []

    return DefaultProgram(SessionSpec("text", engine=engine, **spec), "default", ["x"],
                          signature=None, device=None, run=run)


def test_every_engine_name_has_an_engine_and_traits() -> None:
    assert ENGINES == tuple(ENGINE_CLASSES) == ("paired", "fixed")  # --engine, default first
    assert OPTION_INFO["engine"].choices == ENGINES
    assert option_default("engine") == ENGINES[0]
    assert traits_of("paired").replicated and traits_of("paired").repeats_per_batch > 0
    assert not traits_of("fixed").replicated and traits_of("fixed").repeats_per_batch == 0
    assert traits_of("paired").ratio_labels and not traits_of("fixed").ratio_labels


def test_fixed_engine_times_the_default_alone_then_rotating_rounds() -> None:
    runs: list[str] = []
    engine = make_engine(fake_default("fixed", runs, warmup=2, fixed_rounds=3))
    assert isinstance(engine, FixedEngine)
    info = engine.ready(DefaultInfo(0.0, {}, "key"))
    assert info.timing is not None and info.timing.repeats == 3
    assert runs == ["default"] * 5                      # 2 warm-ups + 3 timed
    assert engine.extras() == []
    items = [TimedItem(ConfigResult(i, OK), [f"c{i}"], b"") for i in (1, 2)]
    runs.clear()
    loaded = engine.load(items)
    assert runs == []                                   # loading runs nothing
    engine.warm(loaded)
    assert runs == ["default", "c1", "c2"]              # warm-up - 1 (the check ran once)
    labelled = engine.label(Batch([]), loaded, items)
    assert [r.index for r in labelled] == [1, 2]
    for result in labelled:
        assert result.timing is not None and result.timing.repeats == 3
        assert result.default_timing is not None
    assert runs.count("c1") == runs.count("c2") == 1 + 3


def test_paired_engine_adds_the_control_and_labels_every_item(
        monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[str] = []
    monkeypatch.setattr(paired_engine.X, "serialize_executable", lambda exe, device: b"D")
    monkeypatch.setattr(paired_engine.X, "deserialize_executable",
                        lambda blob, device: blob.decode())
    monkeypatch.setattr(paired_engine, "input_bytes", lambda signature: 0)
    monkeypatch.setattr(paired_engine, "make_inputs", lambda *args: ["y"])
    default = fake_default("paired", runs, warmup=2, min_sample_ms=0.0,
                           stop=StopRule(max_rounds=20, loaded_copies=2))
    engine = make_engine(default)
    assert isinstance(engine, PairedEngine)
    info = engine.ready(DefaultInfo(0.0, {}, "key"))
    assert info.timing is None                          # k is calibrated in the first batch
    [control] = engine.extras()
    assert control.result.status == CONTROL and control.blob == b"D"
    items = [TimedItem(ConfigResult(1, OK), ["checked"], b"c1"), control]
    runs.clear()
    loaded = engine.load(items)
    copies = default.spec.stop.loaded_copies
    assert len(loaded.defaults) == copies and [len(c) for c in loaded.items] == [copies] * 2
    every_copy = 3 * copies                             # the default, c1 and the control
    assert len(runs) == every_copy                      # one cold run of each copy on load
    engine.warm(loaded)
    assert len(runs) == 2 * every_copy                  # then warmup - 1 passes (warmup 2)
    assert items[0].executables == ["c1"] * copies      # reloaded from the serialized form
    labelled = engine.label(Batch([], runs_per_sample=2), loaded, items)
    assert engine.runs_per_sample == 2                  # another process's k is used
    assert [r.status for r in labelled] == [OK, CONTROL]
    for result in labelled:
        assert result.rounds and result.relative_to_default is not None
        assert result.runs_per_sample == 2
