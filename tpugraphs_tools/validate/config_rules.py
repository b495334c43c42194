"""Row rules of configs.parquet, fed a batch of whole graphs at a time.

Only ``ok`` rows carry ``npz_row`` (their index into the graph's config arrays) and a positive
``runtime_min_ns``; ratio labels and their CIs must be ordered and positive; a graph's A/A
controls must hold 1.0 and its rows come from runs on one number of CPUs.

A part is read in batches so that validate's memory does not grow with the part (a merged
part holds millions of rows). Each rule keeps only its first offending row and a count, and
each per-graph rule sees all of a graph's rows at once (a batch holds whole graphs), so the
findings are the ones a single pass over the whole part gives, in the same order.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from tpugraphs_tools.configs import SLOTS
from tpugraphs_tools.validate.catalog import severity
from tpugraphs_tools.validate.dataset_rows import ConfigRefs
from tpugraphs_tools.validate.report import Finding, Report
from tpugraphs_tools.validate.table_checks import FirstRow

# The configs columns the row rules read: validate holds only these of a part together.
CONFIG_COLUMNS = ("graph_id", "status", "npz_row", "runtime_min_ns", "honoured", "config",
                  "relative_to_default", "relative_ci_low", "relative_ci_high", "timing_cpus",
                  "timer", "realized", "error_message")
TIMED_BY = ("host", "cupti", "profiler")  # configs ``timer`` besides "mixed" (schema enum)
_NEED = {"graph_id", "status", "npz_row"}
_LABEL = ("relative_to_default", "relative_ci_low", "relative_ci_high")


def _more(count: int) -> str:
    return f" ({count} rows in all)" if count > 1 else ""


def _honoured_problem(honoured: str, config: str | None) -> str | None:
    """Why a configs row's ``honoured`` JSON is invalid, or None when it is fine."""
    try:
        value = json.loads(honoured)
        wanted = json.loads(config) if config else {}
    except (TypeError, ValueError) as exc:
        return f"honoured or config is not valid JSON ({exc})"
    if not isinstance(value, dict) or not all(
            isinstance(slots, dict) and set(slots) <= set(SLOTS)
            and all(v is None or isinstance(v, bool) for v in slots.values())
            for slots in value.values()):
        return "honoured must map node -> slot (output/input/kernel) -> true/false/null"
    keys = {(n, s) for n, slots in value.items() for s in slots}
    asked = ({(n, s) for n, slots in wanted.items() if isinstance(slots, dict) for s in slots}
             if isinstance(wanted, dict) else set())
    if keys != asked:
        return (f"honoured covers {len(keys)} slots but config constrains {len(asked)}: "
                "every constrained slot has exactly one honoured flag")
    return None


_OK = pl.col("status") == "ok"
_REL, _LOW, _HIGH = (pl.col(c) for c in _LABEL)
# (check, condition, message template, key), reported in this order.
_ROW_RULES: tuple[tuple[str, pl.Expr, str, str], ...] = (
    ("dataset.npz_row_missing", _OK & pl.col("npz_row").is_null(),
     "ok config has no npz_row", "npz_row"),
    ("dataset.npz_row_unexpected", ~_OK & pl.col("npz_row").is_not_null(),
     "config with status {status!r} has npz_row {npz_row} (only ok configs have one)",
     "npz_row"),
)
_RUNTIME = _OK.fill_null(False) & ~(pl.col("runtime_min_ns") > 0).fill_null(False)
# A label is a positive ratio; its CI bounds are ordered (layout and tile rows alike). Only the
# first of these that any row breaks is reported.
_LABEL_RULES: tuple[tuple[pl.Expr, str, str], ...] = (
    (_LOW.is_not_null() & _HIGH.is_not_null() & (_LOW > _HIGH),
     "relative_ci_low {relative_ci_low} above relative_ci_high {relative_ci_high}",
     "relative_ci_low"),
    ((_LOW <= 0) | (_REL <= 0),
     "ratio label not positive: relative_to_default {relative_to_default}, CI "
     "[{relative_ci_low}, {relative_ci_high}]", "relative_ci_low"),
    (_LOW.is_not_null() & _HIGH.is_not_null() & _REL.is_not_null()
     & ~((_LOW <= _REL) & (_REL <= _HIGH)),
     "relative_to_default {relative_to_default} outside its CI [{relative_ci_low}, "
     "{relative_ci_high}]", "relative_to_default"),
)


class ConfigRules:
    """The row rules over one configs part, fed with :meth:`add`, reported by :meth:`finish`.

    Memory: a first offending row and a count per rule, one finding per graph that breaks a
    per-graph rule; nothing per row once a batch is done.
    """

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.rows = [FirstRow() for _ in _ROW_RULES]
        self.runtime = FirstRow()
        self.honoured = FirstRow()
        self.labels = [FirstRow() for _ in _LABEL_RULES]
        self.controls: list[tuple[int, Finding]] = []  # (order key, finding) per graph
        self.timing: list[tuple[int, Finding]] = []
        self.duplicate: dict[str, Any] | None = None   # first repeated (graph, npz_row)
        self.timer: tuple[int, Finding] | None = None  # first graph that mixes timers
        self.tile_ok = 0                                # ok tile rows that say matches_request
        self.tile_other = FirstRow()                    # ... and compiled to another tile
        self.infeasible = FirstRow()                    # tiles over the device's limits
        self.compile_errors = 0                         # counted apart from them

    def add(self, rows: pl.DataFrame) -> ConfigRefs:
        """Check ``rows`` (every row of each graph in it, in row order, with ``__row``, the
        row within the part); returns the graphs' npz_row references for the npz checks."""
        refs = ConfigRefs(self.rel)
        if not set(rows.columns) >= _NEED:
            return refs
        for tally, (_, cond, _, _) in zip(self.rows, _ROW_RULES, strict=True):
            tally.add(rows.filter(cond.fill_null(False)))
        if "runtime_min_ns" in rows.columns:
            self.runtime.add(rows.filter(_RUNTIME))
        if {"honoured", "config"} <= set(rows.columns):
            self._honoured(rows)
        if set(_LABEL) <= set(rows.columns):
            for tally, (cond, _, _) in zip(self.labels, _LABEL_RULES, strict=True):
                tally.add(rows.filter(cond.fill_null(False)))
            self._controls(rows)
        if "timing_cpus" in rows.columns:
            self._timing_cpus(rows)
        if "timer" in rows.columns:
            self._timer(rows)
        if "realized" in rows.columns:
            self._tile_requests(rows)
        status = pl.col("status")
        self.infeasible.add(rows.filter((status == "infeasible").fill_null(False)))
        self.compile_errors += rows.filter((status == "compile_error").fill_null(False)).height
        with_row = rows.filter(pl.col("npz_row").is_not_null() & pl.col("graph_id").is_not_null())
        self._duplicates(with_row)
        for (gid,), part in with_row.group_by("graph_id"):
            refs.by_graph[str(gid)] = (part.get_column("npz_row").to_numpy(),
                                       part.get_column("__row").to_numpy())
        for gid in rows.get_column("graph_id").drop_nulls().unique().to_list():
            refs.by_graph.setdefault(str(gid), (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        return refs

    def finish(self, report: Report) -> None:
        """Report in the order of the rules, per-graph findings in row order."""
        for tally, (check, _, template, key) in zip(self.rows, _ROW_RULES, strict=True):
            self._emit(report, check, tally, lambda r, t=template: t.format(**r), key)
        self._emit(report, "dataset.ok_runtime_invalid", self.runtime,
                   lambda r: f"ok config has runtime_min_ns {r['runtime_min_ns']}",
                   "runtime_min_ns")
        self._emit(report, "dataset.honoured_invalid", self.honoured,
                   lambda r: str(r["problem"]), "honoured")
        for tally, (_, template, key) in zip(self.labels, _LABEL_RULES, strict=True):
            if tally.row is not None:
                self._emit(report, "dataset.relative_ci_invalid", tally,
                           lambda r, t=template: t.format(**r), key)
                break
        for findings in (self.controls, self.timing):
            for _, finding in sorted(findings, key=lambda f: f[0]):
                report.add(finding)
        if self.timer is not None:
            report.add(self.timer[1])
        if self.tile_other.row is not None:
            row = self.tile_other.row
            report.emit("dataset.tile_not_as_requested", f"{self.tile_other.count} of "
                        f"{self.tile_ok} ok tile configs compiled to another tile than requested "
                        f"(first: graph {row['graph_id']!r}); their features encode the tile "
                        "that ran", self.rel, key="realized", index=row["__row"])
        if self.infeasible.row is not None:
            row = self.infeasible.row
            report.emit("dataset.tile_infeasible", f"{self.infeasible.count} tile configs over "
                        "the device's limits, never compiled (apart from "
                        f"{self.compile_errors} compile_error; first: graph {row['graph_id']!r}"
                        f": {row.get('error_message') or 'no reason given'})", self.rel,
                        key="status", index=row["__row"])
        if self.duplicate is not None:
            row = self.duplicate
            report.emit("dataset.npz_row_duplicate", f"graph {row['graph_id']!r} npz_row "
                        f"{row['npz_row']} used by config rows {row['__row'][:5]}", self.rel,
                        key="npz_row", index=row["__row"][1])

    def _emit(self, report: Report, check: str, tally: FirstRow, message: Any,
              key: str) -> None:
        if tally.row is not None:
            report.emit(check, message(tally.row) + _more(tally.count), self.rel, key=key,
                        index=tally.row["__row"])

    def _honoured(self, rows: pl.DataFrame) -> None:
        """honoured is JSON node → slot → bool|null with exactly the config's constrained
        slots (a Python loop: only rows that have it)."""
        bad = []
        for index, honoured, config in rows.filter(pl.col("honoured").is_not_null()).select(
                "__row", "honoured", "config").iter_rows():
            problem = _honoured_problem(honoured, config)
            if problem is not None:
                bad.append((index, problem))
        self.honoured.add(pl.DataFrame(bad, schema=["__row", "problem"], orient="row"))

    def _controls(self, rows: pl.DataFrame) -> None:
        """An A/A control whose CI excludes 1.0: the graph's batches claimed a difference
        between identical programs (noise floor breached)."""
        outside = rows.filter(((pl.col("status") == "control") & ((_LOW > 1.0) | (_HIGH < 1.0)))
                              .fill_null(False))
        for (gid,), part in outside.group_by("graph_id", maintain_order=True):
            row = part.row(0, named=True)
            self.controls.append((row["__row"], Finding(
                "dataset.control_outside_ci", f"graph {gid!r}: A/A control "
                f"{row['relative_to_default']:.4f} with CI [{row['relative_ci_low']:.4f}, "
                f"{row['relative_ci_high']:.4f}] excludes 1.0"
                + (f" ({part.height} control rows)" if part.height > 1 else "")
                + ": labels of this graph claim differences noise can produce", self.rel,
                "relative_ci_low", int(row["__row"]), severity("dataset.control_outside_ci"))))

    def _timing_cpus(self, rows: pl.DataFrame) -> None:
        """A graph's labels must come from runs on as many CPUs: one-core runs (``--isolation
        pin``, ``--timing-lanes``) separate configs differently from all-core runs, so a
        resumed collection that changed them mixes two measurements in one ranking."""
        timed = rows.filter(pl.col("timing_cpus").is_not_null()
                            & pl.col("graph_id").is_not_null())
        mixed = timed.group_by("graph_id").agg(pl.col("timing_cpus").n_unique().alias("n")) \
            .filter(pl.col("n") > 1).get_column("graph_id")
        if mixed.is_empty():  # the usual case: one vectorised pass, no loop over graphs
            return
        mixed_rows = timed.filter(pl.col("graph_id").is_in(mixed.implode()))
        for (gid,), part in mixed_rows.group_by("graph_id", maintain_order=True):
            counts = part.get_column("timing_cpus").value_counts(sort=True)
            usual = counts.row(0)[0]
            odd = part.filter(pl.col("timing_cpus") != usual).row(0, named=True)
            self.timing.append((int(part.get_column("__row")[0]), Finding(
                "dataset.timing_cpus_mixed",
                f"graph {gid!r}: rows timed on {sorted(counts.get_column('timing_cpus'))} "
                f"CPUs (this row {odd['timing_cpus']}, most rows {usual}): its ranking "
                "mixes runs on different numbers of CPUs", self.rel, "timing_cpus",
                int(odd["__row"]), severity("dataset.timing_cpus_mixed"))))

    def _timer(self, rows: pl.DataFrame) -> None:
        """Host and device time are different quantities (launch included or not), so one
        graph's labels must share one ``timer`` (its values are checked by the schema's enum).
        Only the first graph that mixes them is reported."""
        timer = pl.col("timer")
        timed = rows.filter(timer.is_in(TIMED_BY) & pl.col("graph_id").is_not_null())
        several = timed.group_by("graph_id").agg(timer.n_unique().alias("n")) \
            .filter(pl.col("n") > 1).get_column("graph_id")
        mixed = rows.filter((timer == "mixed").fill_null(False)).get_column("graph_id")
        for gid in [*several.to_list(), *mixed.unique().to_list()]:
            part = rows.filter(pl.col("graph_id") == gid)
            first = int(part.get_column("__row")[0])
            if self.timer is not None and self.timer[0] <= first:
                continue
            names = sorted(part.get_column("timer").drop_nulls().unique().to_list())
            odd = part.filter(timer.is_not_null()).row(-1, named=True)
            self.timer = (first, Finding(
                "dataset.timer_mixed", f"graph {gid!r}: labels timed by {names}: its ranking "
                "mixes host and device time", self.rel, "timer", int(odd["__row"]),
                severity("dataset.timer_mixed")))

    def _tile_requests(self, rows: pl.DataFrame) -> None:
        """Counts ok configs whose tile read back differs from the request (tile rows only)."""
        ok = rows.filter((pl.col("status") == "ok").fill_null(False)
                         & pl.col("realized").str.contains('"matches_request"').fill_null(False))
        self.tile_ok += ok.height
        self.tile_other.add(ok.filter(
            pl.col("realized").str.contains('"matches_request": false')))

    def _duplicates(self, with_row: pl.DataFrame) -> None:
        dup = with_row.filter(pl.struct("graph_id", "npz_row").is_duplicated())
        if dup.height:
            first = dup.group_by("graph_id", "npz_row", maintain_order=True).agg(
                pl.col("__row")).row(0, named=True)
            if self.duplicate is None or first["__row"][0] < self.duplicate["__row"][0]:
                self.duplicate = first
