"""The numbers behind ``tgt report``: per-program runtimes, speed-ups, statuses, sizes, and how
sure the labels are (CI widths, the A/A control rows' noise floor)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import polars as pl

from tpugraphs_tools.publish._report_labels import GraphLabels, label_stats, pooled_ceiling

ERROR_STATUSES = ("compile_error", "runtime_error", "timeout", "crash", "wrong_result",
                  "default_failed")
SKIPPED_STATUSES = ("noop", "duplicate")
STATUS_ORDER = ("ok", *SKIPPED_STATUSES, *ERROR_STATUSES)


@dataclass
class ProgramStats:
    program: str
    graphs: int
    configs: int
    ok: int
    skipped: int
    errors: int
    relative: list[float]  # relative_to_default of ok non-default configs
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

    def label_summary(self) -> str | None:
        """One line: graphs where a config beats the default, and the pooled noise ceiling."""
        pooled = pooled_ceiling(self.labels)
        if pooled is None:
            return None
        rooms = [g.headroom for g in self.labels if g.headroom is not None]
        faster = sum(r.fastest < 1.0 for r in rooms)
        line = f"headroom: a config beats the default in {faster}/{len(rooms)} graphs; "
        if not pooled.graphs:
            return line + "noise ceiling: no CI: ceiling unknown"
        sure = pooled.kendall_tau_sure
        return (line + f"noise ceiling τ {pooled.kendall_tau:.3f} (sure pairs "
                f"{'–' if math.isnan(sure) else f'{sure:.3f}'}) over {pooled.graphs} graphs")


def _status_counts(configs: pl.LazyFrame) -> dict[str, int]:
    found = dict(configs.group_by("status").len().collect(engine="streaming").iter_rows())
    ordered = {s: int(found.pop(s)) for s in STATUS_ORDER if s in found}
    return {**ordered, **{str(k): int(v) for k, v in sorted(found.items())}}


def _median(values: list[float]) -> float:
    """Polars' median (what the report always showed), as a plain float."""
    median = pl.Series(values, dtype=pl.Float64).median()
    assert isinstance(median, float)  # a non-empty float series has a float median
    return median


def compute_stats(graphs: pl.DataFrame, configs: pl.DataFrame | pl.LazyFrame) -> ReportStats:
    """Everything the report shows, from the two tables alone (group-bys, no per-row Python).

    ``configs`` may be a lazy scan: it is only aggregated (streaming), never loaded whole.
    """
    programs_of = dict(graphs.select(["graph_id", "program"]).iter_rows())
    configs = configs.lazy()
    present = set(configs.collect_schema().names())
    configs = configs.select([c for c in ("graph_id", "status", "is_default",
                                          "relative_to_default", "relative_ci_low",
                                          "relative_ci_high") if c in present])
    statuses = _status_counts(configs)
    configs = configs.with_columns(
        pl.col("graph_id").replace_strict(programs_of, default=None).alias("program"))
    noise = _noise(configs)
    separation = _separation(configs)
    labels = label_stats(graphs, configs)
    configs = configs.filter(pl.col("status") != "control")  # not configs: batch checks
    measured = ((pl.col("status") == "ok") & ~pl.col("is_default").fill_null(False)
                & (pl.col("relative_to_default") > 0))
    agg = configs.group_by("program").agg(
        pl.len().alias("configs"),
        (pl.col("status") == "ok").sum().alias("ok"),
        pl.col("status").is_in(SKIPPED_STATUSES).sum().alias("skipped"),
        pl.col("status").is_in(ERROR_STATUSES).sum().alias("errors"),
        pl.col("relative_to_default").filter(measured).alias("relative"),
    ).collect(engine="streaming")
    by_program = {r["program"]: r for r in agg.iter_rows(named=True)}
    graph_counts = dict(graphs.group_by("program").len().iter_rows())
    per_program: list[ProgramStats] = []
    for program in sorted(graph_counts):
        row = by_program.get(program, {})
        relative = [float(v) for v in row.get("relative") or []]
        per_program.append(ProgramStats(
            program=program, graphs=int(graph_counts[program]),
            configs=int(row.get("configs") or 0), ok=int(row.get("ok") or 0),
            skipped=int(row.get("skipped") or 0), errors=int(row.get("errors") or 0),
            relative=relative,
            best_speedup=1.0 / min(relative) if relative else None,
            median_relative=_median(relative) if relative else None,
            **noise.get(program, {}),
            **separation.get(program, {}),
        ))
    per_graph = configs.group_by("graph_id").agg(
        pl.len().alias("n"), (pl.col("status") == "ok").sum().alias("ok")
    ).collect(engine="streaming")
    counts = dict(per_graph.select("graph_id", "n").iter_rows())
    ok = dict(per_graph.select("graph_id", "ok").iter_rows())
    ids = graphs["graph_id"].to_list()
    return ReportStats(
        graphs=graphs.height,
        configs=int(per_graph["n"].sum()),
        statuses=statuses,
        programs=per_program,
        num_nodes=[int(n) for n in graphs["num_nodes"].to_list()],
        configs_per_graph=[int(counts.get(g, 0)) for g in ids],
        ok_per_graph=[int(ok.get(g, 0)) for g in ids],
        collections=dict(sorted(graphs.group_by("collection").len().iter_rows()))
        if graphs.height else {},
        controls=sum(p.controls for p in per_program),
        controls_held=sum(p.controls_held for p in per_program),
        noise_floor=noise.get(None, {}).get("noise_floor"),
        pairs=sum(p.pairs for p in per_program),
        pairs_separated=sum(p.pairs_separated for p in per_program),
        labels=labels,
    )


def _noise(configs: pl.LazyFrame) -> dict[str | None, dict]:
    """Per program (and None: the whole dataset): label CI widths and A/A control figures."""
    if not {"relative_ci_low", "relative_ci_high"} <= set(configs.collect_schema().names()):
        return {}
    half = (pl.col("relative_ci_high") - pl.col("relative_ci_low")) / 2
    labelled = ((pl.col("status") == "ok") & ~pl.col("is_default").fill_null(False)
                & pl.col("relative_ci_low").is_not_null())
    control = (pl.col("status") == "control") & pl.col("relative_ci_low").is_not_null()
    exprs = [
        (half / pl.col("relative_to_default")).filter(labelled).median().alias("ci_half_width"),
        control.sum().alias("controls"),
        (control & (pl.col("relative_ci_low") <= 1.0) & (pl.col("relative_ci_high") >= 1.0))
        .sum().alias("controls_held"),
        half.filter(control).median().alias("noise_floor"),
    ]
    out: dict[str | None, dict] = {
        r.pop("program"): r
        for r in configs.group_by("program").agg(exprs).collect(engine="streaming").to_dicts()}
    if not out:
        return {}
    out[None] = configs.select(exprs).collect(engine="streaming").to_dicts()[0]
    return {k: {**v, "controls": int(v["controls"]), "controls_held": int(v["controls_held"])}
            for k, v in out.items()}


def _separation(configs: pl.LazyFrame) -> dict[str, dict[str, int]]:
    """Per program: config pairs within a graph whose labels carry CIs, and how many of those
    CIs are disjoint (the orders the labels claim). Per graph, each interval counts the
    intervals that start above its end (a sorted search: no pair list, any graph size)."""
    if not {"relative_ci_low", "relative_ci_high"} <= set(configs.collect_schema().names()):
        return {}
    labelled = configs.filter((pl.col("status") == "ok") & pl.col("relative_ci_low").is_not_null()
                              & pl.col("relative_ci_high").is_not_null())
    per_graph = labelled.group_by("program", "graph_id").agg(
        pl.len().cast(pl.Int64).alias("n"),
        (pl.len() - pl.col("relative_ci_low").sort().search_sorted(
            pl.col("relative_ci_high"), side="right")).cast(pl.Int64).sum().alias("apart"))
    per_program = per_graph.group_by("program").agg(
        (pl.col("n") * (pl.col("n") - 1) // 2).sum().alias("pairs"),
        pl.col("apart").sum().alias("pairs_separated")).collect(engine="streaming")
    return {r.pop("program"): {k: int(v) for k, v in r.items()}
            for r in per_program.to_dicts()}
