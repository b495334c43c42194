"""Layout config values: range, 6-slot group validity, output-slot rank, duplicate configs.

``node_config_feat`` is usually the largest array of a layout file, so it is checked chunk by
chunk with a few whole-array numpy passes per chunk:

* ``astype(int8) != chunk`` finds NaN, inf, non-integers and far-out values in one pass;
* each 6-slot group (values -1..5) is encoded as a base-7 number by one small float matrix
  product, and a 7**6-entry lookup table says whether the group is valid and its length k;
* rows are hashed from those codes (a 64-bit polynomial hash), so duplicate configs are found
  without keeping any chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tpugraphs_tools.format import LAYOUT_CONFIG_WIDTH
from tpugraphs_tools.validate.report import Report

KEY = "node_config_feat"
BLOCK_BYTES = 1 << 20
SLOTS = ("output", "input", "kernel")
_BASE = 7
_WEIGHTS = (_BASE ** np.arange(6)).astype(np.float32)
_OFFSET = np.float32(_WEIGHTS.sum())  # adds 1 to every slot: -1..5 -> 0..6
# Block-diagonal (LAYOUT_CONFIG_WIDTH, 3): one gemm gives the three group codes of every node
# row at once (faster than a gemv over 6-wide rows); exact, since codes < 7**6 < 2**24.
_W18 = np.zeros((LAYOUT_CONFIG_WIDTH, 3), np.float32)
for _slot in range(3):
    _W18[6 * _slot:6 * _slot + 6, _slot] = _WEIGHTS


def _build_lut() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """permutation[code], distinct[code], k[code], top[code] for every base-7 code of a 6-slot
    group: a permutation of 0..k-1 followed by -1s; k distinct dims followed by -1s (a prefix
    of a minor_to_major: the TPU autotuner fixes only the minor-most dims, e.g. [4, 0] on a
    rank-5 tensor); its length; its largest dim (-1 when empty)."""
    codes = np.arange(_BASE ** 6)
    digits = (codes[:, None] // (_BASE ** np.arange(6))) % _BASE - 1  # values -1..5
    present = digits >= 0
    k = present.sum(axis=1)
    prefix = np.all(present[:, 1:] <= present[:, :-1], axis=1)  # no value after a -1
    bits = np.where(present, 1 << np.clip(digits, 0, 5), 0).sum(axis=1)
    distinct = np.array([bin(b).count("1") for b in bits]) == k
    permutation = prefix & (bits == (1 << k) - 1)  # k distinct values all < k
    return permutation, prefix & distinct, k.astype(np.int8), digits.max(axis=1).astype(np.int8)


_PERMUTATION, _DISTINCT, _K, _TOP = _build_lut()
_MULT = np.random.default_rng(0x7470).integers(1, 2**63, size=1 << 16, dtype=np.uint64) \
    | np.uint64(1)


@dataclass
class _First:
    """First offending location of a check plus the total count across chunks."""

    count: int = 0
    message: str = ""
    index: int | None = None

    def add(self, count: int, message: str, index: int) -> None:
        if not self.count:
            self.message, self.index = message, index
        self.count += count


@dataclass
class LayoutConfigScan:
    """Feed ``node_config_feat`` chunks to :meth:`update`; :meth:`finish` emits findings."""

    rel: str
    node_ids: np.ndarray | None         # node_config_ids (for messages)
    ranks: np.ndarray | None            # rank per configurable node (-1 unknown), or None
    # TpuGraphs' own data (official trees, TPU tuning imports) lists only the dims the TPU
    # autotuner fixed; tgt's collections always write whole permutations.
    partial_ok: bool = False
    finite: _First = field(default_factory=_First)
    range_: _First = field(default_factory=_First)
    group: _First = field(default_factory=_First)
    rank: _First = field(default_factory=_First)
    hashes: list[np.ndarray] = field(default_factory=list)
    hashable: bool = True

    def _node(self, j: int) -> str:
        if self.node_ids is not None and j < self.node_ids.shape[0]:
            return f"node {int(self.node_ids[j])} (configurable #{j})"
        return f"configurable #{j}"

    def update(self, start: int, chunk: np.ndarray) -> None:
        """Check a chunk in ~1 MiB blocks: temporaries stay in cache and are recycled by
        malloc instead of being fresh, page-faulting allocations the size of the chunk."""
        row_bytes = max(1, chunk[0].nbytes) if chunk.shape[0] else 1
        step = max(1, BLOCK_BYTES // row_bytes)
        with np.errstate(invalid="ignore", over="ignore"):  # NaN -> int8 casts, hash wrap
            for i in range(0, max(chunk.shape[0], 1), step):
                self._update_block(start + i, chunk[i:i + step])

    def _update_block(self, start: int, chunk: np.ndarray) -> None:
        cc, nc = chunk.shape[0], chunk.shape[1]
        if cc == 0 or nc == 0:
            if nc == 0:
                self.hashes.append(np.zeros(cc, np.uint64))
            return
        vi = chunk.astype(np.int8)
        bad = vi != chunk
        in_range = not bad.any()
        if in_range:
            lo, hi = int(vi.min()), int(vi.max())
            in_range = lo >= -1 and hi <= 5
            if not in_range:
                bad = (vi < -1) | (vi > 5)
        del vi
        if not in_range:
            self.hashable = False
            self._report_range(start, chunk, bad)
            return
        del bad
        rows = chunk.reshape(-1, LAYOUT_CONFIG_WIDTH)
        if chunk.dtype != np.float32:
            rows = rows.astype(np.float32)
        codes = (rows @ _W18 + _OFFSET).astype(np.int32).reshape(cc, nc, 3)
        self._check_groups(start, chunk, codes)
        self._hash(codes)

    def _report_range(self, start: int, chunk: np.ndarray, bad: np.ndarray) -> None:
        nonfinite = ~np.isfinite(chunk)
        for first, mask, what in ((self.finite, nonfinite, "not finite"),
                                  (self.range_, bad & ~nonfinite, "not an integer in -1..5")):
            where = np.flatnonzero(mask.reshape(-1))
            if not where.size:
                continue
            i, j, f = np.unravel_index(int(where[0]), chunk.shape)
            first.add(int(where.size),
                      f"config {start + i}, {self._node(int(j))}, feature {f} "
                      f"({SLOTS[f // 6]}_layout_{f % 6}) = {float(chunk[i, j, f])}: {what}",
                      start + int(i))

    def _check_groups(self, start: int, chunk: np.ndarray, codes: np.ndarray) -> None:
        valid = (_DISTINCT if self.partial_ok else _PERMUTATION)[codes]
        rule = ("distinct dims followed by -1s" if self.partial_ok
                else "a permutation of 0..k-1 followed by -1s")
        if not valid.all():
            where = np.flatnonzero(~valid.reshape(-1))
            i, j, s = np.unravel_index(int(where[0]), valid.shape)
            group = chunk[i, j, 6 * s:6 * s + 6].astype(np.int64).tolist()
            self.group.add(int(where.size),
                           f"config {start + i}, {self._node(int(j))}, {SLOTS[s]} slot "
                           f"[{6 * s}:{6 * s + 6}] = {group}: neither all -1 nor {rule}",
                           start + int(i))
        if self.ranks is None:
            return
        k0 = _K[codes[:, :, 0]]
        known = (self.ranks >= 0)[None, :]  # -1: rank unknown (bad node id or node_feat)
        rank = self.ranks[None, :]
        if self.partial_ok:  # a prefix: no longer than the rank, every dim below it
            mismatch = (k0 > rank) | (_TOP[codes[:, :, 0]] >= rank)
        else:
            mismatch = (k0 != 0) & (k0 != rank)
        wrong = mismatch & valid[:, :, 0] & known
        if wrong.any():
            where = np.flatnonzero(wrong.reshape(-1))
            i, j = np.unravel_index(int(where[0]), wrong.shape)
            if self.partial_ok:
                what = f"{chunk[i, j, 0:6].astype(np.int64).tolist()} does not fit"
            else:
                what = f"has {int(k0[i, j])} entries but"
            self.rank.add(int(where.size),
                          f"config {start + i}, {self._node(int(j))}: output layout {what} "
                          f"the node has rank {int(self.ranks[j])}", start + int(i))

    def _hash(self, codes: np.ndarray) -> None:
        """One 64-bit polynomial hash per config row (wrapping uint64 arithmetic)."""
        rows = codes.reshape(codes.shape[0], -1).astype(np.uint64)
        width = rows.shape[1]
        mult = _MULT[:width] if width <= _MULT.shape[0] else \
            np.resize(_MULT, width) * np.arange(1, width + 1, dtype=np.uint64)
        self.hashes.append((rows * mult).sum(axis=1, dtype=np.uint64))

    def finish(self, report: Report) -> np.ndarray | None:
        """Emit findings; returns the (c,) row hashes when every chunk was in range."""
        for check, first in (("values.non_finite", self.finite),
                             ("values.layout_out_of_range", self.range_),
                             ("values.layout_group", self.group),
                             ("values.layout_rank", self.rank)):
            if first.count:
                more = f" ({first.count} in all)" if first.count > 1 else ""
                report.emit(check, first.message + more, self.rel, key=KEY, index=first.index)
        if not self.hashable or not self.hashes:
            return None
        return np.concatenate(self.hashes)


def node_ranks(node_feat_rows: np.ndarray) -> np.ndarray:
    """Rank of each node from its shape dims (node_feat[:, 21:27] nonzero entries)."""
    return np.count_nonzero(node_feat_rows[:, 21:27], axis=1).astype(np.int8)
