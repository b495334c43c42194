"""Builders and editors shared by the validate tests (valid inputs, one fault at a time)."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tpugraphs_tools.store import make_graph_id

HLO = """HloModule tiny

ENTRY main {
  p0 = f32[4,8]{1,0} parameter(0)
  p1 = f32[8,16]{1,0} parameter(1)
  d = f32[4,16]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[64]{0} reshape(d)
  c = f32[] constant(1)
  b = f32[64]{0} broadcast(c), dimensions={}
  ROOT a = f32[64]{0} add(r, b)
}
"""
# node ids: 0 p0, 1 p1, 2 dot (rank 2), 3 reshape (rank 1), 4 constant, 5 broadcast, 6 add
LAYOUT_RT = np.array([1000, 2000, 3000, 4000], np.int64)
TILE_RT = np.array([500, 600, 700], np.int64)
TREE_LAYOUT = "npz/layout/xla/default/train/model_a.npz"
TREE_LAYOUT_VALID = "npz/layout/xla/default/valid/model_b.npz"
TREE_TILE = "npz/tile/xla/train/kernel_a.npz"


def _group(*values: int) -> list[int]:
    return [*values, *([-1] * (6 - len(values)))]


def layout_config_feat() -> np.ndarray:
    """4 distinct valid configs for the dot (#0) and the reshape (#1, output left to XLA)."""
    rows = [  # (dot output, dot input, reshape input)
        ((0, 1), (0, 1), (0, 1)),
        ((1, 0), (0, 1), (1, 0)),
        ((0, 1), (1, 0), (1, 0)),
        ((), (1, 0), (0, 1)),
    ]
    feat = np.full((len(rows), 2, 18), -1, np.float32)
    for i, (out, inp, rin) in enumerate(rows):
        feat[i, 0, 0:6] = _group(*out)
        feat[i, 0, 6:12] = _group(*inp)
        feat[i, 1, 6:12] = _group(*rin)
    return feat


def graph_row(program: str, fp: str, collection: str, split: str | None, c: int
               ) -> dict[str, Any]:
    return {"graph_id": make_graph_id(program, fp), "collection": collection,
            "program": program, "program_args": "{}", "source": "hlo-text",
            "hlo_stage": "unoptimized", "fingerprint": fp, "backend": "cpu",
            "num_nodes": 7, "num_edges": 6, "num_configurable": 2, "num_configs": c,
            "split": split}


def config_rows(runtimes: np.ndarray, failed: bool = True) -> list[dict[str, Any]]:
    rows = [{"config_index": i, "strategy": "random", "is_default": i == 0, "status": "ok",
             "config": "{}", "npz_row": i, "runtime_min_ns": int(rt),
             "relative_to_default": float(rt / runtimes[0]),
             "relative_ci_low": float(rt / runtimes[0]) * 0.99,
             "relative_ci_high": float(rt / runtimes[0]) * 1.01,
             "timing_cpus": 2 if i else None}   # the default's own row is never timed alone
            for i, rt in enumerate(runtimes)]
    if failed:
        rows.append({"config_index": len(rows), "strategy": "random", "is_default": False,
                     "status": "compile_error", "config": "{}", "error_message": "boom"})
        # The A/A control of a paired batch: a copy of the default, never in the npz.
        rows.append({"config_index": len(rows), "strategy": "random", "is_default": False,
                     "status": "control", "config": "{}", "runtime_min_ns": int(runtimes[0]),
                     "relative_to_default": 1.02, "relative_ci_low": 0.99,
                     "relative_ci_high": 1.03, "rounds": 12, "stop_reason": "batch_done",
                     "timing_cpus": 2})
    return rows


GRAPH_A = make_graph_id("tiny_a", "a" * 64)
GRAPH_B = make_graph_id("tiny_b", "b" * 64)
GRAPH_T = make_graph_id("tiny_t", "c" * 64)
NPZ_A = f"graphs/{GRAPH_A}.npz"
NPZ_T = f"graphs/{GRAPH_T}.npz"


# -- editing helpers (each leaves the dataset otherwise consistent) -----------------------------
def restamp(root: Path, rel: str) -> None:
    """Make the manifest agree with ``rel`` as it is now on disk."""
    if not (root / "manifest.json").exists():
        return
    manifest = json.loads((root / "manifest.json").read_text())
    data = (root / rel).read_bytes()
    manifest["files"][rel] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2))


def write_npz(root: Path, rel: str, arrays: dict[str, np.ndarray]) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    (root / rel).write_bytes(buf.getvalue())
    restamp(root, rel)


def read_npz(root: Path, rel: str) -> dict[str, np.ndarray]:
    with np.load(root / rel, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def edit_npz(root: Path, rel: str, fn: Callable[[dict[str, np.ndarray]], Any]) -> None:
    arrays = read_npz(root, rel)
    out = fn(arrays)
    write_npz(root, rel, arrays if out is None else out)


def table_part(name: str) -> str:
    """The one part file of a table of the test dataset (written in one commit)."""
    return f"tables/{name}/part-00000.parquet"


def edit_table(root: Path, name: str, fn: Callable[[pa.Table], pa.Table]) -> None:
    rel = table_part(name)
    table = fn(pq.read_table(root / rel))
    pq.write_table(table, root / rel)
    restamp(root, rel)
    manifest = json.loads((root / "manifest.json").read_text())
    info = manifest["tables"][name]
    (part,) = [p for p in info["parts"] if p["file"] == rel]
    info["rows"] += table.num_rows - part["rows"]
    part["rows"] = table.num_rows
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2))


def set_cell(table: pa.Table, column: str, row: int, value: Any,
             type_: pa.DataType | None = None) -> pa.Table:
    """``table`` with one cell replaced (and the column cast to ``type_`` if given)."""
    col = table.column(column)
    if type_ is not None:
        col = col.cast(type_)
    values = col.to_pylist()
    values[row] = value
    arr = pa.array(values, type=col.type)
    field = table.schema.field(column).with_type(arr.type).with_nullable(True)
    return table.set_column(table.column_names.index(column), field, arr)


def edit_manifest(root: Path, fn: Callable[[dict], Any]) -> None:
    manifest = json.loads((root / "manifest.json").read_text())
    fn(manifest)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2))


def config_row(table: pa.Table, graph_id: str, config_index: int) -> int:
    gids = table.column("graph_id").to_pylist()
    idx = table.column("config_index").to_pylist()
    return next(i for i, (g, c) in enumerate(zip(gids, idx, strict=True))
                if g == graph_id and c == config_index)


def graph_index(table: pa.Table, graph_id: str) -> int:
    return table.column("graph_id").to_pylist().index(graph_id)


@dataclass(frozen=True)
class Expect:
    """The finding a case must produce (file/key/index None: not asserted)."""

    check: str
    file: str | None = None
    key: str | None = None
    index: int | None = None
