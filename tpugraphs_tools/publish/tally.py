"""A column's values with their counts: one definition for every family that states them.

The report page (rows per timing CPU count) and the published dataset's card and Croissant
file (sources, statuses, strategies, ...) count the same columns of the same tables.
"""

from __future__ import annotations

from collections import Counter

import polars as pl


def value_counts(frame: pl.DataFrame | pl.LazyFrame, column: str) -> dict[str, int]:
    """Value → count of a column (a lazy frame is aggregated without loading it)."""
    if column not in frame.collect_schema().names():
        return {}
    counted = frame.lazy().group_by(column).len().collect(engine="streaming")
    values = Counter({str(v): int(n) for v, n in counted.iter_rows() if v is not None})
    return dict(sorted(values.items(), key=lambda kv: (-kv[1], kv[0])))
