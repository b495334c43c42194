"""Ranking losses: hand-computed values, masking of padded configs, finite gradients."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tpugraphs_tools.baseline.losses import listmle, pairwise_hinge, sure_pairs


def _listmle_reference(cost: np.ndarray, runtime: np.ndarray) -> float:
    s = -cost[np.argsort(runtime)]
    return float(sum(np.log(np.exp(s[i:]).sum()) - s[i] for i in range(len(s))))


def test_listmle_hand_value_and_mask() -> None:
    cost = np.array([[0.0, 1.0, 2.0]], np.float32)
    runtime = np.array([[3.0, 1.0, 2.0]], np.float32)
    valid = np.ones((1, 3), np.float32)
    expected = _listmle_reference(cost[0], runtime[0])
    assert float(listmle(cost, runtime, valid)) == pytest.approx(expected, rel=1e-5)
    # a padded config (valid 0) changes nothing, whatever its values
    cost4 = np.array([[0.0, 1.0, 2.0, -50.0]], np.float32)
    runtime4 = np.array([[3.0, 1.0, 2.0, 0.0]], np.float32)
    valid4 = np.array([[1, 1, 1, 0]], np.float32)
    assert float(listmle(cost4, runtime4, valid4)) == pytest.approx(expected, rel=1e-5)
    # the right order has lower loss than the reverse one
    good = listmle(np.array([[1.0, 2.0, 3.0]]), np.array([[1.0, 2.0, 3.0]]), valid)
    bad = listmle(np.array([[3.0, 2.0, 1.0]]), np.array([[1.0, 2.0, 3.0]]), valid)
    assert float(good) < float(bad)


def test_hinge_hand_values() -> None:
    runtime = np.array([[1.0, 2.0]])
    valid = np.ones((1, 2))
    assert float(pairwise_hinge(np.array([[0.0, 0.05]]), runtime, valid)) == pytest.approx(0.05)
    assert float(pairwise_hinge(np.array([[0.0, 1.0]]), runtime, valid)) == 0.0
    assert float(pairwise_hinge(np.array([[1.0, 0.0]]), runtime, valid)) == pytest.approx(1.1)
    # tied runtimes and padded configs form no pairs
    assert float(pairwise_hinge(np.array([[1.0, 0.0]]), np.array([[1.0, 1.0]]), valid)) == 0.0
    assert float(pairwise_hinge(np.array([[0.0, 1.0, 0.0]]), np.array([[1.0, 2.0, 0.5]]),
                                np.array([[1.0, 1.0, 0.0]]))) == 0.0


@pytest.mark.parametrize("loss", [listmle, pairwise_hinge, sure_pairs])
def test_gradients_finite_with_padding(loss) -> None:
    cost = jnp.array([[0.3, -0.2, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    runtime = jnp.array([[2.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    valid = jnp.array([[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])  # graph 2: one config
    grad = jax.grad(lambda c: loss(c, runtime, valid))(cost)
    assert bool(jnp.isfinite(grad).all())
    assert float(jnp.abs(grad[:, 2:]).sum()) == 0.0


def test_sure_pairs_counts_only_pairs_whose_cis_are_disjoint() -> None:
    softplus = lambda x: float(np.log1p(np.exp(x)))  # noqa: E731
    valid = np.ones((1, 3), np.float32)
    runtime = np.array([[1.0, 2.0, 3.0]], np.float32)
    cost = np.array([[0.0, 0.5, 0.2]], np.float32)
    # config 0 is surely faster than 2; config 1's CI overlaps both: one pair only
    bounds = np.array([[[0.0, 0.1], [0.05, 0.25], [0.2, 0.3]]], np.float32)
    assert float(sure_pairs(cost, runtime, valid, bounds)) == pytest.approx(softplus(-0.2),
                                                                            rel=1e-5)
    # the same pair ordered the wrong way costs more
    wrong = np.array([[0.2, 0.5, 0.0]], np.float32)
    assert float(sure_pairs(wrong, runtime, valid, bounds)) > softplus(-0.2)
    # every CI overlapping: nothing to learn, loss and gradient zero
    wide = np.array([[[0.0, 1.0]] * 3], np.float32)
    assert float(sure_pairs(cost, runtime, valid, wide)) == 0.0
    grad = jax.grad(lambda c: sure_pairs(c, runtime, valid, wide))(jnp.asarray(cost))
    assert float(jnp.abs(grad).sum()) == 0.0


def test_sure_pairs_without_bounds_is_ranknet_over_distinct_runtimes() -> None:
    valid = np.ones((1, 3), np.float32)
    runtime = np.array([[1.0, 1.0, 2.0]], np.float32)   # a tie forms no pair
    cost = np.array([[0.0, 0.3, 1.0]], np.float32)
    expected = (np.log1p(np.exp(-1.0)) + np.log1p(np.exp(-0.7))) / 2
    assert float(sure_pairs(cost, runtime, valid)) == pytest.approx(expected, rel=1e-5)
    # a padded config forms no pair, whatever its values
    padded = np.array([[0.0, 0.3, 1.0, -9.0]], np.float32)
    runtime4 = np.array([[1.0, 1.0, 2.0, 0.5]], np.float32)
    valid4 = np.array([[1, 1, 1, 0]], np.float32)
    assert float(sure_pairs(padded, runtime4, valid4)) == pytest.approx(expected, rel=1e-5)


def test_batch_bounds_are_the_label_cis_in_log_runtime() -> None:
    from types import SimpleNamespace

    from tpugraphs_tools.baseline.batching import Item, config_arrays
    from tpugraphs_tools.baseline.configstore import ConfigRows
    from tpugraphs_tools.baseline.data import GraphInfo

    runtime = np.array([2.0, 4.0, 8.0])
    ci = np.array([[0.99, 1.01], [np.nan, np.nan], [0.9, 1.2]])   # row 1: no CI
    g = SimpleNamespace(info=GraphInfo("g", "layout", "layout", "p", "test"),
                        cfg_feat=ConfigRows.of(np.zeros((3, 1, 18), np.int8)),
                        runtime=ConfigRows.of(runtime), label_ci=ConfigRows.of(ci))
    _, target, valid, bounds = config_arrays([Item(g, (), np.array([0, 1, 2]))],
                                             batch_graphs=2, configs=4)
    log = np.log(runtime)
    expected = np.array([[log[0] + np.log(0.99), log[0] + np.log(1.01)], [log[1], log[1]],
                         [log[2] + np.log(0.9), log[2] + np.log(1.2)]])
    np.testing.assert_allclose(bounds[0, :3], expected, rtol=1e-6)
    assert valid[0].tolist() == [1, 1, 1, 0] and not valid[1].any()
    assert target[0, :3].tolist() == [1, 2, 3]


def test_cli_offers_every_loss() -> None:
    from tpugraphs_tools.baseline.losses import LOSSES
    from tpugraphs_tools.cli.baseline_cmd import baseline

    (option,) = [o for o in baseline.params if o.name == "loss"]
    assert set(option.type.choices) == set(LOSSES)


def test_the_option_records_name_every_loss_and_segment_method() -> None:
    """options.py spells these names out (importing the losses would load jax, the partition
    methods pymetis, with every `tgt` start): they must stay the library's own."""
    from tpugraphs_tools.baseline.losses import LOSSES
    from tpugraphs_tools.baseline.options import LOSS_NAMES, SEGMENT_METHODS
    from tpugraphs_tools.partition import METHODS

    assert tuple(LOSSES) == LOSS_NAMES
    assert tuple(METHODS) == SEGMENT_METHODS
