"""Exact order statistics from bucket passes agree with numpy on awkward values."""

from __future__ import annotations

import numpy as np
import pytest

from tpugraphs_tools.publish.report.quantiles import Quantiles, summarize


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


def _awkward(rng: np.random.Generator, n: int) -> np.ndarray:
    values = np.concatenate([rng.lognormal(0, 0.2, n), np.full(int(rng.integers(0, 9)), 1.0),
                             [np.nan] * int(rng.integers(0, 2))])
    rng.shuffle(values)
    return values


def test_groups_added_whole_answer_as_their_bucket_tables_do():
    """A group handed over whole keeps a few ranks instead of a table: same medians, counts,
    lows and boxes; the boxes kept are the most-valued boxable groups (ties: the smaller)."""
    rng = np.random.default_rng(1)
    data = {(what, i): _awkward(rng, int(rng.integers(1, 400)))
            for what in ("a", "b") for i in range(40)}
    data[("a", 99)] = np.full(3, np.nan)                   # nothing left to count
    data[("a", 7)] = data[("a", 8)][:]                     # a tie in count: ("a", 7) first
    chunks = [(g, c) for g, v in data.items() for c in np.array_split(v, 3)]
    tables, whole = Quantiles(), Quantiles(boxes=5, boxable=lambda g: g[0] == "a")
    for group, chunk in chunks:
        tables.add(group, chunk)
    for group, values in data.items():
        whole.add_whole(group, values)

    def never():
        raise AssertionError("a group added whole needs no re-read")

    boxable = sorted((g for g in tables.groups() if g[0] == "a"),
                     key=lambda g: (-tables.count(g), g))[:5]
    assert sorted(whole.groups()) == sorted(tables.groups())
    assert ("a", 99) not in whole.groups()
    expected = summarize(tables, lambda: iter(chunks), boxed=boxable)
    assert summarize(whole, never, boxed=boxable) == expected
    for group in tables.groups():
        assert (whole.count(group), whole.low(group)) == (tables.count(group),
                                                          tables.low(group))


def test_a_group_added_whole_twice_is_recounted_from_the_source():
    """Values of a 'whole' group arriving again (a graph in two table parts): ``settle``
    recounts it from the source, and the answers hold every value."""
    rng = np.random.default_rng(2)
    first, second, other = _awkward(rng, 300), _awkward(rng, 50), _awkward(rng, 80)
    data = [("g", first), ("h", other), ("g", second)]
    q = Quantiles(boxes=1)
    for group, values in data:
        q.add_whole(group, values)
    q.add("g", second)  # a later partial add is ignored too: the recount counts it
    q.settle(lambda: iter(data))
    late = _awkward(rng, 40)
    q.add_whole("k", late)  # a group added after a recount takes a row of its own
    data.append(("k", late))
    both = np.concatenate([first, second])
    both = both[~np.isnan(both)]
    medians, boxes = summarize(q, lambda: iter(data), boxed=["g"])
    assert q.count("g") == both.size and q.low("g") == both.min()
    assert medians["g"] == np.median(both)
    assert (boxes["g"].q1, boxes["g"].q3) == tuple(np.percentile(both, [25, 75]))
    assert medians["h"] == np.nanmedian(other) and q.low("h") == np.nanmin(other)
    assert medians["k"] == np.nanmedian(late)
