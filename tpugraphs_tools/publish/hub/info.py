"""What a published dataset says about itself: files, columns and how it was collected.

Everything the dataset card and the Croissant file state is gathered here once, from the
manifest and the two tables, so both documents tell the same story.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa

from tpugraphs_tools.format import SPLITS, Kind
from tpugraphs_tools.publish.hub.shards import Shard
from tpugraphs_tools.publish.tally import value_counts
from tpugraphs_tools.store import ConfigCounts

HF_SPLIT = {"train": "train", "valid": "validation", "test": "test"}
TABLES = ("graphs", "configs")
TIMING_COMMON = (
    "Each config is compiled with its choice applied, run once and checked against the "
    "default config's outputs, then timed in rounds that alternate the config and the default "
    "(order swapped every round), each blocked until ready. `runtime_min_ns` is the minimum "
    "over the repeats and `relative_to_default` the config's minimum over the default's "
    "minimum in the same window. Failures, no-ops and duplicates stay in the configs table "
    "with their status and message, untimed."
)
TIMING_LAYOUT = ("Layout label (paired engine): `relative_to_default` is the trimmed mean of "
                 "per-round ratios of k-run samples, each next to a default sample, averaged "
                 "over the measurement processes that timed it, with a 95% CI "
                 "(`relative_ci_low`/`relative_ci_high`) that includes the spread between "
                 "loaded copies, between processes (`process_sd`) and between timing windows; "
                 "rounds stop adaptively "
                 "(`stop_reason`). `config_runtime` = `relative_to_default` times the default's "
                 "runtime measured in the same windows. `control` rows (an A/A copy of the "
                 "default per batch) give the noise floor (docs/timing.md).")
TIMING_TILE = ("Tile label: `config_runtime` = the config's minimum and "
               "`config_runtime_normalizers` = the default's minimum in the same window.")
TIMING_IMPORTED = ("Runtimes of graphs imported from TpuGraphs (source `tpugraphs`) are its own "
                   "TPU measurements, unchanged: the published `config_runtime` values of an "
                   "official tree, or `ExecutionProfile.compute_time_ns` of the official raw "
                   "tuning protos (`tgt import --tuning-data`).")
# the label note of each collected kind, in this order
_TIMING_BY_KIND = {Kind.LAYOUT: TIMING_LAYOUT, Kind.TILE: TIMING_TILE}


@dataclass
class Provenance:
    """How the data was collected, for the card: manifest facts and table aggregates."""

    tgt_version: str | None
    format_version: int | None
    created_at: str | None
    updated_at: str | None
    jax_version: str | None
    jaxlib_version: str | None
    graph_jax_versions: dict[str, int]    # value → graphs, most common first
    python_version: str | None
    numpy_version: str | None
    host: dict[str, Any]                  # platform, machine, processor, cpu_count (no name)
    devices: list[dict[str, Any]]         # the manifest's device records
    backends: dict[str, int]              # "backend / device kind" → graphs
    sources: dict[str, int]
    collections: dict[str, int]
    hlo_stages: dict[str, int]
    xla_flags: list[str]
    strategies: dict[str, int]            # config rows per search strategy
    statuses: dict[str, int]              # config rows per status
    timing_cpus: dict[str, int]           # timed config rows per CPUs they ran on
    repeats: tuple[int, int] | None       # fewest and most timed repeats of a config
    programs: int
    graphs: int
    counts: ConfigCounts                  # configs, labels, control rows (store/counts.py)
    timing: list[str]                     # paragraphs on the timing method


@dataclass
class PublishInfo:
    """Inputs of the card and the Croissant file."""

    name: str
    license: str
    version: str
    date_published: str
    shards: list[Shard]
    schemas: dict[str, pa.Schema]
    descriptions: dict[str, dict[str, str]]
    provenance: Provenance
    split_by: str
    seed: int
    ratios: tuple[float, float, float]
    warnings: list[str] = field(default_factory=list)
    split_counts: dict[str, ConfigCounts] = field(default_factory=dict)  # configs per split

    def splits(self, table: str) -> list[str]:
        present = {s.split for s in self.shards if s.table == table}
        return [s for s in SPLITS if s in present]

    def split_rows(self, table: str, split: str) -> tuple[int, int]:
        """(rows, Arrow bytes) of one table's split."""
        picked = [s for s in self.shards if s.table == table and s.split == split]
        return sum(s.rows for s in picked), sum(s.num_bytes for s in picked)

    def download_size(self, table: str) -> int:
        return sum(s.size for s in self.shards if s.table == table)


def provenance(manifest: dict[str, Any], graphs: pl.DataFrame,
               configs: pl.DataFrame | pl.LazyFrame) -> Provenance:
    """How the data was collected, from manifest.json and the tables (no host name);
    ``configs`` may be a lazy scan: only aggregates of it are read."""
    host = manifest.get("host") or {}
    backends = Counter(f"{r['backend']} / {r.get('device_kind') or 'unknown device'}"
                       for r in graphs.select(["backend", "device_kind"]).iter_rows(named=True))
    configs = configs.lazy()
    names = configs.collect_schema().names()
    repeats: list[int] = []
    if "repeats" in names:
        lo, hi = configs.select(pl.col("repeats").min().alias("lo"),
                                pl.col("repeats").max().alias("hi")) \
            .collect(engine="streaming").row(0)
        repeats = [v for v in (lo, hi) if v is not None]
    sources = value_counts(graphs, "source")
    measured = graphs.filter(pl.col("source") != "tpugraphs") if graphs.height else graphs
    collected = set(measured["collection"].to_list()) if measured.height else set()
    timing = [TIMING_COMMON] if collected else []
    timing += [text for kind, text in _TIMING_BY_KIND.items() if kind in collected]
    if "tpugraphs" in sources:
        timing.append(TIMING_IMPORTED)
    return Provenance(
        tgt_version=manifest.get("tgt_version"),
        format_version=manifest.get("format_version"),
        created_at=manifest.get("created_at"),
        updated_at=manifest.get("updated_at"),
        jax_version=manifest.get("jax_version"),
        jaxlib_version=manifest.get("jaxlib_version"),
        graph_jax_versions=value_counts(graphs, "jax_version"),
        python_version=manifest.get("python_version"),
        numpy_version=manifest.get("numpy_version"),
        host={k: host.get(k) for k in ("platform", "machine", "processor", "cpu_count")},
        devices=manifest.get("devices") or [],
        backends=dict(backends.most_common()),
        sources=sources,
        collections=value_counts(graphs, "collection"),
        hlo_stages=value_counts(graphs, "hlo_stage"),
        xla_flags=sorted({v for v in graphs["xla_flags"].to_list() if v})
        if "xla_flags" in graphs.columns else [],
        strategies=value_counts(configs, "strategy"),
        statuses=(statuses := value_counts(configs, "status")),
        timing_cpus=value_counts(configs, "timing_cpus"),
        repeats=(min(repeats), max(repeats)) if repeats else None,
        programs=graphs["program"].n_unique() if not graphs.is_empty() else 0,
        graphs=graphs.height,
        counts=ConfigCounts.of_statuses(statuses),
        timing=timing,
    )
