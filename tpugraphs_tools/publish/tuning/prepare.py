"""What one module of the official tuning data becomes: a graph, its arrays and config rows.

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
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
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
from tpugraphs_tools.publish.tuning.proto import OFFICIAL, TuningFile
from tpugraphs_tools.store import make_graph_id

LAYOUT_MAX_TENSORS = 3    # tensors per configurable node (output, input, kernel)
LAYOUT_MAX_DIMS = 6       # dims kept per tensor
CONFIG_SPACE = {"layout": "layout", "tile": "tpu-tile-sizes"}  # graphs.config_space
STRATEGY = "default"      # the search folder export writes them to (layout/xla/default/...)
ERROR_MESSAGE = "run marked error in the tuning data (the file records no cause)"
UNTIMED_MESSAGE = "run has no positive compute_time_ns in its ExecutionProfile"


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
    refusal = _bare_tile_runs(module) if kind is TILE else None
    if refusal is not None:
        return refusal
    src, graph = read_module(module, scratch)
    matched = _check_config_nodes(module, graph) if kind is LAYOUT else None
    names = [graph.node_names[i] for i in graph.node_config_ids.tolist()]
    runs = TimedRuns.of(msg, kind)
    warnings: list[str] = []
    if runs.normalizer is None:
        if kind is TILE:
            return (f"{module.where}: no timed run marked is_default, so no normalizer "
                    "(config_runtime_normalizers); not imported")
        warnings.append(f"{module.where}: no timed run marked is_default; its labels have no "
                        "normalizer (the official encoder drops such a module)")
    arrays = _config_arrays(module, graph, runs, len(names))
    row = _graph_row(module, src, graph, runs, backend,
                     num_configurable=len(names) if kind is LAYOUT else 0)
    return Prepared(module, row, arrays, _config_rows(msg, runs, names), bytes(msg.module),
                    len(runs.timed), matched, warnings)


def _bare_tile_runs(module: Module) -> str | None:
    """Why a tile module is left out before its HLO is read: runs without tile sizes."""
    bare = [i for i, run in enumerate(module.message.runs)
            if not run.op_config.HasField("tile_size_config")]
    if not bare:
        return None
    return (f"{module.where}: runs {_short(bare)} have no tile_size_config; not "
            "imported (the official encoder skips such a kernel)")


def _check_config_nodes(module: Module, graph: Graph) -> tuple[int, int]:
    """(agreeing, listed) configurable nodes; refuses a module whose layout configs would land
    on other nodes than tgt's featurizer marks configurable."""
    theirs = [int(i) for i in module.message.config_index_to_node]
    ours = graph.node_config_ids.tolist()
    matched = (sum(a == b for a, b in zip(ours, theirs, strict=False)), len(theirs))
    if ours != theirs:
        raise TuningDataError(
            f"{module.where}: config_index_to_node {_short(theirs)} differs from tgt's "
            f"configurable nodes {_short(ours)} ({matched[0]} of {matched[1]} agree); "
            "the layout configs would land on the wrong nodes, so it is not imported")
    return matched


@dataclass(frozen=True)
class TimedRuns:
    """Which runs of one module are timed (their order is the npz rows') and the normalizer."""

    kind: Collection
    timed: list[int]
    normalizer: int | None  # runtime of the first timed run marked is_default

    @classmethod
    def of(cls, msg: Any, kind: Collection) -> TimedRuns:
        timed = [i for i, run in enumerate(msg.runs) if _timed(run, kind)]
        default = next((i for i in timed if msg.runs[i].is_default), None)
        normalizer = None if default is None else int(msg.runs[default].profile.compute_time_ns)
        return cls(kind, timed, normalizer)


def _config_arrays(module: Module, graph: Graph, runs: TimedRuns,
                   num_configurable: int) -> dict[str, np.ndarray]:
    """The graph's npz arrays, in the official key order of its collection."""
    msg, timed = module.message, runs.timed
    runtime = np.asarray([msg.runs[i].profile.compute_time_ns for i in timed], dtype=np.int64)
    arrays = graph.arrays()
    if runs.kind is LAYOUT:
        nc = num_configurable
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
        arrays["config_runtime_normalizers"] = np.full(len(timed), runs.normalizer or 0,
                                                       np.int64)
    arrays["config_runtime"] = runtime
    return arrays


def _graph_row(module: Module, src: HloSource, graph: Graph, runs: TimedRuns, backend: str,
               num_configurable: int) -> dict[str, Any]:
    """The graphs-table row, naming the tuning file and module it came from."""
    kind, fp, program = runs.kind, fingerprint(src.module), src.module.name
    return {
        "graph_id": make_graph_id(program, fp), "collection": kind.kind.value,
        "program": program,
        "program_args": json.dumps({"tuning_file": module.file.path.name,
                                    "tuning_file_sha256": module.sha256,
                                    "message": f"{OFFICIAL}.{module.file.message}",
                                    "module_index": module.index,
                                    "module_fingerprint": str(int(module.message.fingerprint))},
                                   sort_keys=True),
        "source": TPUGRAPHS_SOURCE, "source_path": module.source_path,
        "hlo_stage": kind.hlo_stage, "fingerprint": fp, "backend": backend,
        "device_kind": None, "config_space": CONFIG_SPACE[kind.kind.value],
        "num_nodes": graph.num_nodes, "num_edges": int(graph.edge_index.shape[0]),
        "num_configurable": num_configurable,
        "num_configs": len(runs.timed),
    }


def _config_rows(msg: Any, runs: TimedRuns, names: list[str]) -> list[dict[str, Any]]:
    """One row per run, timed or not (untimed: ``runtime_error`` with the reason)."""
    npz_row = {i: k for k, i in enumerate(runs.timed)}
    normalizer = runs.normalizer
    configs = []
    for i, run in enumerate(msg.runs):
        value = int(run.profile.compute_time_ns) if i in npz_row else None
        ok = value is not None
        configs.append({
            "config_index": i, "strategy": STRATEGY, "seed": None,
            "is_default": bool(run.is_default), "status": "ok" if ok else "runtime_error",
            "config": _config_json(run, runs.kind, names), "npz_row": npz_row.get(i),
            "runtime_min_ns": value, "default_runtime_ns": normalizer,
            "relative_to_default": (value / normalizer if value is not None and normalizer
                                    else None),
            "error_message": None if ok else (ERROR_MESSAGE if run.error else UNTIMED_MESSAGE),
        })
    return configs


def _short(ids: list[int], limit: int = 8) -> str:
    body = ", ".join(str(i) for i in ids[:limit])
    return f"[{body}{', ...' if len(ids) > limit else ''}] ({len(ids)})"
