"""What may already be in an ``--out`` folder: one rule for every command that writes one.

tgt never mixes what it writes with files it did not write, since a later ``tgt validate``
(or an ``--overwrite``) would then trip over or remove them: ``--out`` must be missing, empty,
or, for a command that adds to a dataset (``tgt collect``), a tgt dataset. Any other folder is
refused with one line naming what is in it. Export, import, publish and report replace their
``--out`` whole when given ``--overwrite``; collect has no such flag (it would delete the
user's files). tgt's own leftovers that hold no data (a lock, logs) do not count.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.store.atomic import LOG_DIR
from tpugraphs_tools.store.graph_npz import GRAPHS_DIR
from tpugraphs_tools.store.lock import LOCK_FILE, Holder, dataset_lock
from tpugraphs_tools.store.manifest import MANIFEST
from tpugraphs_tools.store.tables import TABLES_DIR

# a dataset's own entries, present before its first manifest when that commit was cut short
_DATASET_ENTRIES = (TABLES_DIR, GRAPHS_DIR)
_TGT_PREFIX = ".tgt-"  # the commit journal, work journals, cache, logs, lock


def _no_data(name: str) -> bool:
    return name == LOG_DIR or name.startswith(LOCK_FILE)


def check_out_folder(out: str | Path, *, adds_to_dataset: bool = False,
                     overwrite: bool = False) -> None:
    """Raise :class:`DatasetError` (one line naming up to three entries) unless ``out`` may
    be written as the module's rule says."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise DatasetError(f"{out}: exists and is not a folder")
    if not out.is_dir() or overwrite:
        return
    if adds_to_dataset and (out / MANIFEST).exists():
        return
    others = sorted(p.name for p in out.iterdir() if not _no_data(p.name) and not (
        adds_to_dataset and (p.name.startswith(_TGT_PREFIX) or p.name in _DATASET_ENTRIES)))
    if not others:
        return
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    if adds_to_dataset:
        raise DatasetError(f"{out}: folder exists, is not empty ({shown}) and is not a tgt "
                           "dataset; choose an empty or new --out, or a dataset to add to")
    raise DatasetError(f"{out}: folder exists and is not empty ({shown}); choose another "
                       "--out or pass --overwrite")


@contextlib.contextmanager
def dataset_writer(out: str | Path) -> Iterator[Holder]:
    """For a run that adds to the dataset at ``out``: the folder rule, then the write lock
    for the whole run (a second writer is refused before any work)."""
    check_out_folder(out, adds_to_dataset=True)
    with dataset_lock(out) as holder:
        yield holder
