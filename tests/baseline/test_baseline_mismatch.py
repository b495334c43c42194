"""Operand layout mismatch counts (--mismatch-features) on hand-made graphs, and the option's
path through preparation, batching and a saved model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tpugraphs_tools.baseline import (
    BaselineOptions,
    Evaluation,
    NothingToScore,
    PrepareOptions,
    TrainConfig,
    run_baseline,
)
from tpugraphs_tools.baseline.data import TgtSource
from tpugraphs_tools.baseline.mismatch import DefaultDiff, MismatchCounter, operand_pairs
from tpugraphs_tools.baseline.synthetic import write_synthetic_dataset


def _graph() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """param(0) → conv(1) → add(2) → transpose(3); nodes 1 and 3 configurable, all rank 2
    with default layout {1,0}."""
    feat = np.zeros((4, 140), np.float32)
    feat[:, 21:23] = [4, 8]
    feat[:, 134:136] = [1, 0]
    edges = np.array([[1, 0], [2, 1], [3, 2], [3, 1]])     # [consumer, operand]
    return feat, edges, np.array([1, 3])


def _rows(*configs: dict[int, tuple[list[int], list[int]]]) -> np.ndarray:
    """int8 [c, 2, 18] from {config position: (output slot, input slot)}; unset = −1."""
    rows = np.full((len(configs), 2, 18), -1, np.int8)
    for c, slots in enumerate(configs):
        for k, (out, inp) in slots.items():
            rows[c, k, :len(out)] = out
            rows[c, k, 6:6 + len(inp)] = inp
    return rows


def test_operand_pairs_are_configurable_consumers_and_their_direct_operands() -> None:
    _, edges, cfg = _graph()
    assert operand_pairs(edges, cfg, 4).tolist() == [[0, 0], [1, 1], [1, 2]]


def test_counts_follow_the_layouts_a_config_sets() -> None:
    feat, edges, cfg = _graph()
    count = MismatchCounter(feat, edges, cfg)
    rows = _rows({},                                   # the compiler picks everything
                 {0: ([1, 0], [0, 1])},                # conv asks its input transposed
                 {0: ([0, 1], [])},                    # conv output transposed
                 {1: ([], [1, 0])})                    # transpose asks the default: no copy
    out = count(rows)
    assert out.shape == (4, 2, 20) and out.dtype == np.int8
    assert (out[..., :18] == rows).all()
    input_count, output_count = out[..., 18], out[..., 19]
    assert input_count.tolist() == [[0, 0], [1, 0], [0, 0], [0, 0]]
    # config 2: the conv's own output differs from its operand's; the transpose reads the
    # conv directly (operand 1), whose output now differs from the transpose's default
    assert output_count.tolist() == [[0, 0], [0, 0], [1, 1], [0, 0]]


def test_layouts_of_other_rank_are_not_compared() -> None:
    feat, edges, cfg = _graph()
    feat[0, 21:24] = [4, 8, 2]                          # the parameter is rank 3
    feat[0, 134:137] = [2, 1, 0]
    out = MismatchCounter(feat, edges, cfg)(_rows({0: ([1, 0], [0, 1])}))
    assert out[0, 0, 18] == 0


def _one_epoch(root: Path, seed: int, prepare: PrepareOptions) -> Evaluation:
    """The by-program evaluation of a one-epoch model on a small synthetic dataset."""
    write_synthetic_dataset(root, programs=6, graphs_per_program=1, nodes=(30, 30),
                            configs=10, cfg_ranks=(2, 2), seed=seed)
    opts = BaselineOptions(
        hidden=16, layers=1, holdout="programs",
        train=TrainConfig(epochs=1, configs_per_graph=8, batch_graphs=2, seed=0),
        prepare=prepare)
    return run_baseline(root, opts).collections["layout"].evaluations["by-program"]


def test_option_reaches_the_model_and_a_saved_model(tmp_path: Path) -> None:
    evaluation = _one_epoch(tmp_path / "ds", 3, PrepareOptions(mismatch_features=True))
    assert evaluation.model is not None
    sidecar = evaluation.model.sidecar
    assert sidecar["normalisation"]["mismatch_features"] is True
    # the config-only heuristic still reads the 18 format slots
    assert all("non-default-slots" in g.methods for g in evaluation.per_graph)


def test_train_strategy_keeps_only_that_strategy_in_training(tmp_path: Path) -> None:
    write_synthetic_dataset(tmp_path / "ds", programs=6, graphs_per_program=1, nodes=(20, 20),
                            configs=8, cfg_ranks=(2, 2), seed=1)
    assert {i.strategy for i in TgtSource(tmp_path / "ds").index()} == {"synthetic"}
    opts = BaselineOptions(hidden=8, layers=1, holdout="programs", train_strategy="random",
                           train=TrainConfig(epochs=1, configs_per_graph=4, seed=0))
    with pytest.raises(NothingToScore):
        run_baseline(tmp_path / "ds", opts)     # no graph of that strategy to train on


def test_default_slots_count_the_slots_unlike_the_default_configs() -> None:
    default = np.full((2, 18), -1, np.int8)
    default[0, :2] = [1, 0]
    rows = np.full((3, 2, 18), -1, np.int8)
    rows[1, 0, :2] = [0, 1]                      # output changed
    rows[2, 0, :2] = [0, 1]
    rows[2, 0, 6:8] = [0, 1]                     # and input
    rows[2, 1, 12:14] = [1, 0]                   # kernel of the second node
    rows[0, 0, :2] = [1, 0]                      # the default itself
    out = DefaultDiff(default)(rows)
    assert out.shape == (3, 2, 19) and (out[..., :18] == rows).all()
    assert out[..., 18].tolist() == [[0, 0], [1, 0], [2, 1]]
    # unknown default (an official tree): −1, the "unknown" category
    assert (DefaultDiff(None)(rows)[..., 18] == -1).all()


def test_default_slots_reach_the_model(tmp_path: Path) -> None:
    evaluation = _one_epoch(tmp_path / "ds", 4,
                            PrepareOptions(mismatch_features=True, default_slots=True))
    assert evaluation.model is not None
    assert evaluation.model.sidecar["normalisation"]["default_slots"] is True
    assert all("model" in g.methods for g in evaluation.per_graph)
