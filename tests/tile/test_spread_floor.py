"""A kernel's between-process spread never reads below the run's pooled one (the floor that
makes tile CIs cover a rerun: a kernel's few configs measure its own spread poorly)."""

from __future__ import annotations

import numpy as np

from tpugraphs_tools.measure.replicas import ProcessSpread, combined_interval


def _spread(scale: float, seed: int, batches: int = 3) -> ProcessSpread:
    rng = np.random.default_rng(seed)
    spread = ProcessSpread()
    for _ in range(batches):
        centers = rng.normal(0.0, scale, size=(4, 4))  # 4 items x 4 processes
        spread.add_batch(centers.tolist(), np.full((4, 4), 1e-4).tolist())
    return spread


def test_floor_lifts_a_kernel_spread_that_reads_low():
    pool = _spread(0.02, seed=0, batches=8)   # the kernels done so far
    kernel = _spread(0.001, seed=1, batches=1)
    alone = kernel.between()
    kernel.floor = pool
    assert kernel.between() == pool.between() and pool.between()[0] > alone[0]
    # and the label's CI widens accordingly
    narrow = combined_interval([0.1] * 4, [1e-3] * 4, [10] * 4, _spread(0.001, seed=1, batches=1))
    wide = combined_interval([0.1] * 4, [1e-3] * 4, [10] * 4, kernel)
    assert wide[2] > narrow[2]


def test_floor_never_narrows_a_kernel_that_spreads_more():
    kernel = _spread(0.05, seed=2)
    own = kernel.between()
    kernel.floor = _spread(0.001, seed=3, batches=8)
    assert kernel.between() == own


def test_absorb_pools_batches():
    pool = ProcessSpread()
    a, b = _spread(0.01, seed=4), _spread(0.01, seed=5)
    pool.absorb(a)
    pool.absorb(b)
    assert pool.own == a.own + b.own and pool.means == a.means + b.means
    assert pool.df == a.df + b.df
