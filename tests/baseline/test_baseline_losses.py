"""Ranking losses: hand-computed values, masking of padded configs, finite gradients."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tpugraphs_tools.baseline.losses import listmle, pairwise_hinge


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


@pytest.mark.parametrize("loss", [listmle, pairwise_hinge])
def test_gradients_finite_with_padding(loss) -> None:
    cost = jnp.array([[0.3, -0.2, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    runtime = jnp.array([[2.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    valid = jnp.array([[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])  # graph 2: one config
    grad = jax.grad(lambda c: loss(c, runtime, valid))(cost)
    assert bool(jnp.isfinite(grad).all())
    assert float(jnp.abs(grad[:, 2:]).sum()) == 0.0
