"""Decode the official TpuGraphs raw tuning protos (``tpu_graphs/proto/tuning.proto``).

The message classes are built at run time from a descriptor written here, holding only the
fields tgt reads, with the official field numbers: no protoc step and no generated module from
elsewhere. Fields not declared are skipped by the parser. The embedded ``xla.HloModuleProto`` is
declared as ``bytes`` (wire-compatible with a message field), so it reaches tgt's HLO reader as
the file holds it. A file is either one ``ModuleTuningData`` (a layout module) or a
``TuningData`` (a list of them, e.g. tile kernels); which one is told from its top-level fields.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# protobuf ships no type stubs (types-protobuf is not a dependency)
from google.protobuf import (  # type: ignore[import-untyped]
    descriptor_pb2,
    descriptor_pool,
    message_factory,
)

from tpugraphs_tools.errors import TuningDataError

PACKAGE = "tgt.tuning"  # our own pool and package: never clashes with a real tpu_graphs_pb2
OFFICIAL = "tpu_graphs"  # the package the official messages live in (for messages to users)

_F = descriptor_pb2.FieldDescriptorProto
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

# message -> (field name, number, type, label, message type or None, oneof index or None)
_FIELDS: dict[str, list[tuple[str, int, int, int, str | None, int | None]]] = {
    "TuningData": [("modules", 1, _F.TYPE_MESSAGE, _REPEATED, "ModuleTuningData", None)],
    "ModuleTuningData": [
        ("module", 1, _F.TYPE_BYTES, _OPTIONAL, None, None),  # xla.HloModuleProto, kept raw
        ("fingerprint", 2, _F.TYPE_UINT64, _OPTIONAL, None, None),
        ("runs", 3, _F.TYPE_MESSAGE, _REPEATED, "ConfigProfile", None),
        ("config_index_to_node", 4, _F.TYPE_UINT64, _REPEATED, None, None),
    ],
    "ConfigProfile": [
        ("op_config", 1, _F.TYPE_MESSAGE, _OPTIONAL, "HloOpConfig", 0),
        ("module_config", 2, _F.TYPE_MESSAGE, _OPTIONAL, "HloModuleConfig", 0),
        ("error", 3, _F.TYPE_BOOL, _OPTIONAL, None, None),
        ("profile", 4, _F.TYPE_MESSAGE, _OPTIONAL, "ExecutionProfile", None),
        ("is_default", 5, _F.TYPE_BOOL, _OPTIONAL, None, None),
    ],
    "HloOpConfig": [("tile_size_config", 1, _F.TYPE_MESSAGE, _OPTIONAL, "TileSizeConfig", None)],
    "TileSizeConfig": [
        ("kernel_bounds", 1, _F.TYPE_INT64, _REPEATED, None, None),
        ("output_bounds", 2, _F.TYPE_INT64, _REPEATED, None, None),
        ("input_bounds", 3, _F.TYPE_INT64, _REPEATED, None, None),
        ("iteration_bounds", 4, _F.TYPE_INT64, _REPEATED, None, None),
    ],
    "HloModuleConfig": [("layout_config", 1, _F.TYPE_MESSAGE, _OPTIONAL, "LayoutConfig", None)],
    "LayoutConfig": [("nodes", 1, _F.TYPE_MESSAGE, _REPEATED, "NodeLayoutConfig", None)],
    "NodeLayoutConfig": [("tensors", 1, _F.TYPE_MESSAGE, _REPEATED, "TensorLayoutConfig", None)],
    "TensorLayoutConfig": [("dims", 1, _F.TYPE_INT32, _REPEATED, None, None)],
    # xla.ExecutionProfile (xla/xla_data.proto): the runtime the official encoder reads.
    "ExecutionProfile": [("compute_time_ns", 4, _F.TYPE_INT64, _OPTIONAL, None, None)],
}
_ONEOFS = {"ConfigProfile": ["config"]}


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The subset of tuning.proto (and xla's ExecutionProfile) that tgt reads."""
    fd = descriptor_pb2.FileDescriptorProto(name="tgt_tuning_subset.proto", package=PACKAGE,
                                            syntax="proto3")
    for name, fields in _FIELDS.items():
        msg = fd.message_type.add(name=name)
        for oneof in _ONEOFS.get(name, []):
            msg.oneof_decl.add(name=oneof)
        for field_name, number, ftype, label, type_name, oneof_index in fields:
            field = msg.field.add(name=field_name, number=number, type=ftype, label=label)
            if type_name is not None:
                field.type_name = f".{PACKAGE}.{type_name}"
            if oneof_index is not None:
                field.oneof_index = oneof_index
    return fd


def _message_classes() -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor())
    get = getattr(message_factory, "GetMessageClass", None)
    factory = None if get is not None else message_factory.MessageFactory(pool)
    out = {}
    for name in _FIELDS:
        desc = pool.FindMessageTypeByName(f"{PACKAGE}.{name}")
        out[name] = get(desc) if get is not None else factory.GetPrototype(desc)  # type: ignore[union-attr]
    return out


MESSAGES = _message_classes()


# -- top-level wire scan: which message a file holds, and where a truncated one breaks ---------

def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise EOFError(pos)
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError(f"varint longer than 10 bytes at byte {pos}")


@dataclass(frozen=True)
class TopField:
    number: int
    start: int   # first payload byte
    end: int     # one past the last payload byte


def top_fields(data: bytes) -> Iterator[TopField]:
    """The top-level fields of a serialized message; ValueError(why, field number or None)
    names the byte where it breaks."""
    pos = 0
    while pos < len(data):
        try:
            key, pos = _varint(data, pos)
            number, wire = key >> 3, key & 7
            if number == 0:
                raise ValueError(f"field number 0 at byte {pos}")
            if wire == 0:
                start = pos
                _, pos = _varint(data, pos)
            elif wire == 1 or wire == 5:
                start, pos = pos, pos + (8 if wire == 1 else 4)
            elif wire == 2:
                length, start = _varint(data, pos)
                pos = start + length
            else:
                raise ValueError(f"wire type {wire} (field {number}) at byte {pos}")
        except EOFError as eof:
            raise ValueError(f"ends inside a field at byte {eof.args[0]} of {len(data)} "
                             "(truncated)", None) from None
        if pos > len(data):
            raise ValueError(f"field {number} at byte {start} declares {pos - start} bytes, "
                             f"only {len(data) - start} follow (truncated)", number)
        yield TopField(number, start, pos)


@dataclass
class TuningFile:
    """A decoded file: its message type (official name) and the ModuleTuningData it holds."""

    path: Path
    message: str                 # "ModuleTuningData" or "TuningData"
    modules: list[Any]           # ModuleTuningData messages, in file order


def _parse(cls: Any, data: bytes, path: Path, what: str) -> Any:
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

    msg = cls()
    try:
        msg.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise TuningDataError(f"{path}: {what} does not parse ({exc}); the file is truncated "
                              "or damaged") from None
    return msg


def _module_tuning(data: bytes, path: Path, where: str) -> Any:
    """One ModuleTuningData; a run that does not parse is named by its index."""
    try:
        return _parse(MESSAGES["ModuleTuningData"], data, path, where)
    except TuningDataError:
        try:
            runs = [f for f in top_fields(data) if f.number == 3]
        except ValueError as exc:
            raise TuningDataError(f"{path}: {where} is damaged: {exc.args[0]}") from None
        for i, f in enumerate(runs):
            _parse(MESSAGES["ConfigProfile"], data[f.start:f.end], path,
                   f"{where}.runs[{i}] ({OFFICIAL}.ConfigProfile)")
        raise


def scan_tuning_file(path: Path, data: bytes) -> tuple[str, list[TopField]]:
    """(message type, top-level fields) of a file, from its wire format alone (cheap: no
    parse); a truncated or foreign file is refused here with what it looked like."""
    if not data:
        raise TuningDataError(f"{path}: empty file (expected a {OFFICIAL}.ModuleTuningData or "
                              f"{OFFICIAL}.TuningData protobuf)")
    fields: list[TopField] = []
    try:
        fields.extend(top_fields(data))
    except ValueError as exc:
        why, number = exc.args[0], (exc.args[1] if len(exc.args) > 1 else None)
        seen = [f.number for f in fields]
        ours = set(seen) <= {1, 2, 3, 4} and number in (None, 1, 2, 3, 4)
        named = ("ModuleTuningData" if set(seen) & {2, 3, 4} else
                 "TuningData" if seen.count(1) >= 2 and set(seen) == {1} else None)
        both = f"{OFFICIAL}.ModuleTuningData or {OFFICIAL}.TuningData"
        what = (f"a truncated {OFFICIAL}.{named}" if ours and named and "truncated" in why
                else f"a truncated {both}" if ours and "truncated" in why
                else f"not a {both} protobuf")
        raise TuningDataError(f"{path}: {what}: {why}") from None
    numbers = {f.number for f in fields}
    if numbers & {2, 3, 4} and numbers <= {1, 2, 3, 4}:
        return "ModuleTuningData", fields
    if numbers == {1}:
        return "TuningData", fields
    raise TuningDataError(f"{path}: not a {OFFICIAL}.ModuleTuningData or "
                          f"{OFFICIAL}.TuningData: top-level fields "
                          f"{sorted(numbers)} (expected 1-4, or only 1)")


def read_tuning_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TuningDataError(f"{path}: cannot read: {exc.strerror or exc}") from None


def decode_tuning_file(path: str | Path, data: bytes | None = None) -> TuningFile:
    """Read ``path`` as a ModuleTuningData or a TuningData; TuningDataError on anything else."""
    path = Path(path)
    if data is None:
        data = read_tuning_bytes(path)
    name, fields = scan_tuning_file(path, data)
    if name == "ModuleTuningData":
        modules = [_module_tuning(data, path, f"{OFFICIAL}.{name}")]
    else:
        modules = [_module_tuning(data[f.start:f.end], path,
                                  f"{OFFICIAL}.TuningData.modules[{i}] "
                                  f"({OFFICIAL}.ModuleTuningData)")
                   for i, f in enumerate(fields)]
    return TuningFile(path, name, modules)
