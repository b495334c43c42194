"""Exact order statistics from bucket passes agree with numpy on awkward values."""

from __future__ import annotations

import numpy as np
import pytest

from tpugraphs_tools.publish._quantiles import Quantiles, summarize


def _batches(values: np.ndarray, parts: int):
    return [("g", chunk) for chunk in np.array_split(values, parts)]


@pytest.mark.parametrize("seed", range(6))
def test_median_quartiles_and_whiskers_match_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    values = np.concatenate([
        rng.lognormal(0, 0.2, n),                         # relative runtimes
        np.repeat(rng.uniform(0.9, 1.1, 3), rng.integers(1, 50, 3)),  # ties
        1.0 + rng.integers(-3, 3, 20) * 2 ** -40,         # neighbours past 40 bits
        -rng.uniform(0, 1, int(rng.integers(0, 5))),      # negatives
    ])
    rng.shuffle(values)
    data = _batches(values, 7)
    q = Quantiles()
    for group, chunk in data:
        q.add(group, chunk)
    medians, boxes = summarize(q, lambda: iter(data), boxed=["g"])
    assert medians["g"] == np.median(values)
    box = boxes["g"]
    assert (box.q1, box.median, box.q3) == tuple(np.percentile(values, [25, 50, 75]))
    assert (box.low, box.high, box.count) == (values.min(), values.max(), values.size)
    # whiskers: the furthest values within 1.5 IQR, to a 20-bit bucket (0.4%)
    iqr = box.q3 - box.q1
    inside = values[(values >= box.q1 - 1.5 * iqr) & (values <= box.q3 + 1.5 * iqr)]
    assert box.whishi == pytest.approx(max(inside.max(), box.q3), rel=5e-3, abs=1e-12)
    assert box.whislo == pytest.approx(min(inside.min(), box.q1), rel=5e-3, abs=1e-12)
    assert q.low("g") == values.min()
