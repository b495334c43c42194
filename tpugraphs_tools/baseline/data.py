"""Graph sources for the baseline: a tgt dataset or an official TpuGraphs npz tree.

Both yield :class:`GraphRecord` s one at a time (GST issue #3: loading all of TpuGraphs at once
needed >240 GB), after a cheap :meth:`GraphSource.index` pass that splitting uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import polars as pl

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import SPLITS, Collection, Kind, collection_of, tree_hints
from tpugraphs_tools.store import LABEL_COLUMNS, read_npz, shared_log_se


@dataclass(frozen=True)
class GraphInfo:
    """What splitting and grouping need, without the arrays."""

    graph_id: str
    kind: str                 # "layout" | "tile": which npz keys hold the configs
    collection: str           # training group: "layout", "tile", "layout/xla/default", ...
    program: str
    split: str | None
    strategy: str | None = None   # how its configs were drawn ("default", "random"), if known
    label_shared_se: float = 0.0  # log-scale SD its labels share (store.shared_log_se)

    @property
    def spec(self) -> Collection:
        """The format record of this graph's kind (which keys, per-node configs or not)."""
        return collection_of(self.kind)


@dataclass
class GraphRecord:
    info: GraphInfo
    arrays: dict[str, np.ndarray]
    num_copies: np.ndarray | None = None   # int64 [c] per npz config row, -1 unknown
    hlo_text: Callable[[], str] | None = field(default=None, repr=False)
    label_ci: np.ndarray | None = None     # float64 [c, 2] CI / label per row, NaN unknown


class GraphSource(Protocol):
    """Anything the baseline can train on."""

    name: str

    def index(self) -> list[GraphInfo]: ...

    def load(self, info: GraphInfo, with_configs: bool = True) -> GraphRecord: ...

    def npz_file(self, graph_id: str) -> Path: ...

    def content_key(self, graph_id: str) -> str: ...

    def num_copies(self, graph_id: str, count: int) -> np.ndarray | None: ...

    def label_ci(self, graph_id: str, count: int) -> np.ndarray | None: ...

    def cache_root(self) -> Path: ...


def _structure_keys(files: list[str], kind: str) -> list[str]:
    """npz keys without the per-config arrays (those are read lazily, configstore.py)."""
    from tpugraphs_tools.baseline.configstore import config_keys

    skip = set(config_keys(kind))
    return [k for k in files if k not in skip]


class TgtSource:
    """A tgt dataset directory (graphs.parquet + configs.parquet + npz per graph)."""

    def __init__(self, root: str | Path) -> None:
        from tpugraphs_tools.store import Dataset

        self.dataset = Dataset.open(root)
        self.name = str(root)

    def index(self) -> list[GraphInfo]:
        graphs = self.dataset.graphs()
        configs = self.dataset.scan("configs")    # two narrow queries, not the whole table
        # the strategy of a graph's non-default configs (one per graph: collect.run)
        strategies = dict(configs.filter(~pl.col("is_default")).group_by("graph_id")
                          .agg(pl.col("strategy").first()).collect().iter_rows())
        shared: dict[str, float] = {}
        if set(LABEL_COLUMNS) <= set(configs.collect_schema().names()):
            controls = configs.filter(pl.col("status") == "control").select(
                "graph_id", "status", *LABEL_COLUMNS).collect()
            shared = {gid: shared_log_se(rows)
                      for (gid,), rows in controls.group_by("graph_id")}
        out = []
        for row in graphs.select("graph_id", "collection", "program", "split").to_dicts():
            gid = row["graph_id"]
            out.append(GraphInfo(gid, row["collection"], row["collection"], row["program"],
                                 row["split"], strategies.get(gid), shared.get(gid, 0.0)))
        return out

    def num_copies(self, graph_id: str, count: int) -> np.ndarray | None:
        """int64 [count] per npz row (-1 unknown), read from the table parts that hold the
        graph (never the whole configs table); None when it has no such values."""
        rows = self.dataset.configs_of(graph_id).filter(
            pl.col("num_copies").is_not_null() & pl.col("npz_row").is_not_null())
        known = {int(r): int(c) for r, c in rows.select("npz_row", "num_copies").iter_rows()}
        if not known:
            return None
        copies = np.full(count, -1, dtype=np.int64)
        for row, value in known.items():
            if 0 <= row < count:
                copies[row] = value
        return copies

    def label_ci(self, graph_id: str, count: int) -> np.ndarray | None:
        """float64 [count, 2]: each npz row's label 95% CI as factors of its label (paired
        timing's ``relative_ci_low``/``high`` over ``relative_to_default``), NaN where
        unknown; None when no row has one (tile and fixed-engine labels)."""
        rows = self.dataset.configs_of(graph_id)
        needed = ("npz_row", "relative_ci_low", "relative_ci_high", "relative_to_default")
        if any(c not in rows.columns for c in needed):
            return None
        rows = rows.filter(pl.all_horizontal(pl.col(c).is_not_null() for c in needed))
        ci = np.full((count, 2), np.nan)
        for row, low, high, ratio in rows.select(*needed).iter_rows():
            if 0 <= row < count and ratio > 0:
                ci[row] = (low / ratio, high / ratio)
        if np.isnan(ci).all():
            return None
        return ci

    def npz_file(self, graph_id: str) -> Path:
        return self.dataset.npz_path(graph_id)

    def content_key(self, graph_id: str) -> str:
        """The manifest checksums of the graph's npz and of the configs parts that may hold
        its rows: the configs cache is rebuilt when either changes. The npz must be there with
        the manifest's byte count, or a cache built from it would outlive it."""
        from tpugraphs_tools.store import parts_for_key

        self.dataset.check_graph_file(graph_id)
        files = self.dataset.manifest.get("files", {})
        rel = self.npz_file(graph_id).relative_to(self.dataset.root).as_posix()
        parts = parts_for_key(self.dataset.table_info("configs"), graph_id)
        sums = [str(files.get(rel, {}).get("sha256"))]
        sums += [f"{p.file}:{files.get(p.file, {}).get('sha256')}" for p in parts]
        return "|".join(sums)

    def cache_root(self) -> Path:
        return self.dataset.root

    def load(self, info: GraphInfo, with_configs: bool = True) -> GraphRecord:
        path = self.npz_file(info.graph_id)
        if with_configs:
            arrays = self.dataset.load_arrays(info.graph_id)
            count = int(arrays["config_runtime"].shape[0])
            copies = self.num_copies(info.graph_id, count)
            ci = self.label_ci(info.graph_id, count)
        else:
            with read_npz(path) as npz:
                keys = tuple(_structure_keys(npz.files, info.kind))
            arrays, copies, ci = self.dataset.load_arrays(info.graph_id, keys), None, None
        ds = self.dataset

        def hlo() -> str:
            return ds.hlo_text(info.graph_id)

        return GraphRecord(info, arrays, copies, hlo, ci)


class TpuGraphsTreeSource:
    """The published layout ``npz/{tile,layout}/.../{train,valid,test}/*.npz`` (any sub-root).

    The collection is the path between ``npz/`` and the split directory
    (``layout/xla/default``, ``tile/xla``: ``format.tree_hints``); the split is the directory
    name. A tree with no layout/tile folder is read as layout.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.name = str(root)
        self._files: dict[str, Path] = {}
        # one hash per file version and run (both baseline caches ask for it)
        self._keys: dict[tuple[str, int, int], str] = {}

    def index(self) -> list[GraphInfo]:
        out = []
        for path in sorted(self.root.rglob("*.npz")):
            split = path.parent.name
            if split not in SPLITS:
                continue
            hints = tree_hints(self.root.resolve().parts + path.relative_to(self.root).parts)
            kind = (hints.collection or Kind.LAYOUT).value
            collection = hints.group or kind
            graph_id = f"{collection}/{path.stem}"
            self._files[graph_id] = path
            strategy = collection.rsplit("/", 1)[-1]
            out.append(GraphInfo(graph_id, kind, collection, path.stem, split,
                                 strategy if strategy in ("default", "random") else None))
        if not out:
            raise DatasetError(f"{self.root}: no */{{train,valid,test}}/*.npz files (expected "
                               f"a TpuGraphs tree such as npz/layout/xla/default)")
        return out

    def npz_file(self, graph_id: str) -> Path:
        if not self._files:
            self.index()
        return self._files[graph_id]

    def content_key(self, graph_id: str) -> str:
        """sha256 of the npz file: the configs cache is rebuilt when the file changes."""
        from tpugraphs_tools.store import sha256_file

        path = self.npz_file(graph_id)
        st = path.stat()
        memo = (graph_id, st.st_mtime_ns, st.st_size)
        if memo not in self._keys:
            self._keys[memo] = sha256_file(path)
        return self._keys[memo]

    def num_copies(self, graph_id: str, count: int) -> np.ndarray | None:
        return None     # official trees do not record inserted copies

    def label_ci(self, graph_id: str, count: int) -> np.ndarray | None:
        return None     # nor label uncertainty

    def cache_root(self) -> Path:
        return self.root

    def load(self, info: GraphInfo, with_configs: bool = True) -> GraphRecord:
        path = self.npz_file(info.graph_id)
        with read_npz(path) as npz:
            keys = npz.files if with_configs else _structure_keys(npz.files, info.kind)
            arrays = {k: npz[k] for k in keys}
        if "node_splits" in arrays:
            arrays["node_splits"] = arrays["node_splits"].reshape(-1)
        return GraphRecord(info, arrays)


def open_source(path: str | Path) -> GraphSource:
    """A tgt dataset if ``path`` has a manifest.json, else an official TpuGraphs tree."""
    from tpugraphs_tools.store import MANIFEST, TABLES_DIR

    root = Path(path)
    if (root / MANIFEST).exists() or (root / TABLES_DIR).is_dir():  # the store names damage
        return TgtSource(root)
    if root.is_dir():
        return TpuGraphsTreeSource(root)
    raise DatasetError(f"{root}: neither a tgt dataset nor a TpuGraphs npz tree")


def iter_graphs(source: GraphSource, infos: list[GraphInfo] | None = None
                ) -> Iterator[tuple[str, str | None, dict[str, np.ndarray]]]:
    """(graph_id, split, arrays) from either source, one graph in memory at a time."""
    for info in infos if infos is not None else source.index():
        yield info.graph_id, info.split, source.load(info).arrays
