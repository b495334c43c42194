"""The numbers behind ``tgt report``: per-program runtimes, speed-ups, statuses, sizes, and how
sure the labels are (CI widths, the A/A control rows' noise floor).

The configs table is read in batches of whole graphs (``Dataset.key_batches``): counts are
summed, per-graph figures computed on each graph's rows, and medians and boxes come from
``quantiles.py`` (exact, a few re-reads at most), so memory does not grow with the table.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tpugraphs_tools.measure import reason_of
from tpugraphs_tools.publish.report.labels import GraphLabels, label_stats, pooled_ceiling
from tpugraphs_tools.publish.report.quantiles import Box, Quantiles, summarize
from tpugraphs_tools.store import (
    CONTROL_STATUSES,
    INFEASIBLE_STATUS,
    BeatsDefault,
    ConfigCounts,
    beats_default,
)

ERROR_STATUSES = ("compile_error", "runtime_error", "timeout", "crash", "wrong_result",
                  "default_failed")
SKIPPED_STATUSES = ("noop", "duplicate")
STATUS_ORDER = ("ok", *SKIPPED_STATUSES, *ERROR_STATUSES, INFEASIBLE_STATUS)


@dataclass
class ProgramStats:
    program: str
    graphs: int
    configs: int
    ok: int
    skipped: int
    errors: int
    relative_box: Box | None  # relative_to_default of ok non-default configs
    best_speedup: float | None  # default / best runtime (>1: a config beat the default)
    median_relative: float | None
    ci_half_width: float | None = None  # median 95% CI half-width of ok non-default labels
    controls: int = 0                   # A/A control rows (one per timed batch)
    controls_held: int = 0              # ... whose CI holds 1.0
    noise_floor: float | None = None    # median half-width of the controls' CIs
    pairs: int = 0                      # config pairs within a graph with labels (default too)
    pairs_separated: int = 0            # ... whose 95% CIs are disjoint


@dataclass
class ReportStats:
    graphs: int
    configs: int
    statuses: dict[str, int]
    programs: list[ProgramStats]
    num_nodes: list[int]
    configs_per_graph: list[int]
    ok_per_graph: list[int]
    collections: dict[str, int] = field(default_factory=dict)
    controls: int = 0
    controls_held: int = 0
    noise_floor: float | None = None
    pairs: int = 0
    pairs_separated: int = 0
    labels: list[GraphLabels] = field(default_factory=list)   # per graph: headroom, ceiling
    # "status: first line that says why" -> failed config rows, most frequent first
    failures: dict[str, int] = field(default_factory=dict)
    counts: ConfigCounts = field(default_factory=ConfigCounts)  # configs, labels, control rows
    graph_ids: list[str] = field(default_factory=list)          # order of the per-graph lists
    controls_per_graph: list[int] = field(default_factory=list)

    def beats_default(self) -> BeatsDefault:
        """Graphs with a config surely faster than the default (its whole 95% CI below 1),
        counted as ``tgt baseline`` counts them (``store.beats_default``)."""
        return beats_default(g.headroom for g in self.labels)

    def label_summary(self) -> str | None:
        """One line: graphs where a config beats the default (its CI below 1: a label whose
        CI holds 1 does not), and the pooled noise ceiling."""
        pooled = pooled_ceiling(self.labels)
        if pooled is None:
            return None
        line = f"headroom: {self.beats_default().describe()}; "
        if not pooled.graphs:
            return line + "noise ceiling: no CI: ceiling unknown"
        sure = pooled.kendall_tau_sure
        return (line + f"noise ceiling τ {pooled.kendall_tau:.3f} (sure pairs "
                f"{'–' if math.isnan(sure) else f'{sure:.3f}'}) over {pooled.graphs} graphs")


Batches = Callable[[], Iterable[pl.DataFrame]]  # the configs table, re-readable
# Programs the box plot draws (most measured configs): only they need quartiles; every other
# program's median and fastest label come without them (a box costs three exact ranks more
# per program, and a dataset can have a program per graph).
MAX_BOXES = 30
COLUMNS = ("graph_id", "status", "is_default", "relative_to_default", "relative_ci_low",
           "relative_ci_high", "error_message")
_HALF = (pl.col("relative_ci_high") - pl.col("relative_ci_low")) / 2
_NOT_DEFAULT = ~pl.col("is_default").fill_null(False)
_MEASURED = (pl.col("status") == "ok") & _NOT_DEFAULT & (pl.col("relative_to_default") > 0)
_LABELLED = ((pl.col("status") == "ok") & _NOT_DEFAULT & pl.col("relative_ci_low").is_not_null())
_CONTROL = (pl.col("status") == "control") & pl.col("relative_ci_low").is_not_null()


def _source(configs: pl.DataFrame | pl.LazyFrame | Batches) -> Batches:
    """Frames and lazy frames become one batch (whole graphs, trivially)."""
    if isinstance(configs, pl.LazyFrame):
        names = configs.collect_schema().names()
        frame = configs.select([c for c in COLUMNS if c in names]).collect(engine="streaming")
        return lambda: [frame]
    if isinstance(configs, pl.DataFrame):
        frame = configs
        return lambda: [frame]
    return configs


Group = tuple[str, str | None]  # (what, program; None: all programs)


def _values(batch: pl.DataFrame) -> Iterator[tuple[Group, np.ndarray]]:
    """The values medians and boxes are taken of, by (what, program; None: all programs)."""
    names = set(batch.columns)
    if "relative_to_default" not in names:
        return
    streams = [("relative", _MEASURED, pl.col("relative_to_default"), False)]
    if {"relative_ci_low", "relative_ci_high"} <= names:
        streams += [("ci", _LABELLED, _HALF / pl.col("relative_to_default"), False),
                    ("floor", _CONTROL, _HALF, True)]
    for what, rows, value, overall in streams:
        picked = batch.filter(rows.fill_null(False)).select("program", value.alias("v")) \
            .drop_nulls("v")
        if overall and picked.height:
            yield (what, None), picked.get_column("v").to_numpy()
        for (program,), part in picked.group_by("program"):
            if program is not None:
                yield (what, program), part.get_column("v").to_numpy()


class _Tally:
    """Everything but medians and boxes, summed over batches of whole graphs."""

    def __init__(self, graphs: pl.DataFrame) -> None:
        self.programs_of = dict(graphs.select(["graph_id", "program"]).iter_rows())
        # the map as two columns, made once: a dict handed to polars is converted per batch
        self._ids = pl.Series(list(self.programs_of), dtype=pl.String)
        self._programs = pl.Series(list(self.programs_of.values()), dtype=pl.String)
        self.statuses: Counter[object] = Counter()
        self.per_program: dict[str, Counter[str]] = {}
        self.per_graph: Counter[tuple[str, str]] = Counter()  # (graph, "n" | "ok")
        self.labels: list[GraphLabels] = []
        self.graphs_of: Counter[str] = Counter(self.programs_of.values())
        # a program with all its graphs in one batch hands its values over whole: no bucket
        # table, no re-read (quantiles.py); only the programs the box plot may draw keep one
        self.quantiles = Quantiles(MAX_BOXES, _boxable)
        self.failures: Counter[str] = Counter()

    def with_program(self, batch: pl.DataFrame) -> pl.DataFrame:
        return batch.select([c for c in COLUMNS if c in batch.columns]).with_columns(
            pl.col("graph_id").replace_strict(self._ids, self._programs, default=None,
                                              return_dtype=pl.String).alias("program"))

    def add(self, batch: pl.DataFrame) -> None:
        batch = self.with_program(batch)
        for status, n in batch.group_by("status").len().iter_rows():
            self.statuses[status] += n
        if "error_message" in batch.columns:
            failed = batch.filter(pl.col("status").is_in(ERROR_STATUSES))
            for status, message, n in failed.group_by("status", "error_message").len() \
                    .iter_rows():
                self.failures[reason_of(status, message)] += n
        whole = {p for p, n in batch.group_by("program").agg(pl.col("graph_id").n_unique())
                 .iter_rows() if p is not None and n == self.graphs_of[p]}
        for group, values in _values(batch):
            if group[1] in whole:
                self.quantiles.add_whole(group, values)
            else:
                self.quantiles.add(group, values)
        for program, pairs in _separation(batch).items():
            self.per_program.setdefault(program, Counter()).update(pairs)
        self.labels += label_stats(self.programs_of, batch.lazy())
        # control rows are not configs (timing checks), nor infeasible tiles (store/counts.py)
        configs = batch.filter(~pl.col("status").is_in([*CONTROL_STATUSES, INFEASIBLE_STATUS]))
        counts = configs.group_by("program").agg(
            pl.len().alias("configs"),
            (pl.col("status") == "ok").sum().alias("ok"),
            pl.col("status").is_in(SKIPPED_STATUSES).sum().alias("skipped"),
            pl.col("status").is_in(ERROR_STATUSES).sum().alias("errors"))
        for row in counts.iter_rows(named=True):
            self.per_program.setdefault(row.pop("program"), Counter()).update(row)
        has_ci = {"relative_ci_low", "relative_ci_high"} <= set(batch.columns)
        controls = batch.filter(_CONTROL.fill_null(False)) if has_ci else batch.clear()
        for (program,), part in controls.group_by("program"):
            held = part.filter((pl.col("relative_ci_low") <= 1.0)
                               & (pl.col("relative_ci_high") >= 1.0))
            self.per_program.setdefault(program, Counter()).update(
                {"controls": part.height, "controls_held": held.height})
        for gid, n, ok in configs.group_by("graph_id").agg(
                pl.len(), (pl.col("status") == "ok").sum()).iter_rows():
            self.per_graph[(gid, "n")] += n
            self.per_graph[(gid, "ok")] += ok
        for gid, n in batch.filter(pl.col("status").is_in(CONTROL_STATUSES)) \
                .group_by("graph_id").len().iter_rows():
            self.per_graph[(gid, "controls")] += n


def _status_counts(found: Counter[object]) -> dict[str, int]:
    found = Counter({k: v for k, v in found.items() if v})
    ordered = {s: int(found.pop(s)) for s in STATUS_ORDER if s in found}
    return {**ordered, **{str(k): int(v) for k, v in sorted(found.items(), key=str)}}


def compute_stats(graphs: pl.DataFrame,
                  configs: pl.DataFrame | pl.LazyFrame | Batches) -> ReportStats:
    """Everything the report shows, from the two tables alone (group-bys, no per-row Python).

    ``configs``: a frame, or a callable that yields the table in batches of whole graphs
    (read once, then again only for a median whose value a first read cannot pin down).
    """
    source = _source(configs)
    tally = _Tally(graphs)
    for batch in source():
        tally.add(batch)
    def values() -> Iterator[tuple[Hashable, np.ndarray]]:
        return (v for b in source() for v in _values(tally.with_program(b)))

    tally.quantiles.settle(values)
    boxed = _boxed(tally.quantiles, set(tally.programs_of.values()))
    medians, boxes = summarize(tally.quantiles, values, boxed)
    graph_counts = dict(graphs.group_by("program").len().iter_rows())
    per_program: list[ProgramStats] = []
    for program in sorted(graph_counts):
        counts = tally.per_program.get(program, Counter())
        box = boxes.get(("relative", program))
        low = tally.quantiles.low(("relative", program))
        per_program.append(ProgramStats(
            program=program, graphs=int(graph_counts[program]),
            configs=counts["configs"], ok=counts["ok"], skipped=counts["skipped"],
            errors=counts["errors"], relative_box=box,
            best_speedup=1.0 / low if low else None,
            median_relative=medians.get(("relative", program)),
            ci_half_width=medians.get(("ci", program)), controls=counts["controls"],
            controls_held=counts["controls_held"], noise_floor=medians.get(("floor", program)),
            pairs=counts["pairs"], pairs_separated=counts["pairs_separated"]))
    ids = graphs["graph_id"].to_list()
    statuses = _status_counts(tally.statuses)
    total = ConfigCounts.of_statuses(statuses)
    return ReportStats(
        graphs=graphs.height,
        configs=total.configs,
        counts=total,
        statuses=statuses,
        programs=per_program,
        num_nodes=[int(n) for n in graphs["num_nodes"].to_list()],
        configs_per_graph=[int(tally.per_graph[(g, "n")]) for g in ids],
        ok_per_graph=[int(tally.per_graph[(g, "ok")]) for g in ids],
        graph_ids=[str(g) for g in ids],
        controls_per_graph=[int(tally.per_graph[(g, "controls")]) for g in ids],
        collections=dict(sorted(graphs.group_by("collection").len().iter_rows()))
        if graphs.height else {},
        controls=sum(p.controls for p in per_program),
        controls_held=sum(p.controls_held for p in per_program),
        noise_floor=medians.get(("floor", None)),
        pairs=sum(p.pairs for p in per_program),
        pairs_separated=sum(p.pairs_separated for p in per_program),
        labels=sorted(tally.labels, key=lambda g: g.graph_id),
        failures=dict(tally.failures.most_common()),
    )


def _boxable(group: Hashable) -> bool:
    return isinstance(group, tuple) and group[0] == "relative"


def _boxed(quantiles: Quantiles, programs: set[str]) -> list[tuple[str, str]]:
    """The ("relative", program) groups the box plot draws: the ``MAX_BOXES`` programs with
    the most measured configs, ties by name (the plot's own choice, plots._top)."""
    ranked = sorted(sorted(p for p in programs if p is not None),
                    key=lambda p: quantiles.count(("relative", p)), reverse=True)
    return [("relative", p) for p in ranked[:MAX_BOXES] if quantiles.count(("relative", p))]


def _separation(configs: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Per program: config pairs within a graph whose labels carry CIs, and how many of those
    CIs are disjoint (the orders the labels claim). Per graph, each interval counts the
    intervals that start above its end (a sorted search: no pair list, any graph size)."""
    if not {"relative_ci_low", "relative_ci_high"} <= set(configs.columns):
        return {}
    labelled = configs.filter((pl.col("status") == "ok") & pl.col("relative_ci_low").is_not_null()
                              & pl.col("relative_ci_high").is_not_null())
    per_graph = labelled.group_by("program", "graph_id").agg(
        pl.len().cast(pl.Int64).alias("n"),
        (pl.len() - pl.col("relative_ci_low").sort().search_sorted(
            pl.col("relative_ci_high"), side="right")).cast(pl.Int64).sum().alias("apart"))
    per_program = per_graph.group_by("program").agg(
        (pl.col("n") * (pl.col("n") - 1) // 2).sum().alias("pairs"),
        pl.col("apart").sum().alias("pairs_separated"))
    return {r.pop("program"): {k: int(v) for k, v in r.items()}
            for r in per_program.to_dicts()}
