"""The typed baseline report: its JSON is the report.json document readers parse."""

import json
import math

import numpy as np
import pytest

from tpugraphs_tools.baseline.markdown import report_markdown
from tpugraphs_tools.baseline.report import (
    BaselineReport,
    CollectionReport,
    Evaluation,
    GraphScore,
    SplitPolicy,
    TrainStats,
)
from tpugraphs_tools.baseline.report_files import report_bytes


def _evaluation(holdout: str) -> Evaluation:
    stats = TrainStats(seconds=1.5, loss=[0.5], epoch_seconds=[1.0], finetune_loss=[],
                       compiles={"step": 1}, segments=2, embedding_table_bytes=0)
    score = GraphScore("g1", "test", "p", 6, 30,
                       {"model": {"kendall_tau": np.float64(0.5), "opa": math.nan}})
    extra = ({"configs": {"train": 4, "held_out": 2}, "share": 0.3, "min_configs": 4}
             if holdout == "configs" else {})
    return Evaluation(holdout, "split", {"train": 1, "valid": 0, "test": 1},
                      {"train": ["p"], "valid": [], "test": ["p"]}, stats, "layout",
                      {"test": {"model": {"graphs": 1.0, "kendall_tau": 0.5}}}, [score],
                      ["a note"], **extra)


def _report(layer_key: str = "layer") -> BaselineReport:
    section = CollectionReport("layout", 1, 1, "by-program", {
        "by-program": _evaluation("programs"), "within-graph": _evaluation("configs")},
        ["collection note"])
    return BaselineReport("0.0", {"python": "3.11", "jax": None}, "ds",
                          {layer_key: "gcn", "train": {"epochs": 2, "loss": "listmle"}},
                          SplitPolicy("by-program", [0.8, 0.1, 0.1], 0, 0.3, 4),
                          {"layout": section}, {"tile": "nothing to score"})


def test_json_keeps_the_report_layout_and_is_json_safe() -> None:
    doc = json.loads(report_bytes(_report())[0])
    evaluations = doc["collections"]["layout"]["evaluations"]
    by_program, within = evaluations["by-program"], evaluations["within-graph"]
    assert "configs" not in by_program and "share" not in by_program
    assert within["configs"] == {"train": 4, "held_out": 2} and within["min_configs"] == 4
    row = by_program["per_graph"][0]
    assert row == {"graph_id": "g1", "split": "test", "program": "p", "configs": 6,
                   "nodes": 30, "model": {"kendall_tau": 0.5, "opa": None}}
    assert by_program["train"]["compiles"] == {"step": 1}
    assert doc["split"]["ratios"] == [0.8, 0.1, 0.1] and doc["skipped"] == {"tile": "nothing to score"}


@pytest.mark.parametrize("layer_key", ["layer", "model"])   # "model": reports of older tgt
def test_markdown_names_the_layer_under_either_key(layer_key: str) -> None:
    assert "- model gcn, 2 epochs, loss listmle" in report_markdown(_report(layer_key))


def test_markdown_lists_every_note_and_the_skipped_collection() -> None:
    text = report_markdown(_report())
    assert "held-out configs within each graph: 1 graph(s), 4 train / 2 held-out" in text
    assert "- layout: collection note" in text and text.count("- layout: a note") == 2
    assert "- tile: not scored: nothing to score" in text


def test_markdown_shows_the_ceiling_or_says_it_is_unknown_and_the_headroom() -> None:
    report = _report()
    ev = report.collections["layout"].evaluations["by-program"]
    ev.methods = {"model": "the GNN", "fewer-copies": "reads the optimized HLO"}
    text = report_markdown(report)
    assert "| test | *noise-ceiling* | – | no CI: ceiling unknown |" in text
    assert "- fewer-copies: reads the optimized HLO" in text
    ev.results["test"]["noise-ceiling"] = {"graphs": 1.0, "kendall_tau": 0.8}
    ev.results["test"]["model"]["kendall_tau_of_ceiling"] = 0.625
    text = report_markdown(report)
    assert "| test | *noise-ceiling* | 1 | 0.800 |" in text and "| 0.625 |" in text
    report.collections["layout"].headroom = {"g1": {
        "program": "p", "configs": 5, "fastest": 0.9, "fastest_low": 0.85,
        "fastest_high": 0.95, "faster_share": 0.4, "surely_faster_share": 0.2, "p5": 0.91,
        "median": 1.1, "p95": 1.4}}
    text = report_markdown(report)
    assert "a config beats the default (95% CI below 1) in 1/1 graphs" in text
    unsure = {**report.collections["layout"].headroom["g1"], "fastest": 0.97,
              "fastest_low": 0.93, "fastest_high": 1.01, "surely_faster_share": 0.0}
    report.collections["layout"].headroom["g2"] = unsure  # below 1 as a point, CI holds 1
    assert "a config beats the default (95% CI below 1) in 1/2 graphs" in \
        report_markdown(report)
    report.collections["layout"].headroom["g2"] = {**unsure, "surely_faster_share": None}
    assert "in 1/2 graphs (1 without CIs: not known)" in report_markdown(report)
    del report.collections["layout"].headroom["g2"]
    text = report_markdown(report)
    assert "| g1 | p | 5 | 0.900 [0.850, 0.950] | 40% | 20% | 0.910 – 1.100 – 1.400 |" in text
    doc = json.loads(report_bytes(report)[0])
    assert doc["collections"]["layout"]["headroom"]["g1"]["fastest"] == 0.9
    assert doc["collections"]["layout"]["evaluations"]["by-program"]["methods"] == ev.methods
