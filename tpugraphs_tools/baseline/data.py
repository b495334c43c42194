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


@dataclass(frozen=True)
class GraphInfo:
    """What splitting and grouping need, without the arrays."""

    graph_id: str
    kind: str                 # "layout" | "tile": which npz keys hold the configs
    collection: str           # training group: "layout", "tile", "layout/xla/default", ...
    program: str
    split: str | None

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


class GraphSource(Protocol):
    """Anything the baseline can train on."""

    name: str

    def index(self) -> list[GraphInfo]: ...

    def load(self, info: GraphInfo) -> GraphRecord: ...


class TgtSource:
    """A tgt dataset directory (graphs.parquet + configs.parquet + npz per graph)."""

    def __init__(self, root: str | Path) -> None:
        from tpugraphs_tools.store import Dataset

        self.dataset = Dataset.open(root)
        self.name = str(root)

    def index(self) -> list[GraphInfo]:
        graphs = self.dataset.graphs()
        out = []
        for row in graphs.select("graph_id", "collection", "program", "split").to_dicts():
            out.append(GraphInfo(row["graph_id"], row["collection"], row["collection"],
                                 row["program"], row["split"]))
        return out

    def _num_copies(self, graph_id: str) -> dict[int, int]:
        """{npz_row: num_copies} of one graph, read from the table parts that hold it (never
        the whole configs table); empty when it has no such values."""
        rows = self.dataset.configs_of(graph_id).filter(
            pl.col("num_copies").is_not_null() & pl.col("npz_row").is_not_null())
        return {int(r): int(c) for r, c in rows.select("npz_row", "num_copies").iter_rows()}

    def load(self, info: GraphInfo) -> GraphRecord:
        arrays = self.dataset.load_arrays(info.graph_id)
        copies = None
        known = self._num_copies(info.graph_id)
        if known:
            count = int(arrays["config_runtime"].shape[0])
            copies = np.full(count, -1, dtype=np.int64)
            for row, value in known.items():
                if 0 <= row < count:
                    copies[row] = value
        ds = self.dataset

        def hlo() -> str:
            return ds.hlo_text(info.graph_id)

        return GraphRecord(info, arrays, copies, hlo)


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
            out.append(GraphInfo(graph_id, kind, collection, path.stem, split))
        if not out:
            raise DatasetError(f"{self.root}: no */{{train,valid,test}}/*.npz files (expected "
                               f"a TpuGraphs tree such as npz/layout/xla/default)")
        return out

    def load(self, info: GraphInfo) -> GraphRecord:
        path = self._files[info.graph_id]
        try:
            with np.load(path, allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{path}: cannot read arrays: {exc}") from None
        if "node_splits" in arrays:
            arrays["node_splits"] = arrays["node_splits"].reshape(-1)
        return GraphRecord(info, arrays)


def open_source(path: str | Path) -> GraphSource:
    """A tgt dataset if ``path`` has a manifest.json, else an official TpuGraphs tree."""
    from tpugraphs_tools.store import MANIFEST

    root = Path(path)
    if (root / MANIFEST).exists():
        return TgtSource(root)
    if root.is_dir():
        return TpuGraphsTreeSource(root)
    raise DatasetError(f"{root}: neither a tgt dataset nor a TpuGraphs npz tree")


def iter_graphs(source: GraphSource, infos: list[GraphInfo] | None = None
                ) -> Iterator[tuple[str, str | None, dict[str, np.ndarray]]]:
    """(graph_id, split, arrays) from either source, one graph in memory at a time."""
    for info in infos if infos is not None else source.index():
        yield info.graph_id, info.split, source.load(info).arrays
