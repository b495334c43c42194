"""``tgt import --tuning-data``: the official raw tuning protos → a tgt dataset.

Files are scanned first (a truncated or foreign file is refused before any work), then decoded
one at a time; each module becomes one graph (``prepare.py`` says how its runs become config
rows). The dataset appears at ``out`` only once every file is in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tpugraphs_tools.errors import TuningDataError
from tpugraphs_tools.publish.staging import MAX_PART_ROWS, check_separate, staged_dir
from tpugraphs_tools.publish.tuning.prepare import Module, Prepared, prepare
from tpugraphs_tools.publish.tuning.proto import (
    OFFICIAL,
    decode_tuning_file,
    read_tuning_bytes,
    scan_tuning_file,
)
from tpugraphs_tools.store import ConfigCounts, Dataset


@dataclass
class FileSummary:
    """What one file held and what became of it."""

    message: str          # official message type, e.g. tpu_graphs.TuningData
    modules: int
    graphs: int = 0
    timed: int = 0
    failed: int = 0


@dataclass
class TuningImportResult:
    out: Path
    graphs: int = 0
    configs: int = 0
    timed: int = 0
    failed: int = 0
    files: dict[str, FileSummary] = field(default_factory=dict)
    config_nodes: dict[str, tuple[int, int]] = field(default_factory=dict)  # matched, total
    warnings: list[str] = field(default_factory=list)
    counts: ConfigCounts = field(default_factory=ConfigCounts)  # store/counts.py

    def add(self, prep: Prepared) -> None:
        failed = len(prep.configs) - prep.timed
        summary = self.files[str(prep.module.file.path)]
        summary.graphs, summary.timed, summary.failed = (
            summary.graphs + 1, summary.timed + prep.timed, summary.failed + failed)
        self.warnings.extend(prep.warnings)
        self.graphs += 1
        self.configs += len(prep.configs)
        self.counts += ConfigCounts.of_rows(r["status"] for r in prep.configs)
        self.timed += prep.timed
        self.failed += failed
        if prep.matched is not None:
            self.config_nodes[prep.row["graph_id"]] = prep.matched


def decode_modules(path: Path) -> Iterator[Module]:
    """The modules of one file (decoded whole; files are taken one at a time)."""
    data = read_tuning_bytes(path)
    tuning = decode_tuning_file(path, data)
    digest = hashlib.sha256(data).hexdigest()
    for i, message in enumerate(tuning.modules):
        yield Module(tuning, i, message, digest)


@contextmanager
def _threads(jobs: int) -> Iterator[ThreadPoolExecutor]:
    """A thread pool whose queued modules are dropped on an error (not featurized first)."""
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def expand_files(files: Iterable[str | Path]) -> list[Path]:
    """The files to read: each file as given, each folder's ``*.pb`` (recursively, sorted),
    so a raw dump of thousands of files needs no shell glob."""
    paths: list[Path] = []
    for given in map(Path, files):
        if given.is_dir():
            found = sorted(p for p in given.rglob("*.pb") if p.is_file())
            if not found:
                raise TuningDataError(f"{given}: folder holds no *.pb tuning files")
            paths.extend(found)
        elif given.is_file():
            paths.append(given)
        else:
            raise TuningDataError(f"{given}: no such file")
    if not paths:
        raise TuningDataError("no tuning files given")
    return paths


def count_modules(path: Path) -> tuple[str, int]:
    """(message type, modules) of a file from its top-level fields: refuses a truncated or
    foreign file before anything is featurized or written."""
    name, fields = scan_tuning_file(path, read_tuning_bytes(path))
    return name, (1 if name == "ModuleTuningData" else len(fields))


def import_tuning_data(files: Iterable[str | Path], out: str | Path, *, backend: str = "tpu",
                       overwrite: bool = False, jobs: int = 1, batch_bytes: int = 256 << 20,
                       progress: Callable[[int, int], None] = lambda _i, _n: None
                       ) -> TuningImportResult:
    """Read official tuning protos into a new dataset at ``out`` (renamed into place at the end).

    Every file's wire format is scanned first (a truncated or foreign file is refused before any
    work); then files are decoded one at a time, so memory holds one file, and committed one
    at a time. Modules are read on ``jobs`` threads (each parse runs in an XLA child process);
    the rows do not depend on it. Any error leaves nothing at ``out``.
    """
    paths = expand_files(files)
    for path in paths:
        check_separate(path, out)
    result = TuningImportResult(Path(out))
    total = 0
    for path in paths:
        name, count = count_modules(path)
        result.files[str(path)] = FileSummary(f"{OFFICIAL}.{name}", count)
        total += count
    seen: dict[str, str] = {}
    done = 0
    with staged_dir(out, overwrite) as stage, _threads(jobs) as pool:
        dataset = Dataset.open(stage, create=True)
        scratch = stage / ".tgt-import"
        scratch.mkdir()
        tx, pending = dataset.transaction(), 0
        for path in paths:
            for prep in pool.map(lambda m: prepare(m, backend, scratch), decode_modules(path)):
                done += 1
                progress(done, total)
                if isinstance(prep, str):
                    result.warnings.append(prep)
                    continue
                graph_id = prep.row["graph_id"]
                if graph_id in seen:
                    result.warnings.append(f"{prep.module.where}: same module as "
                                           f"{seen[graph_id]} (graph {graph_id}); skipped")
                    continue
                seen[graph_id] = prep.module.where
                tx.put_graph(prep.row, prep.arrays, hlo=prep.hlo, hlo_suffix=".hlo.pb")
                tx.put_configs(graph_id, prep.configs)
                result.add(prep)
                pending += sum(a.nbytes for a in prep.arrays.values())
                if pending >= batch_bytes or tx.pending_rows >= MAX_PART_ROWS:
                    tx.commit()
                    pending = 0
        tx.commit()
        scratch.rmdir()
        if not result.graphs:
            raise TuningDataError("no module of " + ", ".join(str(p) for p in paths)
                                  + " could be imported: " + "; ".join(result.warnings))
    return result
