"""What a collection reports: typed summaries of one layout graph, one tile program, one run.

``to_json()`` gives the flat, JSON-ready mapping the CLI prints and benchmarks dump (the keys
they have always used).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tpugraphs_tools.collect.rows import GraphRow
from tpugraphs_tools.measure import Status, StopReason, reason_of
from tpugraphs_tools.store import ConfigCounts, total_counts

FAILED = frozenset({Status.COMPILE_ERROR, Status.RUNTIME_ERROR, Status.TIMEOUT, Status.CRASH,
                    Status.WRONG_RESULT, Status.DEFAULT_FAILED})


def failure_counts(rows: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """Failed config rows by reason: status and the first line of the message that says why."""
    return Counter(reason_of(r["status"], r.get("error_message")) for r in rows
                   if r["status"] in FAILED)


@dataclass(frozen=True)
class LabelQuality:
    """How sure a graph's layout labels are (collect/labels.py)."""

    ci_half_width_median: float | None  # relative half-width of the ok labels' CIs
    stop_reasons: dict[StopReason | None, int]  # why the ok configs stopped being timed
    rounds_median: float | None
    window_sd: float | None              # between-window SD (log scale), from repeat rows
    controls: int                        # A/A control rows (one per timed batch)
    controls_holding_1: int              # ... whose CI holds 1.0
    noise_floor: float | None            # median A/A CI half-width: the smallest resolvable
    control_range: tuple[float, float] | None  # (lowest, highest) A/A ratio
    pairs: int = 0                       # pairs of the graph's labelled configs (default too)
    pairs_separated: int = 0             # ... whose 95% CIs are disjoint: orders the labels claim
    process_sd: float | None = None      # between-process SD (log scale) in the ok labels' CIs


@dataclass(frozen=True)
class LayoutSummary:
    """One layout graph's configs: counts by status, extremes, label quality."""

    counts: ConfigCounts         # configs, labels, control rows (store/counts.py)
    status: dict[Status, int]    # every row's status, control/repeat included
    worker_restarts: int
    best_speedup: float | None   # 1 / the smallest ok ratio
    worst_slowdown: float | None  # the largest ok ratio
    labels: LabelQuality

    @property
    def configs(self) -> int:
        """Config rows (control/repeat rows not counted)."""
        return self.counts.configs

    def to_json(self) -> dict[str, Any]:
        """Flat mapping: the fields, with ``labels`` spread in, the counts as ``configs``,
        ``labels`` and ``control_rows``."""
        out = {k: v for k, v in asdict(self).items() if k not in ("labels", "counts")}
        return {"configs": self.counts.configs, "labels": self.counts.labels,
                "control_rows": self.counts.control_rows, **out, **asdict(self.labels)}


@dataclass(frozen=True)
class TileEffect:
    """One kernel config's effect against the default, in units of the noisier side's CV."""

    graph_id: str
    parent_instruction: str | None  # GraphRow's column (set on every tile graph)
    # The kernel config's settings (configs.parquet ``config``, parsed): knob -> value, the
    # knobs depend on the config space (configs/tile.py), so the mapping stays open.
    config: dict[str, Any]
    relative_to_default: float
    effect_cv: float | None
    runtime_cv: float | None
    default_cv: float | None


@dataclass(frozen=True)
class TileSummary:
    """One program's tile collection: kernels stored/skipped, configs tried, largest effect."""

    config_space: str
    kernels: int
    kernels_skipped: int
    skipped: dict[str, str]      # parent instruction -> why it was not stored
    configs: int                 # configs tried, stored kernels or not (infeasible not)
    configs_stored: int
    status: dict[Status, int]    # of every config row, stored kernels or not
    worker_restarts: int
    effects_over_3cv: int
    largest_effect: TileEffect | None
    best_speedup: float | None
    worst_slowdown: float | None
    instances: dict[str, list[str]] = field(default_factory=dict)  # graph id -> instructions
    # The engine's labels are ratios with CIs (Traits.ratio_labels: paired), so the summary
    # reads CIs, not CVs; not in to_json (the keys below say it).
    ratio_labels: bool = False
    # Ratio labels only (None with --engine fixed): configs whose 95% CI excludes the
    # default's 1.0, and how sure the labels are (pairs counted within each kernel).
    apart_from_default: int | None = None
    labels: LabelQuality | None = None
    # ok configs whose tile read back from the optimized kernel differs from the request in
    # some field (realized ``matches_request`` false): their features encode what ran.
    not_as_requested: int = 0
    # Tiles over the device's limits (registers, shared memory): never compiled, apart from
    # compile_error (configs/tile_gpu_limits.py), stored kernels or not.
    infeasible: int = 0
    # The stored kernels' rows (store/counts.py): what every later command counts.
    counts: ConfigCounts = field(default_factory=ConfigCounts)
    # Distinct kernels --max-kernels left out (the cheapest), never measured nor "skipped".
    left_out: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Flat mapping: the fields, with ``labels`` spread in (the paired-only keys and an
        empty ``left_out`` are left out, so a fixed-engine summary reads as before), the
        stored counts as ``labels`` and ``control_rows``."""
        out = {k: v for k, v in asdict(self).items()
               if k not in ("labels", "apart_from_default", "counts", "left_out",
                            "ratio_labels")}
        out.update(labels=self.counts.labels, control_rows=self.counts.control_rows)
        if self.apart_from_default is not None:
            out["apart_from_default"] = self.apart_from_default
        if self.left_out:
            out["left_out"] = self.left_out
        return {**out, **(asdict(self.labels) if self.labels is not None else {})}


@dataclass
class CollectSummary:
    """What one ``collect`` run did (the CLI prints it; exit status 3 when ``partial``)."""

    dataset: str
    graphs: list[GraphRow] = field(default_factory=list)
    configs: dict[str, LayoutSummary] = field(default_factory=dict)  # graph id -> summary
    skipped: list[str] = field(default_factory=list)                 # already complete
    tiles: dict[str, TileSummary] = field(default_factory=dict)      # item -> tile summary
    # graph id (or item) -> why none of its configs could be measured (collect/failures.py)
    unmeasured: dict[str, str] = field(default_factory=dict)
    # item or graph id -> one line saying what this run took over from an interrupted one
    resumed: dict[str, str] = field(default_factory=dict)
    # user program (as given) -> why it is stored under another name (program_names.py)
    names: dict[str, str] = field(default_factory=dict)
    # "status: first line that says why" -> failed config rows committed in this run
    failures: Counter[str] = field(default_factory=Counter)
    labels: int = 0              # ok labels measured in this run (resumed rows not counted)
    wall_seconds: float = 0.0    # the run's wall time

    @property
    def labels_per_minute(self) -> float | None:
        """This run's ok labels per wall minute (None when the run took no time)."""
        return 60 * self.labels / self.wall_seconds if self.wall_seconds > 0 else None

    @property
    def counts(self) -> ConfigCounts:
        """Configs, labels and control rows of the graphs this run collected (store/counts.py:
        the counts every later command shows), layout and tile together."""
        return total_counts([*(s.counts for s in self.configs.values()),
                             *(t.counts for t in self.tiles.values())])

    @property
    def partial(self) -> bool:
        """Something was stored without measurements: the CLI exits with EXIT_PARTIAL."""
        return bool(self.unmeasured)
