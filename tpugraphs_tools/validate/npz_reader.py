"""A streaming npz reader: headers from the zip directory, arrays whole or in bounded row chunks.

``np.load`` materialises a whole member at once and trusts the npy header. The validator needs
the opposite: shapes and dtypes before any data (so absurd or pickled members are reported
without being read), and the big per-config arrays in slices so memory stays bounded by a chunk
rather than by the decompressed size of the largest array.
"""

from __future__ import annotations

import io
import math
import re
import struct
import threading
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty, Full, Queue
from typing import Literal

import numpy as np
from numpy.lib import format as npy_format

from tpugraphs_tools.errors import NpzError as NpzError

CHUNK_BYTES = 8 << 20
SMALL_BYTES = 1 << 20  # members up to this size are read with their header, in one open
_MAGIC = b"\x93NUMPY"
_MAX_HEADER = 1 << 16
# What np.save writes; anything else goes through numpy's own (literal_eval) header parser.
_HEADER_RE = re.compile(rb"^\{'descr': '([<>|=]?[a-zA-Z]\d*)', 'fortran_order': (True|False), "
                        rb"'shape': \(((?:\d+, ?)*\d*)\), \} *\n$")
_COPY_BYTES = 1 << 20  # cache-sized blocks: CRC + copy stay in L2
# Deflate cannot expand data by more than ~1032:1; anything beyond is a lying header.
_MAX_DEFLATE_RATIO = 1100


@dataclass(frozen=True)
class Member:
    """One ``<key>.npy`` member: its header facts, and where its data starts."""

    key: str
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran: bool
    info: zipfile.ZipInfo
    data_offset: int
    nbytes: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nbytes", math.prod(self.shape) * self.dtype.itemsize)

    def size_problem(self, max_bytes: int) -> str | None:
        """Why the declared size cannot be right (or needs absurd memory), else None."""
        declared = self.nbytes
        stored = self.info.file_size - self.data_offset
        if declared > max_bytes:
            return f"declares shape {self.shape} {self.dtype} = {declared:,} bytes " \
                   f"(cap {max_bytes:,})"
        if declared != stored:
            return f"header declares {declared:,} data bytes (shape {self.shape}), member " \
                   f"holds {stored:,}"
        if self.info.compress_type != zipfile.ZIP_STORED and \
                self.info.file_size > _MAX_DEFLATE_RATIO * max(self.info.compress_size, 1):
            return f"member claims {self.info.file_size:,} bytes from " \
                   f"{self.info.compress_size:,} compressed (impossible ratio)"
        return None


class NpzReader:
    """Open with ``with NpzReader(path) as r``; never unpickles, never reads unasked data."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._zf = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
            raise NpzError(f"not a readable npz: {exc}") from None
        self.members: dict[str, Member] = {}
        self.other: list[str] = []  # members that are not .npy files
        self.bad_headers: dict[str, str] = {}
        self._small: dict[str, bytes] = {}
        for info in self._zf.infolist():
            if info.is_dir():
                continue
            if not info.filename.endswith(".npy"):
                self.other.append(info.filename)
                continue
            key = info.filename[:-4]
            try:
                self.members[key] = self._header(key, info)
            except Exception as exc:  # zlib/CRC/npy-header errors: all mean unreadable
                self.bad_headers[key] = f"unreadable member: {exc}"

    def __enter__(self) -> NpzReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._zf.close()

    def _header(self, key: str, info: zipfile.ZipInfo) -> Member:
        """Parse the npy header; a small member's data is read in the same pass and kept."""
        with self._zf.open(info) as f:
            prefix = f.read(12)
            if prefix[:6] != _MAGIC or len(prefix) < 10:
                raise ValueError("not an npy array (bad magic)")
            major = prefix[6]
            start = 10 if major == 1 else 12
            size = int.from_bytes(prefix[8:start], "little")
            if size > _MAX_HEADER:
                raise ValueError(f"npy header of {size:,} bytes (limit {_MAX_HEADER:,})")
            header = prefix[start:] + f.read(size - (len(prefix) - start))
            shape, fortran, dtype = _parse_header(prefix[:start] + header, major)
            offset = start + size
            member = Member(key, shape, dtype, fortran, info, offset)
            if not dtype.hasobject and member.nbytes <= SMALL_BYTES and \
                    member.nbytes == info.file_size - offset:
                self._small[key] = f.read()  # reading to EOF also checks the CRC
        return member

    def _source(self, member: Member) -> _Source:
        try:
            if member.info.compress_type == zipfile.ZIP_STORED:
                return _StoredSource(self.path, member)
            return _ZipSource(self._zf, member)
        except NpzError:
            raise
        except Exception as exc:
            raise NpzError(f"corrupt data: {exc}", member.key) from None

    def read(self, member: Member) -> np.ndarray:
        """The whole array (callers only do this for arrays that must be held whole)."""
        order: Literal["F", "C"] = "F" if member.fortran else "C"
        data = self._small.pop(member.key, None)
        if data is not None:
            if len(data) != member.nbytes:
                raise NpzError(f"member holds {len(data):,} data bytes, header declares "
                               f"{member.nbytes:,}", member.key)
            return np.frombuffer(data, member.dtype).reshape(member.shape, order=order)
        out = np.empty(member.nbytes, dtype=np.uint8)
        with self._source(member) as src:
            src.readinto(out.data)  # the array's own buffer: bytes land in place
            src.finish()
        return out.view(member.dtype).reshape(member.shape, order=order)

    def chunks(self, member: Member, chunk_bytes: int | None = None, reuse: bool = False
               ) -> Iterator[tuple[int, np.ndarray]]:
        """``(first_row, rows)`` slices along axis 0, read ahead by one chunk in a thread.

        The reader thread reads (``readinto``, no Python-level copies), decompresses and CRCs
        the next chunk while the caller checks this one; file reads, zlib, crc32 and numpy all
        release the GIL, so validation costs about as much as reading alone. With ``reuse``
        three chunk buffers are recycled (no page faults for fresh buffers); the caller must
        then not keep a chunk past the next iteration.
        """
        chunk_bytes = chunk_bytes or CHUNK_BYTES
        if member.fortran or len(member.shape) == 0 or member.nbytes <= chunk_bytes:
            yield 0, self.read(member)  # one chunk: a thread would only add start-up cost
            return
        rows = member.shape[0]
        row_bytes = member.nbytes // rows
        per = max(1, chunk_bytes // max(row_bytes, 1))
        queue: Queue[tuple[int, np.ndarray] | BaseException | None] = Queue(maxsize=1)
        stop = threading.Event()
        ring = [np.empty(per * row_bytes, np.uint8) for _ in range(3)] if reuse else None

        def produce() -> None:
            try:
                with self._source(member) as src:
                    for n, start in enumerate(range(0, rows, per)):
                        count = min(per, rows - start)
                        size = count * row_bytes
                        buf = ring[n % 3][:size] if ring else np.empty(size, np.uint8)
                        src.readinto(buf.data)
                        arr = buf.view(member.dtype).reshape((count, *member.shape[1:]))
                        while not stop.is_set():
                            try:
                                queue.put((start, arr), timeout=0.1)
                                break
                            except Full:
                                continue
                        if stop.is_set():
                            return
                    src.finish()
                queue.put(None)
            except BaseException as exc:
                queue.put(exc)

        thread = threading.Thread(target=produce, daemon=True, name=f"npz-read-{member.key}")
        thread.start()
        try:
            while True:
                item = queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            while thread.is_alive():
                try:
                    queue.get_nowait()
                except Empty:
                    thread.join(timeout=0.05)


class _Source:
    """One member's data bytes, in order, into caller buffers; ``finish`` checks CRC/length."""

    key: str

    def __enter__(self) -> _Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fill(self, view: memoryview) -> int:
        raise NotImplementedError

    def readinto(self, view: memoryview) -> None:
        """Fill ``view`` completely or raise :class:`NpzError`."""
        pos = 0
        try:
            while pos < len(view):
                got = self._fill(view[pos:])
                if not got:
                    raise NpzError(f"data ends {len(view) - pos:,} bytes early", self.key)
                pos += got
        except NpzError:
            raise
        except Exception as exc:  # BadZipFile (CRC), zlib.error, EOFError, OSError
            raise NpzError(f"corrupt data: {exc}", self.key) from None

    def finish(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _StoredSource(_Source):
    """An uncompressed member read straight from the file (``readinto``: one copy, no GIL)
    with its CRC-32 computed on the way, as zipfile would."""

    def __init__(self, path: Path, member: Member) -> None:
        self.key, self.member = member.key, member
        self._f = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
        try:
            info = member.info
            self._f.seek(info.header_offset)
            local = self._f.read(30)
            if len(local) < 30 or local[:4] != b"PK\x03\x04":
                raise NpzError("bad zip local header", member.key)
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            self._f.seek(info.header_offset + 30 + name_len + extra_len)
            self._crc = zlib.crc32(self._f.read(member.data_offset))
        except BaseException:
            self._f.close()
            raise

    def _fill(self, view: memoryview) -> int:
        got = self._f.readinto(view) or 0
        self._crc = zlib.crc32(view[:got], self._crc)
        return got

    def finish(self) -> None:
        if self._crc != self.member.info.CRC:
            raise NpzError(f"corrupt data: Bad CRC-32 for file '{self.member.info.filename}'",
                           self.key)

    def close(self) -> None:
        self._f.close()


class _ZipSource(_Source):
    """A deflated member through zipfile (zlib releases the GIL); zipfile checks the CRC."""

    def __init__(self, zf: zipfile.ZipFile, member: Member) -> None:
        self.key = member.key
        self._f = zf.open(member.info)
        self._f.read(member.data_offset)

    def _fill(self, view: memoryview) -> int:
        block = self._f.read(min(len(view), _COPY_BYTES))
        view[:len(block)] = block
        return len(block)

    def finish(self) -> None:
        try:
            extra = self._f.read(1)
        except Exception as exc:
            raise NpzError(f"corrupt data: {exc}", self.key) from None
        if extra:
            raise NpzError("member holds more data than its header declares", self.key)

    def close(self) -> None:
        self._f.close()


def _parse_header(raw: bytes, major: int) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran_order, dtype) of an npy header; a fast path for np.save's exact format
    (numpy's parser runs literal_eval, the largest per-member cost on small files)."""
    start = 10 if major == 1 else 12
    m = _HEADER_RE.match(raw[start:])
    if m is not None:
        shape = tuple(int(d) for d in m.group(3).split(b",") if d.strip())
        return shape, m.group(2) == b"True", np.dtype(m.group(1).decode())
    f = io.BytesIO(raw)
    version = npy_format.read_magic(f)
    reader = (npy_format.read_array_header_1_0 if version == (1, 0)
              else npy_format.read_array_header_2_0)
    shape, fortran, dtype = reader(f)
    return tuple(int(d) for d in shape), bool(fortran), dtype
