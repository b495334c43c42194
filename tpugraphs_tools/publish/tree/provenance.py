"""What a tgt export knows that the official npz keys cannot carry, for ``tgt import``.

``tgt export`` writes ``tgt-provenance.json`` at the tree root: per file, the graph's backend,
device, config space, program, arguments and its default config row. Tree readers only glob
``*.npz``, so the file is invisible to them; ``tgt import`` applies an entry only when the
file's arrays still hash to the recorded value, so an edited tree falls back to the defaults.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.format import TreeEntry, parse_tree_path

PROVENANCE = "tgt-provenance.json"
FORMAT = "tgt-export-provenance/1"
ROW_FIELDS = ("graph_id", "program", "program_args", "hlo_stage", "backend", "device_kind",
              "config_space")
Key = tuple[str, str, str | None, str, str]


class ProvenanceEntry(TypedDict):
    """One exported file: its graph row's provenance columns (``ROW_FIELDS``, None where the
    row had none), the file's default config row and the hash of its arrays."""

    graph_id: str | None
    program: str | None
    program_args: str | None     # the graph row's JSON text
    hlo_stage: str | None
    backend: str | None
    device_kind: str | None
    config_space: str | None
    # always written; an entry without it lets import find the default from the arrays
    default_row: NotRequired[int | None]
    arrays_sha256: str


def entry_key(entry: TreeEntry) -> Key:
    """Where a file sits, independent of the prefix the tree was unpacked under."""
    return (entry.collection, entry.source, entry.search, entry.split, entry.stem)


def record(row: Mapping[str, Any], default_row: int | None, arrays_sha256: str
           ) -> ProvenanceEntry:
    """One file's entry: the graph row's provenance columns, default row, arrays hash."""
    return ProvenanceEntry(
        graph_id=row.get("graph_id"), program=row.get("program"),
        program_args=row.get("program_args"), hlo_stage=row.get("hlo_stage"),
        backend=row.get("backend"), device_kind=row.get("device_kind"),
        config_space=row.get("config_space"), default_row=default_row,
        arrays_sha256=arrays_sha256)


def write_provenance(root: Path, files: dict[str, ProvenanceEntry], tgt_version: str) -> None:
    """``files``: tree-relative path → :func:`record`."""
    body = {"format": FORMAT, "tgt_version": tgt_version, "files": dict(sorted(files.items()))}
    (root / PROVENANCE).write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")


def read_provenance(tree: Path) -> dict[Key, ProvenanceEntry]:
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
    out: dict[Key, ProvenanceEntry] = {}
    for rel, info in body["files"].items():
        entry = parse_tree_path(rel)
        if entry is None or not isinstance(info, dict):
            raise DatasetError(f"{path}: files[{rel!r}] is not a tree file entry")
        out[entry_key(entry)] = _entry(info, f"{path}: files[{rel!r}]")
    return out


def _entry(info: dict[str, Any], where: str) -> ProvenanceEntry:
    """Check one entry read from JSON: mistyped values would otherwise reach the tables."""
    for key in ROW_FIELDS:
        if not isinstance(info.get(key), str | None):
            raise DatasetError(f"{where}.{key} must be a string or null, not "
                               f"{info.get(key)!r}")
    default = info.get("default_row")
    if default is not None and (not isinstance(default, int) or isinstance(default, bool)):
        raise DatasetError(f"{where}.default_row must be an integer or null, not {default!r}")
    if not isinstance(info.get("arrays_sha256"), str):
        raise DatasetError(f"{where}.arrays_sha256 must be a string, not "
                           f"{info.get('arrays_sha256')!r}")
    entry = record(info, default, info["arrays_sha256"])
    if "default_row" not in info:
        del entry["default_row"]
    return entry


def applies(info: ProvenanceEntry | None, arrays_sha256: str) -> ProvenanceEntry | None:
    """A file's recorded entry, if its arrays are still the ones exported (else ``None``)."""
    if info is None or info["arrays_sha256"] != arrays_sha256:
        return None
    return info
