"""Source file names in stored HLO without the collecting machine's directories.

jax records where each op was traced: an ``HloModuleProto`` holds a stack-frame index whose
``file_names`` are absolute paths (``/home/<user>/project/model.py``), and op metadata may
carry a ``source_file``; HLO text prints the latter as ``source_file="..."``. A dataset that
travels should not carry the collector's home, user name or temporary folders, so tgt stores
each name made relative to the installed package it belongs to (the part after
``site-packages``), the standard library, the current directory or tgt's own checkout, and
otherwise keeps only the file's base name. Nothing else in the module changes.

The proto is rewritten through a descriptor of just the fields touched (the official field
numbers of ``xla/service/hlo.proto`` and ``xla/xla_data.proto``); every other field passes
through as an unknown field, unchanged.
"""

from __future__ import annotations

import json
import os
import re
import sys
import sysconfig
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

PACKAGE = "tgt.hlo_paths"  # a pool of tgt's own: never clashes with a real hlo_pb2
_PACKAGE_DIRS = ("site-packages", "dist-packages")
_SOURCE_FILE = re.compile(r'(source_file=")([^"]*)(")')
# absolute POSIX paths in free text (XLA_FLAGS values such as --xla_dump_to=/home/u/dump)
_ABSOLUTE = re.compile(r"(?<![\w.~-])(/[^\s,;:'\"=]+)")


def _roots() -> list[Path]:
    """Folders a source file name is made relative to, longest first."""
    found: list[Path] = []
    for value in (sysconfig.get_paths().get("stdlib"), os.getcwd(),
                  str(Path(__file__).resolve().parents[2])):
        if value and Path(value).is_absolute() and Path(value) != Path(Path(value).anchor):
            found.append(Path(value))
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def portable_path(name: str) -> str:
    """``name`` without this machine's directories (relative names are kept as they are)."""
    if not name.startswith("/") and not (sys.platform == "win32" and os.path.isabs(name)):
        return name
    path = PurePosixPath(name) if name.startswith("/") else Path(name)
    parts = path.parts
    for marker in _PACKAGE_DIRS:
        if marker in parts:
            i = len(parts) - 1 - parts[::-1].index(marker)
            rest = parts[i + 1:]
            return "/".join(rest) if rest else path.name
    for root in _roots():
        try:
            return Path(name).relative_to(root).as_posix()
        except ValueError:
            continue
    return path.name


def portable_text(text: str) -> str:
    """Free text (an ``XLA_FLAGS`` value) with every absolute path made portable."""
    return _ABSOLUTE.sub(lambda m: portable_path(m.group(1)), text)


def absolute_paths(text: str) -> list[str]:
    """The absolute POSIX paths in free text (what :func:`portable_text` would rewrite)."""
    return [m.group(1) for m in _ABSOLUTE.finditer(text) if len(m.group(1)) > 1]


@cache
def _classes() -> dict[str, Any]:
    # protobuf ships no type stubs (types-protobuf is not a dependency)
    from google.protobuf import (  # type: ignore[import-untyped]
        descriptor_pb2,
        descriptor_pool,
        message_factory,
    )

    f = descriptor_pb2.FieldDescriptorProto
    opt, rep = f.LABEL_OPTIONAL, f.LABEL_REPEATED
    fields: dict[str, list[tuple[str, int, int, int, str | None]]] = {
        "HloModuleProto": [("computations", 3, f.TYPE_MESSAGE, rep, "HloComputationProto"),
                           ("stack_frame_index", 17, f.TYPE_MESSAGE, opt,
                            "StackFrameIndexProto")],
        "HloComputationProto": [("instructions", 2, f.TYPE_MESSAGE, rep,
                                 "HloInstructionProto")],
        "HloInstructionProto": [("metadata", 7, f.TYPE_MESSAGE, opt, "OpMetadata")],
        "OpMetadata": [("source_file", 3, f.TYPE_BYTES, opt, None)],
        "StackFrameIndexProto": [("file_names", 1, f.TYPE_BYTES, rep, None)],
    }
    fd = descriptor_pb2.FileDescriptorProto(name="tgt_hlo_paths.proto", package=PACKAGE,
                                            syntax="proto2")
    for name, declared in fields.items():
        msg = fd.message_type.add(name=name)
        for field_name, number, ftype, label, type_name in declared:
            field = msg.field.add(name=field_name, number=number, type=ftype, label=label)
            if type_name is not None:
                field.type_name = f".{PACKAGE}.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(
        f"{PACKAGE}.{name}")) for name in fields}


def _names(module: Any) -> Iterator[tuple[Any, str, int | None]]:
    """(message, field, index) of every file name in a parsed module."""
    for i in range(len(module.stack_frame_index.file_names)):
        yield module.stack_frame_index, "file_names", i
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.HasField("metadata") and inst.metadata.source_file:
                yield inst.metadata, "source_file", None


def _parse(data: bytes) -> Any:
    module = _classes()["HloModuleProto"]()
    module.ParseFromString(data)
    return module


def proto_source_files(data: bytes) -> list[str]:
    """The source file names an ``HloModuleProto`` records (stack frames and op metadata)."""
    out = []
    for msg, name, i in _names(_parse(data)):
        value = getattr(msg, name) if i is None else getattr(msg, name)[i]
        out.append(bytes(value).decode("utf-8", "replace"))
    return out


def portable_proto(data: bytes, rename: Callable[[str], str] = portable_path) -> bytes:
    """``data`` (a serialized ``HloModuleProto``) with every source file name renamed;
    the bytes as given when no name changes."""
    module = _parse(data)
    changed = False
    for msg, name, i in _names(module):
        old = bytes(getattr(msg, name) if i is None else getattr(msg, name)[i])
        new = rename(old.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        if new != old:
            changed = True
            if i is None:
                setattr(msg, name, new)
            else:
                getattr(msg, name)[i] = new
    return module.SerializeToString() if changed else data


def text_source_files(text: str) -> list[str]:
    """The ``source_file`` names in HLO text metadata."""
    return [m.group(2) for m in _SOURCE_FILE.finditer(text)]


def portable_hlo_text(text: str) -> str:
    """HLO text with every ``source_file="..."`` made portable."""
    return _SOURCE_FILE.sub(lambda m: m.group(1) + portable_path(m.group(2)) + m.group(3), text)


def portable_stored_hlo(data: bytes, suffix: str) -> bytes:
    """A stored HLO file's bytes (``.hlo.pb`` proto or ``.hlo.txt`` text) made portable."""
    if suffix.endswith(".pb"):
        return portable_proto(data)
    return portable_hlo_text(data.decode("utf-8", "surrogateescape")).encode(
        "utf-8", "surrogateescape")


def stored_source_files(data: bytes, suffix: str) -> list[str]:
    """The source file names a stored HLO file records."""
    if suffix.endswith(".pb"):
        return proto_source_files(data)
    return text_source_files(data.decode("utf-8", "replace"))


def portable_graph_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A graphs-table row without this machine's directories: ``source_path``, an HLO file's
    ``program_args`` ``file`` and the paths in ``xla_flags``."""
    out = dict(row)
    if isinstance(out.get("source_path"), str):
        out["source_path"] = portable_path(out["source_path"])
    if isinstance(out.get("xla_flags"), str):
        out["xla_flags"] = portable_text(out["xla_flags"])
    try:
        args = json.loads(out.get("program_args") or "{}")
    except (TypeError, ValueError):
        return out
    if isinstance(args, dict) and isinstance(args.get("file"), str):
        args["file"] = portable_path(args["file"])
        out["program_args"] = json.dumps(args, sort_keys=True)
    return out
