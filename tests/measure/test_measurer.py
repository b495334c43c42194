"""A measurer keeps one record of the graph it measures, and switching graphs replaces it."""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
import pytest

from tpugraphs_tools.measure import Measurer, PipelineOptions, Session
from tpugraphs_tools.measure.messages import Compiled, DefaultInfo, SessionSpec
from tpugraphs_tools.measure.results import OK, ConfigResult
from tpugraphs_tools.measure.run_state import GraphState

SPEC = SessionSpec(base_text="HloModule a", engine="paired", processes=2)


def test_switch_leaves_nothing_of_the_previous_graph() -> None:
    """Every field of the graph's state set, as a measured graph would leave it; after the
    switch it is a fresh graph's for the new spec (no field kept, none reset by hand)."""
    measurer = Measurer(Session(SPEC, PipelineOptions(isolation="none")))  # no worker started
    graph = measurer.graph
    graph.repeats.keep([Compiled(1, 0.1, {"fingerprint": "f"}, "k1", b"exe")])
    graph.repeats.sent = 1
    graph.spread.add_batch(np.random.default_rng(0).normal(0.0, 0.02, (3, 2)),
                           np.full((3, 2), 0.004))
    graph.default_info = DefaultInfo(0.5, {"fingerprint": "f0"}, "k0")
    graph.wave.phase, graph.wave.paused_at = 1, 12.5
    graph.wave.holding.add(1)
    graph.wave.timing.append(1)
    graph.wave.results[0] = [ConfigResult(1, OK)]
    graph.batches = 3
    next_spec = replace(SPEC, base_text="HloModule b")
    fresh = GraphState.fresh(next_spec, measurer.traits.repeats_per_batch)
    touched = [f.name for f in fields(GraphState) if getattr(graph, f.name) != getattr(fresh, f.name)]
    assert touched == [f.name for f in fields(GraphState)]  # the test sets every field

    measurer.switch(Session(next_spec, PipelineOptions(isolation="none")))
    assert measurer.graph == fresh
    assert measurer.spec is next_spec and measurer.pool.spec is next_spec


def test_the_engine_decides_how_many_processes_time_a_batch() -> None:
    """The fixed engine times in one process: a spec asking it for more is a mistake, said."""
    fixed = replace(SPEC, engine="fixed")
    assert Measurer(Session(replace(fixed, processes=1))).pool.processes == 1
    assert Measurer(Session(SPEC)).pool.processes == 2
    with pytest.raises(ValueError, match="fixed engine times a batch in one process"):
        Measurer(Session(fixed))
