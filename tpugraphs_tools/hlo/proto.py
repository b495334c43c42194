"""Serialized ``HloModuleProto`` → text, through jaxlib's own HLO bindings (in process).

jaxlib ships no ``hlo_pb2``; its HloModule binding reads a proto and prints canonical HLO text,
which the text reader then parses, so both inputs go through one parser. Used for protos tgt
wrote itself (datasets' ``.hlo.pb``); files from elsewhere go through ``xla.py``'s child process.
"""

from __future__ import annotations

from tpugraphs_tools.errors import HloParseError


def proto_to_text(data: bytes, source: str = "<proto>") -> str:
    from tpugraphs_tools._xla_compat import hlo_module_from_proto

    try:
        module = hlo_module_from_proto(data)
    except Exception as exc:  # jaxlib raises its own runtime errors
        raise HloParseError(f"not a serialized HloModuleProto: {exc}", source=source) from None
    return module.to_string()
