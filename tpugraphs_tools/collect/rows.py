"""Config rows: what configs.parquet stores per config, and what a row carries while its graph
is still being collected."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Working-row key (journaled, never stored in configs.parquet): the t quantile the row's CI
# was built with, so window widening takes the row's standard error out of its CI exactly.
CI_T = "ci_t"
WORKING_KEYS = (CI_T,)


def stored_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` without its working keys: the configs.parquet columns."""
    return {k: v for k, v in row.items() if k not in WORKING_KEYS}
