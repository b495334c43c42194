"""The official folder scheme: ``npz/layout/{source}/{search}/{split}/{name}.npz`` and
``npz/tile/{source}/{split}/{name}.npz``. One function builds a path, one parses it; readers of
trees that may not follow the scheme (validate, baseline) read :func:`tree_hints`, which
applies the same parse first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format._collections import COLLECTIONS, KINDS, Kind, collection_of

# The graphs table's ``source`` of data measured by TpuGraphs' own pipeline (official trees,
# TPU tuning protos), as opposed to a program tgt lowered and timed itself.
TPUGRAPHS_SOURCE = "tpugraphs"
SPLITS = ("train", "valid", "test")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_STEM = re.compile(r"^(?!\.)[^/\\\x00]+$")  # official stems: any single, non-hidden name


@dataclass(frozen=True)
class TreeEntry:
    """Where one file sits in an official tree: what its path components say."""

    rel: str
    collection: Kind
    source: str
    search: str | None
    split: str
    stem: str

    @property
    def group(self) -> str:
        """The folders between ``npz/`` and the split: ``layout/xla/default``, ``tile/xla``."""
        return "/".join(p for p in (self.collection, self.source, self.search) if p)


def tree_path(collection: str, source: str, search: str | None, split: str, name: str) -> str:
    """``npz/layout/{source}/{search}/{split}/{name}.npz`` or ``npz/tile/xla/{split}/...``."""
    spec = collection_of(collection)
    if not spec.has_search:
        return f"npz/{spec.kind}/{spec.sources[0]}/{split}/{name}.npz"
    return f"npz/{spec.kind}/{source}/{search}/{split}/{name}.npz"


def parse_tree_path(rel: str) -> TreeEntry | None:
    """Read collection/source/search/split from a path; None if it is not a tree file.

    The nearest ``layout``/``tile`` component anchors the match, so a download unpacked under
    any prefix (``npz_all/npz/layout/...``) parses the same.
    """
    parts = rel.replace("\\", "/").split("/")
    if not parts[-1].endswith(".npz"):
        return None
    stem = parts[-1][: -len(".npz")]
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] not in KINDS:
            continue
        spec = COLLECTIONS[Kind(parts[i])]
        folders = parts[i + 1:-1]
        if len(folders) != (3 if spec.has_search else 2):
            continue
        source, split = folders[0], folders[-1]
        search = folders[1] if spec.has_search else None
        if _NAME.match(source) and (search is None or _NAME.match(search)) and split in SPLITS:
            return TreeEntry(rel, spec.kind, source, search, split, stem)
    return None


@dataclass(frozen=True)
class TreeHints:
    """What the folders above a file say when they may not follow the scheme exactly."""

    collection: Kind | None   # nearest layout/tile folder
    split: str | None         # nearest train/valid/test folder
    group: str | None         # folders from that layout/tile to the file's parent's parent


def tree_hints(parts: tuple[str, ...] | list[str]) -> TreeHints:
    """Path components (folders then file name) → hints: the official parse when it applies,
    else the nearest kind and split folders."""
    entry = parse_tree_path("/".join(parts))
    if entry is not None:
        return TreeHints(entry.collection, entry.split, entry.group)
    folders = list(parts[:-1])
    kind_at = next((i for i in range(len(folders) - 1, -1, -1) if folders[i] in KINDS), None)
    split = next((p for p in reversed(folders) if p in SPLITS), None)
    if kind_at is None:
        return TreeHints(None, split, None)
    return TreeHints(Kind(folders[kind_at]), split, "/".join(folders[kind_at:-1]))


def check_name(name: str, what: str, stem: bool = False) -> str:
    """A path component we write must not escape its folder (``stem``: a file stem as found in
    an official tree, which may hold any character but a separator)."""
    if not (_STEM if stem else _NAME).match(name):
        raise DatasetError(f"{what} {name!r} cannot be used as a file or folder name")
    return name
