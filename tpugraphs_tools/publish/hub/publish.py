"""``tgt publish``: a tgt dataset → Parquet shards + dataset card + Croissant + checksums.

Graphs are read one at a time, each with its own config rows (read from the table parts that
hold it), and streamed into size-capped shards, so publishing needs about one graph's arrays
and config rows in memory, not the dataset's.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import DEFAULT_RATIOS, SPLITS, assign_splits
from tpugraphs_tools.hlo import portable_graph_row
from tpugraphs_tools.publish.hub.card import card_text
from tpugraphs_tools.publish.hub.croissant import croissant
from tpugraphs_tools.publish.hub.info import TABLES, PublishInfo, provenance
from tpugraphs_tools.publish.hub.shards import DEFAULT_SHARD_BYTES, Shard, ShardWriter
from tpugraphs_tools.publish.hub.tables import (
    config_tables,
    configs_schema,
    descriptions,
    graph_table,
    graphs_schema,
)
from tpugraphs_tools.publish.staging import check_separate, staged_dir, write_checksums
from tpugraphs_tools.publish.tree.official import conform
from tpugraphs_tools.store import ConfigCounts, Dataset

CARD, CROISSANT, CHECKSUMS = "README.md", "croissant.json", "SHA256SUMS"
# Words datasets' file-name split inference looks for (a name holding one confuses it).
SPLIT_WORDS = {"train", "training", "valid", "validation", "val", "dev", "test", "testing",
               "eval", "evaluation"}
_NAME = re.compile(r"[^a-z0-9]+")
UNKNOWN_LICENSE = "unknown"  # the Hub's own word for a dataset with no license


@dataclass
class PublishResult:
    out: Path
    name: str
    shards: list[Shard]
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, ConfigCounts] = field(default_factory=dict)  # split -> its config rows

    def rows(self, table: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.shards:
            if s.table == table:
                out[s.split] = out.get(s.split, 0) + s.rows
        return out


def dataset_name(name: str | None, data: Path) -> str:
    """Lower-case ``a-z0-9-`` name (shard file prefix, Croissant and card title)."""
    slug = _NAME.sub("-", (name or data.resolve().name).lower()).strip("-")
    if not slug:
        raise DatasetError(f"cannot make a dataset name from {name or data!s}; pass --name")
    return slug


def _unreferenced(rows: list[dict[str, Any]], count: int) -> int:
    used = {r["npz_row"] for r in rows if r.get("npz_row") is not None}
    return count - len(used & set(range(count)))


def _license_warnings(license: str | None) -> list[str]:
    if license:
        return []
    return [f"no --license given: README.md and croissant.json say {UNKNOWN_LICENSE!r}, so "
            "nobody can tell whether they may reuse the data; set one, e.g. --license cc-by-4.0"]


def _name_warnings(name: str) -> list[str]:
    words = sorted(SPLIT_WORDS & set(name.split("-")))
    if not words:
        return []
    return [f"name {name!r} contains the split word(s) {', '.join(words)}: loading the shards "
            "without the card (load_dataset('parquet', data_dir=...)) may guess splits wrong; "
            "pass another --name"]


def portable_graphs(graphs: pl.DataFrame) -> pl.DataFrame:
    """The graphs table with the collecting machine's directories cut from its path columns:
    a dataset collected with ``--keep-source-paths`` is published without them."""
    if graphs.is_empty():
        return graphs
    return pl.DataFrame([portable_graph_row(r) for r in graphs.iter_rows(named=True)],
                        schema=graphs.schema)


def write_tables(dataset: Dataset, stage: Path, name: str, splits: dict[str, str],
                 max_shard_bytes: int, progress: Callable[[int, int], None]
                 ) -> tuple[list[Shard], list[str], dict[str, ConfigCounts]]:
    """Stream every graph and its configs into the shards of its split; the config counts
    per split come back with the shards."""
    graphs = portable_graphs(dataset.graphs())
    warnings: list[str] = []
    shards: list[Shard] = []
    counts: dict[str, ConfigCounts] = {}
    done, total = 0, graphs.height
    schemas = {"graphs": graphs_schema(), "configs": configs_schema()}
    for split in SPLITS:
        rows = graphs.filter(pl.col("graph_id").is_in(
            [g for g, s in splits.items() if s == split])).sort("graph_id")
        if rows.is_empty():
            continue
        writers = {t: ShardWriter(stage, t, name, split, schemas[t], max_shard_bytes)
                   for t in TABLES}
        for row in rows.iter_rows(named=True):
            graph_id = row["graph_id"]
            raw = dataset.load_arrays(graph_id)
            where = f"{dataset.npz_path(graph_id)} (graph {graph_id})"
            arrays = {**raw, **conform(raw, row["collection"], where)}
            writers["graphs"].write(graph_table(row, arrays, split))
            config_rows = dataset.configs_of(graph_id).sort("config_index").to_dicts()
            counts[split] = counts.get(split, ConfigCounts()) + ConfigCounts.of_rows(
                r["status"] for r in config_rows)
            lost = _unreferenced(config_rows, int(arrays["config_runtime"].shape[0]))
            if lost:
                warnings.append(f"graph {graph_id}: {lost} npz config rows have no ok row in "
                                "configs.parquet; their arrays are not published")
            for table in config_tables(config_rows, arrays, row, split):
                writers["configs"].write(table)
            done += 1
            progress(done, total)
        for table in TABLES:
            shards.extend(writers[table].close())
    return shards, warnings, counts


def publish_dataset(data: str | Path, out: str | Path, *, name: str | None = None,
                    license: str | None = None, version: str = "1.0.0",
                    split_by: str = "program", seed: int = 0,
                    ratios: tuple[float, float, float] = DEFAULT_RATIOS,
                    max_shard_bytes: int = DEFAULT_SHARD_BYTES, overwrite: bool = False,
                    progress: Callable[[int, int], None] = lambda _i, _n: None
                    ) -> PublishResult:
    """Write the shareable dataset of ``data`` to ``out`` (replaced as a whole at the end).

    ``license`` None: the card and Croissant say ``unknown`` and the result warns (a dataset
    without a license cannot be reused safely; the Hub asks for one too)."""
    data = Path(data)
    check_separate(data, out)
    dataset = Dataset.open(data)
    graphs = portable_graphs(dataset.graphs())  # never this machine's paths (hlo/paths.py)
    if graphs.is_empty():
        raise DatasetError(f"{data}: graphs.parquet has no graphs to publish")
    name = dataset_name(name, data)
    plan = assign_splits(graphs, by=split_by, seed=seed, ratios=ratios)
    with staged_dir(out, overwrite) as stage:
        shards, warnings, counts = write_tables(dataset, stage, name, plan.splits,
                                                max_shard_bytes, progress)
        info = PublishInfo(
            name=name, license=license or UNKNOWN_LICENSE, version=version,
            date_published=_dt.date.today().isoformat(), shards=shards,
            schemas={"graphs": graphs_schema(), "configs": configs_schema()},
            descriptions={t: descriptions(t) for t in TABLES},
            provenance=provenance(dataset.manifest, graphs, dataset.scan("configs")),
            split_by=split_by, seed=seed, ratios=ratios,
            warnings=(_license_warnings(license) + plan.conflicts + warnings
                      + _name_warnings(name)), split_counts=counts)
        (stage / CARD).write_text(card_text(info))
        total = info.provenance.counts
        summary = (f"TpuGraphs-style dataset made with tgt: {graphs.height} XLA HLO graphs, "
                   f"{total.configs} compiler configurations, {total.labels} of them with "
                   "measured runtimes.")
        (stage / CROISSANT).write_text(json.dumps(croissant(info, summary), indent=2) + "\n")
        write_checksums(stage, CHECKSUMS)
    return PublishResult(Path(out), name, shards, info.warnings, counts)
