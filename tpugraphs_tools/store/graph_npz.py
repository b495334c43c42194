"""One npz per graph (``graphs/<graph_id>.npz``): the one reader and the one writer.

Apart from ``dataset.py`` so that reading (``Dataset``), writing (``Transaction``) and the
exports share the same rules: never unpickle, and name the file when it is damaged.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np

from tpugraphs_tools.errors import DatasetFileError

GRAPHS_DIR = "graphs"

# what a damaged npz raises, in np.load or when a member is read (zip, inflate, npy header)
NPZ_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error)


@contextmanager
def read_npz(path: Path) -> Iterator[Any]:
    """``np.load(path)`` (never unpickling) for a block that reads its members: damage found
    opening it or reading a member is one :class:`DatasetFileError` naming the file; a file
    that is not there is called missing, not damaged."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            yield npz
    except FileNotFoundError:
        if Path(path).exists():  # raised by the block, about some other file
            raise
        raise DatasetFileError(missing_npz(path)) from None
    except NPZ_ERRORS as exc:
        raise DatasetFileError(f"{path}: damaged npz (truncated or overwritten?): "
                               f"{exc}") from None


def missing_npz(path: Path) -> str:
    """The one line for a graph file that is gone (every reader says it alike)."""
    return f"{path}: missing (deleted or moved?); `tgt validate` lists every missing file"


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write one graph's arrays as a compressed npz (the one writer: the store and exports)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        # numpy's stub would match the names against allow_pickle: bool
        np.savez_compressed(f, **cast("dict[str, Any]", arrays))
