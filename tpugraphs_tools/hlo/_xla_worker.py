"""Child process that runs XLA's HLO parser on one module (see ``xla.py``).

A separate process on purpose (only the version shim and jaxlib are imported): XLA aborts
the whole process on some malformed modules, so the parser never runs in the caller's process.
stdin: the module (text or serialized HloModuleProto); argv[1]: "text" or "proto".
stdout: JSON {"text": printed module or null, "async": {start: [computation, [names]]}}.
Exit 3: XLA refused the module (its message on stderr); exit 4: no jaxlib.
"""

import json
import sys
from typing import Any


def _hlo() -> Any:
    """XLA's HLO bindings, found the way tgt's version shim finds them (jaxlib moves them)."""
    try:
        from tpugraphs_tools._xla_compat import hlo_bindings
    except ImportError:
        sys.exit(4)
    try:
        return hlo_bindings()
    except Exception:  # no binding in this jaxlib: the caller falls back to tgt's own checks
        sys.exit(4)


def _async_names(hlo: Any, module: Any) -> dict[str, list[Any]]:
    """{async-start name: [wrapped computation, [its instruction names]]}."""
    owner: dict[str, str] = {}
    starts: list[Any] = []
    comps: dict[str, list[str]] = {}
    for comp in module.computations():
        names: list[str] = []
        for inst in comp.instructions():
            names.append(inst.name)
            owner[inst.name] = comp.name
            if inst.opcode == hlo.HloOpcode.kAsyncStart:
                starts.append(inst)
        comps[comp.name] = names
    out: dict[str, list[Any]] = {}
    for inst in starts:
        wrapped = owner.get(inst.async_wrapped_root().name)
        if wrapped is not None:
            out[inst.name] = [wrapped, comps[wrapped]]
    return out


def main() -> None:
    mode = sys.argv[1]
    data = sys.stdin.buffer.read()
    hlo = _hlo()
    try:
        if mode == "proto":
            module = hlo.HloModule.from_serialized_hlo_module_proto(data)
        else:
            module = hlo.hlo_module_from_text(data.decode("utf-8"))
    except Exception as exc:  # XLA's own status errors
        sys.stderr.write(str(exc))
        sys.exit(3)
    text = module.to_string() if mode == "proto" else None
    shown = text if text is not None else data.decode("utf-8")
    wrapped: dict[str, list[Any]] = {}
    if "-start" in shown:
        try:
            wrapped = _async_names(hlo, module)
        except AttributeError:  # jaxlib 0.9 binds no HLO introspection: tgt names them itself
            wrapped = {}
    sys.stdout.write(json.dumps({"text": text, "async": wrapped}))


if __name__ == "__main__":
    main()
