"""``tgt import --tuning-data``: the official raw tuning protos → a tgt dataset.

Each ``ModuleTuningData`` becomes one graph, featurized by tgt from its embedded
``xla.HloModuleProto`` exactly as ``tgt collect --hlo`` would, and each of its runs one config
row. What a run means follows the official encoder (``tuning_data_iterator.cc``):

* the runtime is ``ExecutionProfile.compute_time_ns``; a run is timed when ``error`` is false and
  that runtime is positive (tile: above 1 ns, as the official tile reader);
* the normalizer is the runtime of the first timed run marked ``is_default``;
* a layout run's ``node_config_feat`` row holds, per node in ``config_index_to_node`` order,
  up to three tensors' ``dims`` (6 slots each, -1 padded); a tile run's ``config_feat`` is
  the 24 tile features of its kernel/output/input bounds (six values, sum, product; 0 if empty).

Runs that are not timed are kept as ``runtime_error`` rows (the file records no cause).
The dataset appears at ``out`` only once every file is in.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tpugraphs_tools.configs import SLOTS, bounds_features
from tpugraphs_tools.errors import HloError, TuningDataError
from tpugraphs_tools.features import Graph, featurize
from tpugraphs_tools.format import (
    LAYOUT,
    LAYOUT_CONFIG_WIDTH,
    TILE,
    TILE_CONFIG_WIDTH,
    TPUGRAPHS_SOURCE,
    Collection,
)
from tpugraphs_tools.hlo import HloSource, fingerprint, from_file
from tpugraphs_tools.publish.staging import MAX_PART_ROWS, check_separate, staged_dir
from tpugraphs_tools.publish.tuning.proto import (
    OFFICIAL,
    TuningFile,
    decode_tuning_file,
    read_tuning_bytes,
    scan_tuning_file,
)
from tpugraphs_tools.store import ConfigCounts, Dataset, make_graph_id

LAYOUT_MAX_TENSORS = 3    # tensors per configurable node (output, input, kernel)
LAYOUT_MAX_DIMS = 6       # dims kept per tensor
CONFIG_SPACE = {"layout": "layout", "tile": "tpu-tile-sizes"}  # graphs.config_space
STRATEGY = "default"      # the search folder export writes them to (layout/xla/default/...)
ERROR_MESSAGE = "run marked error in the tuning data (the file records no cause)"
UNTIMED_MESSAGE = "run has no positive compute_time_ns in its ExecutionProfile"


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


@dataclass
class Module:
    """One ModuleTuningData with where it came from (for messages and provenance)."""

    file: TuningFile
    index: int
    message: Any
    sha256: str

    @property
    def where(self) -> str:
        if self.file.message == "ModuleTuningData":
            return f"{self.file.path}"
        return f"{self.file.path}: TuningData.modules[{self.index}]"

    @property
    def source_path(self) -> str:
        name = self.file.path.name
        return name if self.file.message == "ModuleTuningData" else f"{name}#modules[{self.index}]"


def layout_features(run: Any, num_nodes: int, where: str) -> np.ndarray:
    """[nc, 18] float32 of one layout run: tensor t's dims at 6t.., -1 where absent."""
    nodes = run.module_config.layout_config.nodes
    if len(nodes) != num_nodes:
        raise TuningDataError(f"{where}: layout_config has {len(nodes)} nodes, "
                              f"config_index_to_node {num_nodes}")
    feat = np.full((num_nodes, LAYOUT_CONFIG_WIDTH), -1.0, dtype=np.float32)
    for j, node in enumerate(nodes):
        if len(node.tensors) > LAYOUT_MAX_TENSORS:
            raise TuningDataError(f"{where}: layout node {j} has {len(node.tensors)} tensors "
                                  f"(at most {LAYOUT_MAX_TENSORS})")
        for t, tensor in enumerate(node.tensors):
            dims = list(tensor.dims)[:LAYOUT_MAX_DIMS]
            feat[j, t * LAYOUT_MAX_DIMS:t * LAYOUT_MAX_DIMS + len(dims)] = dims
    return feat


def kind_of(module: Module) -> Collection:
    """Layout if the runs hold module (layout) configs, tile if op (tile size) configs."""
    kinds = {run.WhichOneof("config") for run in module.message.runs}
    if kinds == {"module_config"}:
        if not module.message.config_index_to_node:
            raise TuningDataError(f"{module.where}: layout runs but no config_index_to_node")
        return LAYOUT
    if kinds == {"op_config"}:
        return TILE
    named = ", ".join(sorted(str(k) for k in kinds))
    raise TuningDataError(f"{module.where}: runs hold {named} configs; expected all "
                          "module_config (layout) or all op_config (tile)")


def read_module(module: Module, scratch: Path) -> tuple[HloSource, Graph]:
    """The embedded HloModuleProto through tgt's reader for foreign protos (XLA's parser in a
    child process, like ``tgt collect --hlo``), then tgt's featurizer."""
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        path = Path(tmp) / "module.hlo.pb"
        path.write_bytes(module.message.module)
        try:
            src = from_file(path)
        except HloError as exc:  # name the module, not the temp file it went through
            line = getattr(exc, "line", None)
            why = getattr(exc, "message", str(exc)) + (f" (line {line})" if line else "")
            raise TuningDataError(f"{module.where}: module (xla.HloModuleProto) cannot be "
                                  f"read: {why}") from None
    return src, featurize(src.module)


def _timed(run: Any, kind: Collection) -> bool:
    floor = 1 if kind is TILE else 0
    return not run.error and run.HasField("profile") and run.profile.compute_time_ns > floor


def _config_json(run: Any, kind: Collection, names: list[str]) -> str:
    if kind is TILE:
        tile = run.op_config.tile_size_config
        return json.dumps({k: list(getattr(tile, k)) for k in
                           ("kernel_bounds", "output_bounds", "input_bounds",
                            "iteration_bounds")}, sort_keys=True)
    out: dict[str, dict[str, list[int]]] = {}
    for name, node in zip(names, run.module_config.layout_config.nodes, strict=True):
        slots = {SLOTS[t]: list(tensor.dims) for t, tensor in enumerate(node.tensors)
                 if tensor.dims}
        if slots:
            out[name] = slots
    return json.dumps(out, sort_keys=True)


@dataclass
class Prepared:
    """One module turned into a graph row, its arrays, its config rows and its raw HLO."""

    module: Module
    row: dict[str, Any]
    arrays: dict[str, np.ndarray]
    configs: list[dict[str, Any]]
    hlo: bytes
    timed: int
    matched: tuple[int, int] | None
    warnings: list[str]


def prepare(module: Module, backend: str, scratch: Path) -> Prepared | str:
    """Graph, arrays and rows of one module, or why it is left out (a warning)."""
    msg = module.message
    if not msg.module or not msg.runs:
        missing = "runs" if msg.module else "module (xla.HloModuleProto)"
        return f"{module.where}: no {missing}; not imported"
    kind = kind_of(module)
    if kind is TILE:
        bare = [i for i, run in enumerate(msg.runs)
                if not run.op_config.HasField("tile_size_config")]
        if bare:
            return (f"{module.where}: runs {_short(bare)} have no tile_size_config; not "
                    "imported (the official encoder skips such a kernel)")
    src, graph = read_module(module, scratch)
    warnings: list[str] = []
    matched = None
    if kind is LAYOUT:
        ours, theirs = graph.node_config_ids.tolist(), [int(i) for i in msg.config_index_to_node]
        matched = (sum(a == b for a, b in zip(ours, theirs, strict=False)), len(theirs))
        if ours != theirs:
            raise TuningDataError(
                f"{module.where}: config_index_to_node {_short(theirs)} differs from tgt's "
                f"configurable nodes {_short(ours)} ({matched[0]} of {matched[1]} agree); "
                "the layout configs would land on the wrong nodes, so it is not imported")
    names = [graph.node_names[i] for i in graph.node_config_ids.tolist()]
    timed = [i for i, run in enumerate(msg.runs) if _timed(run, kind)]
    default = next((i for i in timed if msg.runs[i].is_default), None)
    normalizer = None if default is None else int(msg.runs[default].profile.compute_time_ns)
    if normalizer is None:
        if kind is TILE:
            return (f"{module.where}: no timed run marked is_default, so no normalizer "
                    "(config_runtime_normalizers); not imported")
        warnings.append(f"{module.where}: no timed run marked is_default; its labels have no "
                        "normalizer (the official encoder drops such a module)")
    runtime = np.asarray([msg.runs[i].profile.compute_time_ns for i in timed], dtype=np.int64)
    arrays = graph.arrays()
    if kind is LAYOUT:
        nc = len(names)
        feats = [layout_features(run, nc, f"{module.where} runs[{i}]")  # checks every run
                 for i, run in enumerate(msg.runs)]
        arrays["node_config_feat"] = (np.stack([feats[i] for i in timed]) if timed else
                                      np.zeros((0, nc, LAYOUT_CONFIG_WIDTH), np.float32))
    else:
        arrays.pop("node_config_ids")
        bounds = [msg.runs[i].op_config.tile_size_config for i in timed]
        arrays["config_feat"] = (np.stack([bounds_features(b.kernel_bounds, b.output_bounds,
                                                         b.input_bounds) for b in bounds])
                                 if bounds else np.zeros((0, TILE_CONFIG_WIDTH), np.float32))
        arrays["config_runtime_normalizers"] = np.full(len(timed), normalizer or 0, np.int64)
    arrays["config_runtime"] = runtime
    fp = fingerprint(src.module)
    program = src.module.name
    row = {
        "graph_id": make_graph_id(program, fp), "collection": kind.kind.value,
        "program": program,
        "program_args": json.dumps({"tuning_file": module.file.path.name,
                                    "tuning_file_sha256": module.sha256,
                                    "message": f"{OFFICIAL}.{module.file.message}",
                                    "module_index": module.index,
                                    "module_fingerprint": str(int(msg.fingerprint))},
                                   sort_keys=True),
        "source": TPUGRAPHS_SOURCE, "source_path": module.source_path,
        "hlo_stage": kind.hlo_stage, "fingerprint": fp, "backend": backend,
        "device_kind": None, "config_space": CONFIG_SPACE[kind.kind.value],
        "num_nodes": graph.num_nodes, "num_edges": int(graph.edge_index.shape[0]),
        "num_configurable": len(names) if kind is LAYOUT else 0,
        "num_configs": len(timed),
    }
    npz_row = {i: k for k, i in enumerate(timed)}
    configs = []
    for i, run in enumerate(msg.runs):
        value = int(run.profile.compute_time_ns) if i in npz_row else None
        ok = value is not None
        configs.append({
            "config_index": i, "strategy": STRATEGY, "seed": None,
            "is_default": bool(run.is_default), "status": "ok" if ok else "runtime_error",
            "config": _config_json(run, kind, names), "npz_row": npz_row.get(i),
            "runtime_min_ns": value, "default_runtime_ns": normalizer,
            "relative_to_default": (value / normalizer if value is not None and normalizer
                                    else None),
            "error_message": None if ok else (ERROR_MESSAGE if run.error else UNTIMED_MESSAGE),
        })
    return Prepared(module, row, arrays, configs, bytes(msg.module), len(timed), matched,
                    warnings)


def _short(ids: list[int], limit: int = 8) -> str:
    body = ", ".join(str(i) for i in ids[:limit])
    return f"[{body}{', ...' if len(ids) > limit else ''}] ({len(ids)})"


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
