"""Serialized ``HloModuleProto`` ⇄ text, through jaxlib's own HLO bindings.

jaxlib ships no ``hlo_pb2``; its HloModule binding reads a proto and prints canonical HLO text,
which the text reader then parses, so both inputs go through one parser.
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


def text_to_proto(text: str) -> bytes | None:
    """Proto bytes for HLO text XLA can parse; ``None`` when XLA's parser refuses it."""
    from tpugraphs_tools._xla_compat import hlo_module_from_text

    try:
        module = hlo_module_from_text(text)
    except Exception:
        return None
    return module.as_serialized_hlo_module_proto()
