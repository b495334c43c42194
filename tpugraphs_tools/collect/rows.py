"""Table rows: a config row per graph x config tried (configs.parquet), a graph row per graph
(graphs.parquet).

A :class:`ConfigRow` is built once from a measurement result (``collect/layout.py``,
``collect/tile/labels.py``) and never changed after: values derived later (window widening, the npz
row, the default's reference label) make a new row. At run time it is a plain dict, because
that is what every boundary it crosses holds: journal lines (JSON), Arrow tables, Ray task
results, rows read back from a dataset. :func:`config_row` turns any of those into one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.measure import Status, StopReason, Timer

if TYPE_CHECKING:
    from typing_extensions import ReadOnly


class ConfigRow(TypedDict):
    """``schemas/configs.schema.json``, field for field (the schema describes each column;
    tests/collect/test_rows.py checks the two agree)."""

    graph_id: NotRequired[ReadOnly[str]]  # filled in by the store (Transaction.put_configs)
    config_index: ReadOnly[int]
    strategy: ReadOnly[str]
    seed: ReadOnly[int | None]
    is_default: ReadOnly[bool]
    status: ReadOnly[Status]
    config: ReadOnly[str]
    realized: ReadOnly[str | None]
    honoured: ReadOnly[str | None]
    num_copies: ReadOnly[int | None]
    optimized_fingerprint: ReadOnly[str | None]
    duplicate_of: ReadOnly[int | None]
    npz_row: ReadOnly[int | None]
    runtime_min_ns: ReadOnly[int | None]
    runtime_median_ns: ReadOnly[int | None]
    runtime_cv: ReadOnly[float | None]
    repeats: ReadOnly[int | None]
    default_runtime_ns: ReadOnly[int | None]
    relative_to_default: ReadOnly[float | None]
    relative_ci_low: ReadOnly[float | None]
    relative_ci_high: ReadOnly[float | None]
    rounds: ReadOnly[int | None]
    stop_reason: ReadOnly[StopReason | None]
    window_sd: ReadOnly[float | None]
    process_sd: ReadOnly[float | None]
    runs_per_sample: ReadOnly[int | None]
    timing_cpus: ReadOnly[int | None]
    timer: ReadOnly[Timer | None]
    kernels_per_run: ReadOnly[int | None]
    timer_fallback: ReadOnly[str | None]
    max_abs_error: ReadOnly[float | None]
    compile_seconds: ReadOnly[float | None]
    measure_seconds: ReadOnly[float | None]
    error_message: ReadOnly[str | None]
    # Working key (journaled, never stored): the t quantile the row's CI was built with, so
    # window widening takes the row's standard error out of its CI exactly (labels.py).
    ci_t: NotRequired[ReadOnly[float | None]]


CI_T = "ci_t"
WORKING_KEYS = (CI_T,)
_REQUIRED = ("config_index", "strategy", "is_default", "status", "config")


def config_row(values: Mapping[str, Any], where: str = "config row") -> ConfigRow:
    """A row from a journal line, a stored row or a Ray task's result: every column present
    (absent ones null), status and stop reason as enum members; an unknown column, a missing
    required one or an unknown status is a :class:`DatasetError` naming ``where``."""
    columns = list(ConfigRow.__annotations__)
    extra = sorted(set(values) - set(columns))
    missing = [k for k in _REQUIRED if values.get(k) is None]
    if extra or missing:
        raise DatasetError(f"{where}: " + "; ".join(
            ([f"columns not in schemas/configs.schema.json: {extra}"] if extra else [])
            + ([f"missing {missing}"] if missing else [])))
    row = {k: values.get(k) for k in columns if k not in ("graph_id", CI_T)}
    for key in ("graph_id", CI_T):
        if key in values:
            row[key] = values[key]
    try:
        row["status"] = Status(values["status"])
        reason = values.get("stop_reason")
        row["stop_reason"] = None if reason is None else StopReason(reason)
        timer = values.get("timer")
        row["timer"] = None if timer is None else Timer(timer)
    except ValueError as exc:
        raise DatasetError(f"{where}: {exc}") from None
    return row  # type: ignore[return-value]  # every key checked above


def stored_row(row: ConfigRow) -> ConfigRow:
    """``row`` without its working keys (all NotRequired): the configs.parquet columns."""
    return cast(ConfigRow, {k: v for k, v in row.items() if k not in WORKING_KEYS})


class GraphRow(TypedDict):
    """``schemas/graphs.schema.json``, field for field (tests/collect/test_rows.py checks the
    two agree). Built once by ``collect/graphs.py:graph_row``; a changed count makes a new row."""

    graph_id: ReadOnly[str]
    collection: ReadOnly[str]
    program: ReadOnly[str]
    program_args: ReadOnly[str]
    source: ReadOnly[str]
    source_path: ReadOnly[str | None]
    hlo_stage: ReadOnly[str]
    fingerprint: ReadOnly[str]
    backend: ReadOnly[str]
    device_kind: ReadOnly[str | None]
    config_space: ReadOnly[str | None]
    num_nodes: ReadOnly[int]
    num_edges: ReadOnly[int]
    num_configurable: ReadOnly[int]
    num_configs: ReadOnly[int]
    npz_file: NotRequired[ReadOnly[str]]  # filled in by the store (Transaction.put_graph)
    hlo_file: NotRequired[ReadOnly[str | None]]  # ... when the raw HLO is stored beside it
    jax_version: ReadOnly[str | None]
    jaxlib_version: ReadOnly[str | None]
    xla_flags: ReadOnly[str | None]
    created_at: NotRequired[ReadOnly[str]]  # filled in by the store
    parent_graph_id: NotRequired[ReadOnly[str | None]]  # tile graphs only
    parent_instruction: NotRequired[ReadOnly[str | None]]  # tile graphs only
    # set by ``tgt import`` (the official tree's split folder), never by a collection
    split: NotRequired[ReadOnly[str | None]]


# The schema's required columns: a row read back from the store has every one (the store
# fills npz_file and created_at in).
STORED_GRAPH_REQUIRED = (
    "graph_id", "collection", "program", "program_args", "source", "hlo_stage", "fingerprint",
    "backend", "num_nodes", "num_edges", "num_configurable", "num_configs", "npz_file",
    "created_at")


def graph_row_of(values: Mapping[str, Any], where: str = "graph row") -> GraphRow:
    """A graphs.parquet row read back (``Dataset.graph_row``, a table's ``to_dicts()``) as a
    :class:`GraphRow`; an unknown column or a missing required one is a :class:`DatasetError`
    naming ``where``."""
    columns = GraphRow.__annotations__
    extra = sorted(set(values) - set(columns))
    missing = [k for k in STORED_GRAPH_REQUIRED if values.get(k) is None]
    if extra or missing:
        raise DatasetError(f"{where}: " + "; ".join(
            ([f"columns not in schemas/graphs.schema.json: {extra}"] if extra else [])
            + ([f"missing {missing}"] if missing else [])))
    return cast(GraphRow, dict(values))
