"""The typed baseline report: its JSON is the report.json document readers parse."""

import json
import math

import numpy as np

from tpugraphs_tools.baseline.markdown import report_markdown
from tpugraphs_tools.baseline.report import (
    BaselineReport,
    CollectionReport,
    Evaluation,
    GraphScore,
    SplitPolicy,
    TrainStats,
    report_bytes,
)


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


def _report() -> BaselineReport:
    section = CollectionReport("layout", 1, 1, "by-program", {
        "by-program": _evaluation("programs"), "within-graph": _evaluation("configs")},
        ["collection note"])
    return BaselineReport("0.0", {"python": "3.11", "jax": None}, "ds",
                          {"model": "sage", "train": {"epochs": 2, "loss": "listmle"}},
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


def test_markdown_lists_every_note_and_the_skipped_collection() -> None:
    text = report_markdown(_report())
    assert "held-out configs within each graph: 1 graph(s), 4 train / 2 held-out" in text
    assert "- layout: collection note" in text and text.count("- layout: a note") == 2
    assert "- tile: not scored: nothing to score" in text
