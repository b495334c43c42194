"""Value checks: finite features, plausible runtimes and normalizers, duplicate configs.

Fast paths first: ``min``/``max`` of a chunk are NaN or inf exactly when the chunk has one, and
are several times cheaper than ``np.isfinite``; the slow locating pass runs only on failure.
"""

from __future__ import annotations

import numpy as np

from tpugraphs_tools.validate.report import Report

MAX_RUNTIME_NS = 3_600_000_000_000  # one hour
DUPLICATE_TOLERANCE = 0.05


def _more(count: int, what: str) -> str:
    return f" ({count} {what} in all)" if count > 1 else ""


class FiniteScan:
    """Chunked NaN/inf search over a float feature array; reports the first offender."""

    def __init__(self, rel: str, key: str) -> None:
        self.rel, self.key = rel, key
        self.count = 0
        self.first: tuple[int, tuple[int, ...], float] | None = None

    def update(self, start: int, chunk: np.ndarray) -> None:
        if chunk.size == 0 or chunk.dtype.kind != "f":
            return
        lo, hi = chunk.min(), chunk.max()
        if np.isfinite(lo) and np.isfinite(hi):
            return
        bad = ~np.isfinite(chunk)
        where = np.flatnonzero(bad.reshape(-1))
        self.count += int(where.size)
        if self.first is None:
            pos = np.unravel_index(int(where[0]), chunk.shape)
            self.first = (start + int(pos[0]), tuple(int(p) for p in pos[1:]),
                          float(chunk[pos]))

    def finish(self, report: Report) -> None:
        if self.first is None:
            return
        row, rest, value = self.first
        at = ", ".join(str(p) for p in (row, *rest))
        report.emit("values.non_finite", f"{self.key}[{at}] = {value}"
                    f"{_more(self.count, 'values')}", self.rel, key=self.key, index=row)


def check_runtimes(runtime: np.ndarray, rel: str, key: str, report: Report,
                   hidden_ok: bool = False) -> None:
    """config_runtime: finite, > 0 and below one hour. ``hidden_ok`` accepts an all-zero array
    (official test splits hide their runtimes)."""
    if runtime.size == 0:
        return
    if hidden_ok and not np.any(runtime):
        return
    if runtime.dtype.kind == "f":
        nan = np.flatnonzero(~np.isfinite(runtime))
        if nan.size:
            i = int(nan[0])
            report.emit("values.runtime_not_finite", f"config {i} runtime is {runtime[i]}"
                        f"{_more(nan.size, 'configs')}", rel, key=key, index=i)
        runtime = np.where(np.isfinite(runtime), runtime, 1)
    low = np.flatnonzero(runtime <= 0)
    if low.size:
        i = int(low[0])
        report.emit("values.runtime_nonpositive", f"config {i} runtime is {runtime[i]} ns"
                    f"{_more(low.size, 'configs')}", rel, key=key, index=i)
    high = np.flatnonzero(runtime > MAX_RUNTIME_NS)
    if high.size:
        i = int(high[0])
        report.emit("values.runtime_absurd", f"config {i} runtime is {runtime[i]} ns "
                    f"(> 1 hour){_more(high.size, 'configs')}", rel, key=key, index=i)


def check_normalizers(norm: np.ndarray, rel: str, report: Report, hidden_ok: bool = False
                      ) -> None:
    key = "config_runtime_normalizers"
    if norm.size == 0 or (hidden_ok and not np.any(norm)):
        return
    low = np.flatnonzero(~(norm > 0))
    if low.size:
        i = int(low[0])
        report.emit("values.normalizer_nonpositive", f"config {i} normalizer is {norm[i]}"
                    f"{_more(low.size, 'configs')}", rel, key=key, index=i)


def check_duplicate_runtimes(row_ids: np.ndarray, runtime: np.ndarray, rel: str, key: str,
                             report: Report) -> None:
    """Configs with identical features (same ``row_ids``) whose runtimes spread > 5%.

    ``row_ids`` is any per-config identity (c,): a row hash or a unique-row index. One
    warning per file, naming the group with the widest spread.
    """
    c = runtime.shape[0]
    if c < 2:
        return
    _, inverse, counts = np.unique(row_ids, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if counts.max() < 2:
        return
    rt = runtime.astype(np.float64)
    lo = np.full(counts.shape[0], np.inf)
    hi = np.full(counts.shape[0], -np.inf)
    np.minimum.at(lo, inverse, rt)
    np.maximum.at(hi, inverse, rt)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(lo > 0, (hi - lo) / lo, np.inf)
    conflict = np.flatnonzero((counts > 1) & (spread > DUPLICATE_TOLERANCE))
    if not conflict.size:
        return
    worst = int(conflict[np.argmax(spread[conflict])])
    rows = np.flatnonzero(inverse == worst)
    shown = ", ".join(str(int(r)) for r in rows[:6]) + (", …" if rows.size > 6 else "")
    report.emit("values.duplicate_config_conflict",
                f"{conflict.size} group(s) of identical configs with runtimes differing by "
                f"> {DUPLICATE_TOLERANCE:.0%}; widest: configs [{shown}] run "
                f"{lo[worst]:.0f}..{hi[worst]:.0f} ns (spread {spread[worst]:.1%})", rel,
                key=key, index=int(rows[0]))


def tile_row_ids(config_feat: np.ndarray) -> np.ndarray:
    """Per-config identity of tile config_feat rows (exact bytes; c is small in tile files)."""
    rows = np.ascontiguousarray(config_feat).reshape(config_feat.shape[0], -1)
    view = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))
    _, inverse = np.unique(view.reshape(-1), return_inverse=True)
    return inverse.reshape(-1)
