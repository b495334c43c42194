"""Exact medians and quartiles of a dataset's labels without holding the labels.

``tgt report`` shows per-program medians and box plots of millions of config rows. Holding
the values grows with the dataset; instead each value becomes a 64-bit key in the same order
(its float64 bits, negatives flipped), and a pass over the data counts the keys per 20-bit
prefix (sign, exponent, 8 mantissa bits: buckets 0.4% wide), with each bucket's smallest and
largest key. A wanted rank falls in one bucket; if that bucket holds one distinct value the
rank is known, else another pass counts the next 20 bits inside it, then the last 24: at most
two more passes, each keeping a bucket table per wanted rank. Memory follows the number of
distinct prefixes (the values' range), not the number of values.

A group whose values all come at once (a program whose graphs are all in one batch: in a tree
where each graph is its own program, nearly every group) needs no table: its keys are sorted
there and only the few order statistics a median or a box can ask for are kept, in one shared
array (a few hundred bytes a group instead of a table of kilobytes and a re-read).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

import numpy as np

_SIGN = np.uint64(1 << 63)
_DIGIT = 20  # bits counted per pass (the last pass: what is left of 64)
QUARTILES = (0.25, 0.5, 0.75)

Source = Callable[[], Iterable[tuple[Hashable, np.ndarray]]]  # (group, values), re-readable


def float_keys(values: np.ndarray) -> np.ndarray:
    """float64 → uint64 with the same order (NaN must be dropped before)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def key_float(key: np.uint64 | int) -> float:
    bits = np.uint64(key)
    bits = bits & ~_SIGN if bits & _SIGN else ~bits
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


@dataclass
class Buckets:
    """Keys counted per digit: digit, count, smallest and largest key (sorted by digit)."""

    digit: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    lo: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    hi: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))

    @classmethod
    def of(cls, keys: np.ndarray, shift: int, bits: int) -> Buckets:
        digits = (keys >> np.uint64(shift)) & np.uint64((1 << bits) - 1)
        return cls._reduce(digits, np.ones(keys.size, np.int64), keys, keys)

    @classmethod
    def _reduce(cls, digit: np.ndarray, count: np.ndarray, lo: np.ndarray, hi: np.ndarray
                ) -> Buckets:
        if not digit.size:
            return cls()
        order = np.argsort(digit, kind="stable")
        digit, count, lo, hi = digit[order], count[order], lo[order], hi[order]
        start = np.flatnonzero(np.r_[True, digit[1:] != digit[:-1]])
        return cls(digit[start], np.add.reduceat(count, start), np.minimum.reduceat(lo, start),
                   np.maximum.reduceat(hi, start))

    def merge(self, other: Buckets) -> Buckets:
        if not self.digit.size:
            return other
        return Buckets._reduce(*(np.concatenate([a, b]) for a, b in zip(
            (self.digit, self.count, self.lo, self.hi),
            (other.digit, other.count, other.lo, other.hi), strict=True)))

    @property
    def total(self) -> int:
        return int(self.count.sum())

    def find(self, rank: int) -> tuple[int, int]:
        """(bucket index, rank within it) of the ``rank``-th smallest key (0-based)."""
        cum = np.cumsum(self.count)
        i = int(np.searchsorted(cum, rank, side="right"))
        return i, rank - (int(cum[i - 1]) if i else 0)


def whole_ranks(n: int) -> list[int]:
    """The ranks ``summarize`` can ask of a group of ``n`` values (QUARTILES, both sides)."""
    return [r for p in QUARTILES for r in percentile_ranks(n, p)[:2]]


class Quantiles:
    """Per group, the count, extremes and exact order statistics of a stream of values.

    ``boxes``/``boxable``: of the groups added whole, the bucket tables of the ``boxes``
    boxable ones with the most values (ties: the smaller group; boxable groups must compare)
    are kept for ``summarize``'s boxes; a group with fewer values cannot be among the boxes
    drawn.
    """

    def __init__(self, boxes: int = 0,
                 boxable: Callable[[Hashable], bool] = lambda group: True) -> None:
        self.top: dict[Hashable, Buckets] = {}
        self.boxes, self.boxable = boxes, boxable
        # group added whole -> row of ``_whole``: count, smallest key, keys at whole_ranks
        self._row: dict[Hashable, int] = {}
        self._whole = np.zeros((0, 2 + 2 * len(QUARTILES)), np.uint64)
        self._used = 0                             # rows of _whole written
        self._kept: dict[Hashable, Buckets] = {}   # whole groups that may get a box
        self._again: set[Hashable] = set()         # added whole, then added to again

    def add(self, group: Hashable, values: np.ndarray) -> None:
        if group in self._row:
            self._again.add(group)
            return
        values = np.asarray(values, dtype=np.float64)
        values = values[~np.isnan(values)]
        if values.size and group not in self._again:
            new = Buckets.of(float_keys(values), 64 - _DIGIT, _DIGIT)
            self.top[group] = self.top.get(group, Buckets()).merge(new)

    def add_whole(self, group: Hashable, values: np.ndarray) -> None:
        """All of the group's values at once; adding to it again later costs a re-read
        (``settle``)."""
        if group in self.top or group in self._row or group in self._again:
            self.add(group, values)
            return
        values = np.asarray(values, dtype=np.float64)
        keys = np.sort(float_keys(values[~np.isnan(values)]))
        if not keys.size:
            return
        if self._used == len(self._whole):
            grown = np.zeros((max(64, 2 * self._used), self._whole.shape[1]), np.uint64)
            grown[:self._used] = self._whole
            self._whole = grown
        self._whole[self._used] = [keys.size, keys[0], *keys[whole_ranks(keys.size)]]
        self._row[group] = self._used
        self._used += 1
        if self.boxes and self.boxable(group):
            self._keep(group, keys)

    def _keep(self, group: Hashable, keys: np.ndarray) -> None:
        """Keep the group's bucket table if it is among the ``boxes`` largest so far."""
        if len(self._kept) >= self.boxes:
            last = max(self._kept, key=lambda g: (-self._kept[g].total, g))
            if (-keys.size, group) > (-self._kept[last].total, last):
                return
            del self._kept[last]
        self._kept[group] = Buckets.of(keys, 64 - _DIGIT, _DIGIT)

    def settle(self, source: Source) -> None:
        """Recount, in one pass over ``source``, the groups added whole and then again (a
        program whose graphs came in more than one batch after all)."""
        if not self._again:
            return
        for group in self._again:
            self._row.pop(group, None)   # its row in _whole stays, unused
            self._kept.pop(group, None)
        again, self._again = self._again, set()
        for group, values in source():
            if group in again:
                self.add(group, values)

    def bucket_table(self, group: Hashable) -> Buckets:
        """The group's first-pass buckets (groups added whole: only the kept ones)."""
        return self.top[group] if group in self.top else self._kept[group]

    def count(self, group: Hashable) -> int:
        if group in self._row:
            return int(self._whole[self._row[group], 0])
        return self.top[group].total if group in self.top else 0

    def low(self, group: Hashable) -> float | None:
        """The group's smallest value (None: no values)."""
        if group in self._row:
            return key_float(self._whole[self._row[group], 1])
        b = self.top.get(group)
        return key_float(b.lo[0]) if b is not None and b.lo.size else None

    def groups(self) -> list[Hashable]:
        return [*self.top, *self._row]

    def select(self, wanted: Iterable[tuple[Hashable, int]], source: Source
               ) -> dict[tuple[Hashable, int], float]:
        """The exact value of each (group, rank); ``source`` re-reads the values added (only
        when a rank's bucket holds several distinct values). A group added whole answers
        the ranks of ``whole_ranks`` only."""
        found: dict[tuple[Hashable, int], float] = {}
        # target -> (prefix of the key known so far, bits known, rank among keys with it)
        open_: dict[tuple[Hashable, int], tuple[int, int, int]] = {}
        for target in set(wanted):
            group, rank = target
            if group in self._row:
                row = self._whole[self._row[group]]
                found[target] = key_float(row[2 + whole_ranks(int(row[0])).index(rank)])
                continue
            b = self.top[group]
            i, within = b.find(rank)
            if b.lo[i] == b.hi[i]:
                found[target] = key_float(b.lo[i])
            else:
                open_[target] = (int(b.digit[i]), _DIGIT, within)
        while open_:
            counted = self._count_inside(open_, source)
            for target, (prefix, bits, within) in list(open_.items()):
                b = counted[(target[0], prefix, bits)]
                i, within = b.find(within)
                step = min(_DIGIT, 64 - bits)
                if b.lo[i] == b.hi[i] or bits + step == 64:
                    found[target] = key_float(b.lo[i])
                    del open_[target]
                else:
                    open_[target] = ((prefix << step) | int(b.digit[i]), bits + step, within)
        return found

    @staticmethod
    def _count_inside(open_: dict[tuple[Hashable, int], tuple[int, int, int]],
                      source: Source) -> dict[tuple[Hashable, int, int], Buckets]:
        """One pass: per open (group, prefix), the keys with that prefix by their next digit."""
        wanted: dict[Hashable, set[tuple[int, int]]] = {}
        for (group, _), (prefix, bits, _) in open_.items():
            wanted.setdefault(group, set()).add((prefix, bits))
        # created on a group's first values: an empty Buckets is four arrays, and a pass can
        # have several open ranks for each of thousands of groups
        counted: dict[tuple[Hashable, int, int], Buckets] = {}
        for group, values in source():
            if group not in wanted:
                continue
            values = np.asarray(values, dtype=np.float64)
            keys = float_keys(values[~np.isnan(values)])
            for prefix, bits in wanted[group]:
                inside = keys[(keys >> np.uint64(64 - bits)) == np.uint64(prefix)]
                step = min(_DIGIT, 64 - bits)
                new = Buckets.of(inside, 64 - bits - step, step)
                old = counted.get((group, prefix, bits))
                counted[(group, prefix, bits)] = new if old is None else old.merge(new)
        return counted


def percentile_ranks(n: int, q: float) -> tuple[int, int, float]:
    """numpy's linear percentile: the two ranks around q·(n−1) and the weight of the upper."""
    pos = q * (n - 1)
    lo = math.floor(pos)
    return lo, min(lo + 1, n - 1), pos - lo


def lerp(a: float, b: float, t: float) -> float:
    """numpy's interpolation between neighbouring order statistics."""
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


@dataclass
class Box:
    """One box of a box plot (matplotlib's ``bxp``) with the labels left out: quartiles and
    median exact; whiskers and outliers to a bucket (0.4%: below a pixel on the plot), each
    an actual value."""

    count: int
    low: float
    high: float
    q1: float
    median: float
    q3: float
    whislo: float
    whishi: float
    fliers: list[float]

    def bxp(self, label: str) -> dict[str, object]:
        return {"label": label, "med": self.median, "q1": self.q1, "q3": self.q3,
                "whislo": self.whislo, "whishi": self.whishi, "fliers": self.fliers}


def _box(b: Buckets, q1: float, median: float, q3: float) -> Box:
    """Whiskers as matplotlib draws them (the furthest values within 1.5 IQR of the box)."""
    iqr = q3 - q1
    hi_bound, lo_bound = float_keys(np.array([q3 + 1.5 * iqr, q1 - 1.5 * iqr]))
    # a bucket across a bound: its extreme inside stands for the whisker (within 0.4%)
    inside_hi = np.where(b.hi <= hi_bound, b.hi, b.lo)[b.lo <= hi_bound]
    inside_lo = np.where(b.lo >= lo_bound, b.lo, b.hi)[b.hi >= lo_bound]
    whishi = max(key_float(inside_hi.max()), q3) if inside_hi.size else q3
    whislo = min(key_float(inside_lo.min()), q1) if inside_lo.size else q1
    ends = np.unique(np.concatenate([b.lo, b.hi]))
    values = [key_float(k) for k in ends]
    fliers = [v for v in values if v < whislo or v > whishi]
    return Box(b.total, key_float(b.lo[0]), key_float(b.hi[-1]), q1, median, q3, whislo,
               whishi, fliers)


def summarize(q: Quantiles, source: Source, boxed: Iterable[Hashable] = ()
              ) -> tuple[dict[Hashable, float], dict[Hashable, Box]]:
    """The median of every group, and the box of the ``boxed`` ones (one shared set of
    passes over ``source``)."""
    q.settle(source)
    boxed = [g for g in boxed if q.count(g)]
    spans: dict[tuple[Hashable, float], tuple[int, int, float]] = {}
    for group in q.groups():
        n = q.count(group)
        for p in (QUARTILES if group in boxed else (0.5,)):
            spans[(group, p)] = percentile_ranks(n, p)
    found = q.select([(g, r) for (g, _), (a, b, _) in spans.items() for r in (a, b)], source)
    value = {(g, p): lerp(found[(g, a)], found[(g, b)], t) for (g, p), (a, b, t) in spans.items()}
    medians = {g: value[(g, 0.5)] for g in q.groups()}
    boxes = {g: _box(q.bucket_table(g), value[(g, 0.25)], value[(g, 0.5)], value[(g, 0.75)])
             for g in boxed}
    return medians, boxes
