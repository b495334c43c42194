"""``tgt collect --collection tile``: kernels committed one by one, rows journaled as measured.

A tile collection is the longest one tgt runs (every kernel × every config), so a kill must
not undo it. Each kernel's rows go to its own journal (``journal.py``) as they are measured,
and the kernel (graph, npz, config rows) is committed as soon as it is done. The program's
kernel list and the kernels it did not store (and why) are kept in
``<dataset>/.tgt-work/<parent graph id>.kernels.json`` until every kernel is settled. Rerunning
the same command passes over committed and settled kernels, continues a journaled one from its
rows and measures nothing twice; ``tgt collect --status`` reads the same files.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict

import polars as pl

from tpugraphs_tools.collect.failures import failure_reason
from tpugraphs_tools.collect.graphs import CollectedGraph, write_graphs
from tpugraphs_tools.collect.journal import ConfigJournal, JournalHeader
from tpugraphs_tools.collect.layout import journal_header
from tpugraphs_tools.collect.progress import ProgressTracker
from tpugraphs_tools.collect.rows import ConfigRow, config_row, graph_row_of
from tpugraphs_tools.collect.summary import CollectSummary, failure_counts
from tpugraphs_tools.collect.tile.labels import STRATEGY
from tpugraphs_tools.collect.tile.options import TileOptions
from tpugraphs_tools.collect.tile.program import kernel_ids, measure_kernels
from tpugraphs_tools.collect.tile.summary import summarize
from tpugraphs_tools.configs import default_space
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import Kind
from tpugraphs_tools.hlo import HloSource, extract_kernels, fingerprint
from tpugraphs_tools.measure import OK, platform_of, traits_of
from tpugraphs_tools.store import WORK_DIR, Dataset, make_graph_id, write_bytes_atomic

KERNELS_SUFFIX = ".kernels.json"


class KernelEntry(TypedDict):
    graph_id: str
    name: str


class ProgramRecord(TypedDict):
    """``.tgt-work/<parent>.kernels.json``: a tile program not yet settled."""

    header: JournalHeader
    program: str
    kernels: list[KernelEntry]
    skipped: dict[str, str]   # kernel name -> why it is not stored


def tile_header(measure: Any) -> JournalHeader:
    """What a resumed tile collection must share with the interrupted one."""
    return {**journal_header(measure), "strategy": STRATEGY}


def program_path(root: Path, parent_graph_id: str) -> Path:
    return root / WORK_DIR / f"{parent_graph_id}{KERNELS_SUFFIX}"


def read_program(path: Path) -> ProgramRecord:
    try:
        record: ProgramRecord = json.loads(path.read_bytes())
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: unreadable ({exc}); delete it to start the program's "
                           "kernels over (committed kernels stay)") from None
    return record


def _write_program(path: Path, record: ProgramRecord) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, json.dumps(record, sort_keys=True).encode())


class DatasetStore:
    """A :class:`~tpugraphs_tools.collect.tile.stores.KernelStore` over a dataset: journals per
    kernel, a commit per kernel, the program record for kernels not stored."""

    def __init__(self, dataset: Dataset, path: Path, record: ProgramRecord,
                 committed: set[str], keep_source_paths: bool = False) -> None:
        self.dataset = dataset
        self.keep_source_paths = keep_source_paths  # store this machine's paths (opt-in)
        self.path = path
        self.record = record
        self.committed = committed
        self._journals: dict[str, ConfigJournal] = {}
        self.continued: dict[str, int] = {}   # graph id -> rows resumed from its journal
        self.resumed_ok: dict[str, int] = {}  # ... of which ok
        self.failures: Counter[str] = Counter()  # rows measured now, by reason

    def journal(self, graph_id: str) -> ConfigJournal:
        if graph_id not in self._journals:
            self._journals[graph_id] = ConfigJournal(self.dataset.root, graph_id,
                                                     self.record["header"])
        return self._journals[graph_id]

    def stored(self, graph_id: str) -> bool:
        return graph_id in self.committed

    def skipped(self, name: str) -> str | None:
        return self.record["skipped"].get(name)

    def measured(self, graph_id: str) -> list[ConfigRow]:
        rows = list(self.journal(graph_id).load().values())
        if rows:
            self.continued[graph_id] = len(rows)
            self.resumed_ok[graph_id] = sum(1 for r in rows if r["status"] == OK)
        return rows

    def row(self, graph_id: str, row: ConfigRow) -> None:
        self.journal(graph_id).append(row)
        self.failures.update(failure_counts([row]))

    def store(self, graph: CollectedGraph, rows: list[ConfigRow]) -> None:
        graph = replace(graph, keep_source_paths=self.keep_source_paths)
        write_graphs(self.dataset, [graph], configs={graph.graph_id: rows})
        self.committed.add(graph.graph_id)
        self.journal(graph.graph_id).remove()

    def skip(self, name: str, reason: str) -> None:
        self.record["skipped"][name] = reason
        _write_program(self.path, self.record)
        for entry in self.record["kernels"]:
            if entry["name"] == name:
                self.journal(entry["graph_id"]).remove()

    def finish(self) -> None:
        """Every kernel settled: the program needs no record any more."""
        self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()


def _committed_kernels(dataset: Dataset, parent_id: str) -> pl.DataFrame:
    graphs = dataset.graphs()
    if graphs.height == 0:
        return graphs
    return graphs.filter((pl.col("collection") == Kind.TILE.value)
                         & (pl.col("parent_graph_id") == parent_id))


Sources = tuple[HloSource, Callable[[], HloSource], str, dict[str, Any]]


def collect_tiles(dataset: Dataset, item: Any, sources: Sources, backend: str | None,
                  summary: CollectSummary, tracker: ProgressTracker,
                  keep_source_paths: bool = False) -> None:
    """Every kernel of one program's optimized module, each committed when done (a rerun
    passes over a program with kernels in the dataset and no record left in .tgt-work/).
    ``sources``: the item's (un-optimized module, optimized on demand, program, args)."""
    unoptimized, optimize, program, args = sources
    parent_id = make_graph_id(program, fingerprint(unoptimized.module))
    path = program_path(dataset.root, parent_id)
    done = _committed_kernels(dataset, parent_id)
    where = f"{dataset.root}: graphs.parquet"
    if done.height and not path.exists():  # every kernel settled by an earlier run
        summary.skipped.extend(done["graph_id"].to_list())
        summary.graphs.extend(graph_row_of(r, where) for r in done.to_dicts())
        return
    opts = TileOptions(replace(item.options or TileOptions().measure, backend=backend))
    header = tile_header(opts.measure)
    tracker.stage("compiling", "the program, for its kernels")
    try:
        optimized = optimize()
    except Exception as exc:  # XLA's own errors (no kernels without the optimized module)
        summary.unmeasured[item.label] = failure_reason(
            exc, unoptimized.module, backend or "the default backend", what="program")
        return
    space = opts.space or default_space(platform_of(backend).name, seed=opts.measure.seed)
    extraction = extract_kernels(optimized.module, opts.measure.max_kernels,
                                 source=optimized.origin)
    ids = kernel_ids(extraction.kernels, program)
    if path.exists():
        record = read_program(path)
        if record["header"] != header:
            raise DatasetError(
                f"{path}: a partial tile collection with different arguments exists "
                f"({record['header']}); rerun with the same arguments, or delete the file "
                "and the program's kernel journals to start over")
    else:
        record = {"header": header, "program": program, "skipped": {},
                  "kernels": [{"graph_id": g, "name": k.name}
                              for g, k in zip(ids, extraction.kernels, strict=True)]}
        _write_program(path, record)
    store = DatasetStore(dataset, path, record, set(done["graph_id"].to_list())
                         if done.height else set(), keep_source_paths)
    per_kernel = opts.configs_per_kernel
    result = measure_kernels(
        optimized, extraction.kernels, space, opts, store, program=program,
        program_args=args, parent_graph_id=parent_id,
        on_kernel=lambda i, n, name: tracker.kernel(i, n, per_kernel, name),
        on_row=tracker.tile_row, on_resumed=tracker.tile_resumed)
    store.finish()
    tracker.stage("storing")
    earlier = [r for r in _committed_kernels(dataset, parent_id).to_dicts()
               if r["graph_id"] in set(result.resumed)]
    kernels: list[tuple[Mapping[str, Any], list[ConfigRow]]] = [
        (row, [config_row(c, where=f"{dataset.root}: configs of {row['graph_id']}")
               for c in dataset.configs_of(row["graph_id"]).to_dicts()])
        for row in earlier]
    kernels += [(g.row, rows) for g, rows in result.stored]
    summary.skipped.extend(result.resumed)
    summary.graphs.extend(graph_row_of(r, where) for r in earlier)
    summary.graphs.extend(g.row for g, _ in result.stored)
    summary.labels += sum(1 for g, rows in result.stored for r in rows
                          if r["status"] == OK) - sum(store.resumed_ok.get(g.graph_id, 0)
                                                      for g, _ in result.stored)
    tile = summarize(kernels, {**extraction.skipped, **result.skipped}, space.name,
                     traits_of(opts.measure.engine), result.restarts, result.tried)
    summary.tiles[item.label] = replace(tile, instances=result.instances,
                                        left_out=extraction.left_out)
    summary.failures.update(store.failures)
    if result.resumed or store.continued:
        summary.resumed[item.label] = (
            f"{len(result.resumed)} kernel(s) committed by an earlier run passed over, "
            f"{len(store.continued)} continued from {sum(store.continued.values())} "
            f"journaled row(s), {len(ids) - len(result.resumed)} measured now")
