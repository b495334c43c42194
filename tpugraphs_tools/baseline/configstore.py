"""Per-config arrays of the baseline, read on demand for the sampled configs only.

A layout graph's ``node_config_feat`` is ``c × nc × LAYOUT_CONFIG_WIDTH`` floats; holding it
for every graph makes training memory grow with the configs per graph (GST users needed >240 GB for
TpuGraphs). :class:`ConfigRows` is a row view of such an array that is either in memory (the
old path, kept for comparison) or a ``.npy`` file in a cache folder, opened with
``mmap_mode="r"`` for each read so only the rows a step asks for are touched.

The cache holds one folder per graph and content key (the npz checksum, plus the configs
table parts for ``num_copies``) under ``DATA/.tgt-cache/baseline-configs/``; a changed graph
gets a new key, its old folder is removed, and every folder is written under a temporary name
and renamed into place, so a reader never sees half an entry.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from tpugraphs_tools.errors import DatasetError, DatasetFileError
from tpugraphs_tools.format import Collection, collection_of
from tpugraphs_tools.store import CACHE_DIR as STORE_CACHE_DIR
from tpugraphs_tools.store import NPZ_ERRORS, missing_npz

CACHE_DIR = Path(STORE_CACHE_DIR) / "baseline-configs"
CACHE_VERSION = 2           # bump when the files' contents or conversions change
CHUNK_BYTES = 8 << 20       # rows streamed per read while repacking
LAYOUT_MIN, LAYOUT_MAX = -1, 6


def layout_values(x: np.ndarray) -> np.ndarray:
    """Layout config features as int8 categories −1..6 (what the model embeds)."""
    return np.clip(np.rint(x.astype(np.float32)), LAYOUT_MIN, LAYOUT_MAX).astype(np.int8)


@dataclass(frozen=True)
class ConfigRows:
    """Rows ``rows`` of a per-config array ``base`` (an array or a ``.npy`` path), with an
    optional row-wise ``transform`` (tile normalisation) applied after reading."""

    base: np.ndarray | Path
    base_shape: tuple[int, ...]
    rows: np.ndarray | None = None
    transform: Callable[[np.ndarray], np.ndarray] | None = None
    tail: tuple[int, ...] | None = None   # dimensions after the first, after ``transform``

    @classmethod
    def of(cls, array: np.ndarray) -> ConfigRows:
        return cls(array, tuple(array.shape))

    @classmethod
    def file(cls, path: Path) -> ConfigRows:
        return cls(path, tuple(np.load(path, mmap_mode="r").shape))

    def __len__(self) -> int:
        return int(self.rows.size) if self.rows is not None else self.base_shape[0]

    @property
    def size(self) -> int:
        return len(self)

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self), *(self.tail if self.tail is not None else self.base_shape[1:]))

    def take(self, rows: np.ndarray) -> ConfigRows:
        """A view of ``rows`` (positions in this view); nothing is read."""
        rows = np.asarray(rows, np.int64)
        return replace(self, rows=self.rows[rows] if self.rows is not None else rows)

    def with_transform(self, fn: Callable[[np.ndarray], np.ndarray],
                       tail: tuple[int, ...]) -> ConfigRows:
        """Rows read through ``fn``, whose output rows have shape ``tail``."""
        return replace(self, transform=fn, tail=tail)

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        """The rows at positions ``index`` of this view, read now."""
        index = np.asarray(index, np.int64)
        rows = self.rows[index] if self.rows is not None else index
        if isinstance(self.base, Path):
            data = np.asarray(np.load(self.base, mmap_mode="r")[rows])
        else:
            data = self.base[rows]
        return self.transform(data) if self.transform is not None else data

    def read(self) -> np.ndarray:
        """Every row of the view (one graph's runtimes for scoring, tile statistics)."""
        return self[np.arange(len(self))]


@dataclass(frozen=True)
class GraphConfigs:
    """A graph's per-config arrays: features, runtimes (tile: normalised), ``num_copies``,
    label CIs as factors of the label."""

    feat: ConfigRows          # layout: int8 [c, nc, Fl]; tile: float32 [c, Ft] (format widths)
    runtime: ConfigRows       # float64 [c]
    num_copies: ConfigRows | None = None
    label_ci: ConfigRows | None = None   # float64 [c, 2]

    def take(self, rows: np.ndarray) -> GraphConfigs:
        copies = self.num_copies.take(rows) if self.num_copies is not None else None
        ci = self.label_ci.take(rows) if self.label_ci is not None else None
        return GraphConfigs(self.feat.take(rows), self.runtime.take(rows), copies, ci)


def config_keys(kind: str) -> tuple[str, ...]:
    """The npz keys holding per-config arrays."""
    return collection_of(kind).config_keys


def runtimes(arrays: dict[str, np.ndarray], spec: Collection) -> np.ndarray:
    runtime = arrays.get("config_runtime", np.zeros(0)).astype(np.float64)
    norm = arrays.get(spec.normalizer_key) if spec.normalizer_key else None
    if norm is not None:
        runtime = runtime / np.maximum(norm.astype(np.float64), 1.0)
    return runtime


def in_memory(arrays: dict[str, np.ndarray], kind: str, num_copies: np.ndarray | None,
              label_ci: np.ndarray | None = None) -> GraphConfigs:
    """The per-config arrays of a fully loaded graph (the in-memory path)."""
    spec = collection_of(kind)
    runtime = runtimes(arrays, spec)
    if not spec.per_node_configs:
        feat = arrays.get(spec.config_feat_key,
                          np.zeros((runtime.size, spec.config_width), np.float32))
        feat = feat.astype(np.float32)
    else:
        nc = arrays["node_config_ids"].shape[0]
        feat = layout_values(arrays.get(spec.config_feat_key,
                                        np.zeros((runtime.size, nc, spec.config_width),
                                                 np.float32)))
    copies = ConfigRows.of(num_copies) if num_copies is not None else None
    ci = ConfigRows.of(label_ci) if label_ci is not None else None
    return GraphConfigs(ConfigRows.of(feat), ConfigRows.of(runtime), copies, ci)


class CacheableSource(Protocol):
    """What the cache needs from a graph source."""

    def npz_file(self, graph_id: str) -> Path: ...

    def content_key(self, graph_id: str) -> str: ...

    def num_copies(self, graph_id: str, count: int) -> np.ndarray | None: ...

    def label_ci(self, graph_id: str, count: int) -> np.ndarray | None: ...


def _stream_rows(npz: Path, key: str, out: Path,
                 convert: Callable[[np.ndarray], np.ndarray]) -> bool:
    """Copy ``npz[key]`` into ``out`` (.npy) a chunk of rows at a time; False when absent."""
    with zipfile.ZipFile(npz) as zf:
        name = f"{key}.npy"
        if name not in zf.namelist():
            return False
        with zf.open(name) as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            if fortran or dtype.hasobject or not shape:
                raise DatasetError(f"{npz}: {key} is not a C-ordered numeric array")
            row_shape = tuple(shape[1:])
            row_bytes = max(1, dtype.itemsize * int(np.prod(row_shape, dtype=np.int64)))
            probe = convert(np.zeros((0, *row_shape), dtype))
            dest = np.lib.format.open_memmap(out, mode="w+", dtype=probe.dtype,
                                             shape=(shape[0], *probe.shape[1:]))
            step = max(1, CHUNK_BYTES // row_bytes)
            for start in range(0, shape[0], step):
                count = min(step, shape[0] - start)
                data = f.read(count * row_bytes)
                if len(data) != count * row_bytes:
                    raise DatasetError(f"{npz}: {key} is truncated")
                chunk = np.frombuffer(data, dtype).reshape(count, *row_shape)
                dest[start:start + count] = convert(chunk)
            dest.flush()
            del dest
    return True


class ConfigCache:
    """The repacked per-config arrays of a source's graphs, under ``root / CACHE_DIR``."""

    def __init__(self, root: Path) -> None:
        self.dir = root / CACHE_DIR

    def _folder(self, graph_id: str, key: str) -> Path:
        name = hashlib.sha256(graph_id.encode()).hexdigest()[:16]
        return self.dir / name / hashlib.sha256(f"{CACHE_VERSION}:{key}".encode()).hexdigest()

    def open(self, source: CacheableSource, graph_id: str, kind: str) -> GraphConfigs:
        """The graph's cached arrays, repacked first when missing or out of date."""
        folder = self._folder(graph_id, source.content_key(graph_id))
        if not (folder / "runtime.npy").exists():
            self._build(source, graph_id, kind, folder)
        copies, ci = folder / "num_copies.npy", folder / "label_ci.npy"
        return GraphConfigs(ConfigRows.file(folder / "feat.npy"),
                            ConfigRows.file(folder / "runtime.npy"),
                            ConfigRows.file(copies) if copies.exists() else None,
                            ConfigRows.file(ci) if ci.exists() else None)

    def _build(self, source: CacheableSource, graph_id: str, kind: str, folder: Path) -> None:
        npz = source.npz_file(graph_id)
        if not npz.is_file():  # gone: no repacking (or --in-memory-configs) can help
            raise DatasetFileError(missing_npz(npz))
        tmp = folder.with_name(f"{folder.name}.tmp-{uuid.uuid4().hex[:8]}")
        try:
            tmp.mkdir(parents=True)
            spec = collection_of(kind)
            with np.load(npz, allow_pickle=False) as data:
                small = {k: data[k] for k in spec.config_keys
                         if k in data.files and k != spec.config_feat_key}
                nc = data["node_config_ids"].shape[0] if spec.per_node_configs else 0
            runtime = runtimes(small, spec)
            np.save(tmp / "runtime.npy", runtime)
            if not spec.per_node_configs:
                found = _stream_rows(npz, spec.config_feat_key, tmp / "feat.npy",
                                     lambda x: x.astype(np.float32))
                empty = np.zeros((runtime.size, spec.config_width), np.float32)
            else:
                found = _stream_rows(npz, spec.config_feat_key, tmp / "feat.npy", layout_values)
                empty = layout_values(np.zeros((runtime.size, nc, spec.config_width),
                                               np.float32))
            if not found:
                np.save(tmp / "feat.npy", empty)
            copies = source.num_copies(graph_id, int(runtime.size))
            if copies is not None:
                np.save(tmp / "num_copies.npy", copies)
            ci = source.label_ci(graph_id, int(runtime.size))
            if ci is not None:
                np.save(tmp / "label_ci.npy", ci)
            for stale in folder.parent.iterdir():   # older versions of this graph
                if ".tmp-" not in stale.name:
                    shutil.rmtree(stale, ignore_errors=True)
            try:
                os.replace(tmp, folder)
            except OSError:
                if not (folder / "runtime.npy").exists():  # not another process's entry
                    raise
        except NPZ_ERRORS as exc:
            raise DatasetError(f"{npz}: cannot repack configs into {self.dir}: {exc} "
                               f"(--in-memory-configs reads without a cache)") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
