"""Reading single TpuGraphs npz files (never unpickling); the store writes them."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import collection_of


def read_official_npz(path: Path, collection: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """The official keys of one file, and the names of any other keys (left out)."""
    wanted = collection_of(collection).official_keys
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DatasetError(f"{path}: not a readable npz: {exc}") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise DatasetError(f"{path}: holds a single array, not an npz of named keys")
    with npz:
        missing = [k for k in wanted if k not in npz.files]
        if missing:
            raise DatasetError(f"{path}: missing key {missing[0]!r} needed by a "
                               f"{collection} file (has {', '.join(sorted(npz.files))})")
        arrays = {}
        for key in wanted:
            try:
                arrays[key] = npz[key]
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
                raise DatasetError(f"{path}: key {key!r} cannot be read: {exc}") from None
        extra = sorted(set(npz.files) - set(wanted))
    return arrays, extra
