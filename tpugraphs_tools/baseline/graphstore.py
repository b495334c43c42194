"""Graph structure of the baseline on disk, read back per batch through a small LRU.

With every prepared graph resident, ``tgt baseline`` memory grows with the number of graphs
(TpuGraphs: thousands of graphs of up to ~100k nodes). The lazy path writes each graph's
arrays once into ``DATA/.tgt-cache/baseline-graphs/`` and keeps only metadata (ids, sizes,
segment counts) in memory; the arrays of at most ``capacity`` graphs are open at a time.

Layout, one folder per graph and content key (the key covers the npz / configs checksums and
the preparation options that shaped the arrays)::

    baseline-graphs/<graph hash>/<raw key hash>/            raw arrays (load_raw) + meta.json
        segments-<hash>.npy                                  GST node → segment, per method
        prep-<hash>/                                         finalized arrays + meta.json,
                                                             per feature statistics × segments

Every entry is written under a temporary name and renamed into place (a reader never sees
half an entry); a new raw key removes the graph's older folders, as in configstore.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.store import CACHE_DIR as STORE_CACHE_DIR

CACHE_DIR = Path(STORE_CACHE_DIR) / "baseline-graphs"
GRAPH_VERSION = 1       # bump when the stored arrays or their conversions change
LRU_GRAPHS = 4          # entries open at once (at least --batch-graphs: one step's graphs)
META = "meta.json"


def digest(*parts: Any) -> str:
    """sha256 of ``parts`` (str / bytes / arrays), for cache keys."""
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, np.ndarray):
            h.update(str((p.dtype.str, p.shape)).encode())
            h.update(np.ascontiguousarray(p).tobytes())
        else:
            h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()


class Entry(dict[str, np.ndarray]):
    """One graph's arrays plus values derived from them (the segment list), dropped together."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        super().__init__(arrays)
        self.memo: dict[str, Any] = {}

    def entry(self) -> Entry:
        return self


class EntryRef(Protocol):
    """Where a graph's arrays come from: resident (:class:`Entry`) or :class:`Stored`."""

    def entry(self) -> Entry: ...


class GraphStore:
    """Entries under ``root / CACHE_DIR``; :meth:`load` keeps the last ``capacity`` open."""

    def __init__(self, root: Path, capacity: int = LRU_GRAPHS) -> None:
        self.dir = root / CACHE_DIR
        self.capacity = max(1, capacity)
        self._open: OrderedDict[Path, Entry] = OrderedDict()
        self.loads = 0          # entries read from disk (tests: the LRU is bounded)

    def folder(self, graph_id: str, key: str) -> Path:
        name = hashlib.sha256(graph_id.encode()).hexdigest()[:16]
        return self.dir / name / digest(GRAPH_VERSION, key)

    @staticmethod
    def has(folder: Path) -> bool:
        return (folder / META).exists()

    @staticmethod
    def meta(folder: Path) -> dict[str, Any]:
        return json.loads((folder / META).read_text())

    def write(self, folder: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any],
              replace_older: bool = False) -> None:
        """Write one entry atomically; ``replace_older`` removes the graph's other keys."""
        tmp = folder.with_name(f"{folder.name}.tmp-{uuid.uuid4().hex[:8]}")
        try:
            tmp.mkdir(parents=True)
            for name, value in arrays.items():
                np.save(tmp / f"{name}.npy", np.ascontiguousarray(value))
            (tmp / META).write_text(json.dumps({**meta, "arrays": sorted(arrays)}))
            if replace_older:
                for stale in folder.parent.iterdir():
                    if ".tmp-" not in stale.name and stale != folder:
                        shutil.rmtree(stale, ignore_errors=True)
            try:
                os.replace(tmp, folder)
            except OSError:
                if not self.has(folder):      # not another process's finished entry
                    raise
        except OSError as exc:
            raise DatasetError(f"cannot write the baseline graph cache {self.dir}: {exc} "
                               f"(--in-memory-configs trains without it)") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def load(self, folder: Path) -> Entry:
        """The entry's arrays (memory-mapped), from the LRU or read now."""
        entry = self._open.get(folder)
        if entry is not None:
            self._open.move_to_end(folder)
            return entry
        try:
            names = self.meta(folder)["arrays"]
            entry = Entry({n: np.load(folder / f"{n}.npy", mmap_mode="r", allow_pickle=False)
                           for n in names})
        except (OSError, ValueError, KeyError) as exc:
            raise DatasetError(f"{folder}: damaged baseline graph cache entry ({exc}); "
                               f"delete {self.dir} and run again") from None
        self.loads += 1
        self._open[folder] = entry
        while len(self._open) > self.capacity:
            self._open.popitem(last=False)
        return entry

    def array(self, path: Path, compute: Any) -> np.ndarray:
        """A single cached array file (``compute()`` and atomic write when missing)."""
        if path.exists():
            return np.load(path, allow_pickle=False)
        value = np.asarray(compute())
        tmp = path.with_name(f"{path.name}.tmp-{uuid.uuid4().hex[:8]}.npy")
        try:
            np.save(tmp, value)
            os.replace(tmp, path)
        except OSError as exc:
            raise DatasetError(f"cannot write the baseline graph cache {self.dir}: "
                               f"{exc}") from None
        finally:
            tmp.unlink(missing_ok=True)
        return value

    def __len__(self) -> int:
        return len(self._open)


@dataclass(frozen=True)
class Stored:
    """A graph's arrays in the store, read on access (through the LRU)."""

    store: GraphStore
    folder: Path

    def entry(self) -> Entry:
        return self.store.load(self.folder)
