"""What a tgt export knows that the official npz keys cannot carry, for ``tgt import``.

``tgt export`` writes ``tgt-provenance.json`` at the tree root: per file, the graph's backend,
device, config space, program, arguments and its default config row. Tree readers only glob
``*.npz``, so the file is invisible to them; ``tgt import`` applies an entry only when the
file's arrays still hash to the recorded value, so an edited tree falls back to the defaults.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import TreeEntry, parse_tree_path

PROVENANCE = "tgt-provenance.json"
FORMAT = "tgt-export-provenance/1"
ROW_FIELDS = ("graph_id", "program", "program_args", "hlo_stage", "backend", "device_kind",
              "config_space")
Key = tuple[str, str, str | None, str, str]


def entry_key(entry: TreeEntry) -> Key:
    """Where a file sits, independent of the prefix the tree was unpacked under."""
    return (entry.collection, entry.source, entry.search, entry.split, entry.stem)


def record(row: dict[str, Any], default_row: int | None, arrays_sha256: str) -> dict[str, Any]:
    """One file's entry: the graph row's provenance columns, default row, arrays hash."""
    return {**{k: row.get(k) for k in ROW_FIELDS}, "default_row": default_row,
            "arrays_sha256": arrays_sha256}


def write_provenance(root: Path, files: dict[str, dict[str, Any]], tgt_version: str) -> None:
    """``files``: tree-relative path → :func:`record`."""
    body = {"format": FORMAT, "tgt_version": tgt_version, "files": dict(sorted(files.items()))}
    (root / PROVENANCE).write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")


def read_provenance(tree: Path) -> dict[Key, dict[str, Any]]:
    """Entries of the provenance file at ``tree`` or just above it (``tree`` = ``out/npz``)."""
    for folder in (tree, tree.parent):
        path = folder / PROVENANCE
        if path.is_file():
            break
    else:
        return {}
    try:
        body = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: unreadable provenance file: {exc}") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT \
            or not isinstance(body.get("files"), dict):
        raise DatasetError(f"{path}: not a {FORMAT} file (key 'format' or 'files')")
    out: dict[Key, dict[str, Any]] = {}
    for rel, info in body["files"].items():
        entry = parse_tree_path(rel)
        if entry is None or not isinstance(info, dict):
            raise DatasetError(f"{path}: files[{rel!r}] is not a tree file entry")
        out[entry_key(entry)] = info
    return out


def applies(info: dict[str, Any] | None, arrays_sha256: str) -> dict[str, Any] | None:
    """A file's recorded entry, if its arrays are still the ones exported (else ``None``)."""
    if info is None or info.get("arrays_sha256") != arrays_sha256:
        return None
    return info
