"""Register every catalog entry as a :class:`~tpugraphs_tools.programs.registry.Program`."""

from __future__ import annotations

import functools

from tpugraphs_tools.errors import UnknownProgramError
from tpugraphs_tools.programs.catalog import _composite, _decoders, _encoders, _vision
from tpugraphs_tools.programs.catalog._entry import PREFIX, PRESETS, CatalogEntry
from tpugraphs_tools.programs.registry import Program, ProgramArgs, register

ENTRIES: tuple[CatalogEntry, ...] = (*_decoders.ENTRIES, *_encoders.ENTRIES,
                                         *_vision.ENTRIES, *_composite.ENTRIES)


def catalog_entries() -> list[CatalogEntry]:
    """Every entry, sorted by program name (broken ones included, with their reason)."""
    return sorted(ENTRIES, key=lambda e: e.name)


def entry_of(program: str) -> CatalogEntry:
    """The entry behind ``keras_hub/<name>``."""
    for entry in ENTRIES:
        if entry.program_name == program:
            return entry
    raise UnknownProgramError(f"no catalog entry {program!r}")


def _build(entry: CatalogEntry, args: ProgramArgs):
    from tpugraphs_tools.programs.catalog._program import build

    return build(entry, args)


def _register_all() -> None:
    names = [e.name for e in ENTRIES]
    assert len(set(names)) == len(names), "duplicate catalog entry"
    for entry in ENTRIES:
        assert entry.program_name.startswith(PREFIX)
        defaults = {p: {"seq_len": d.seq or None, "image_size": d.image or None}
                    for p, d in entry.dims.items()}
        register(Program(
            name=entry.program_name, description=entry.description(), presets=PRESETS,
            build=functools.partial(_build, entry),
            defaults={p: {k: v for k, v in d.items() if v} for p, d in defaults.items()},
            origin="keras_hub", unavailable=entry.broken))


_register_all()


def catalog_status() -> list[str]:
    """Lines for `tgt programs` under the table: the extra to install, then the keras-hub
    classes that are not entries, with why (an entry is a keras-hub class with a published
    configuration the catalog builds at every preset; a class without one cannot be named)."""
    from tpugraphs_tools.programs.catalog._backend import INSTALL_HINT, keras_hub_version
    from tpugraphs_tools.programs.catalog._status import base_classes, missing_entries

    version = keras_hub_version()
    missing, bases = missing_entries(), base_classes()
    head = f"keras-hub catalog: {len(ENTRIES)} entries; "
    # without keras-hub, the install command on a line of its own: whole, to copy
    lines = ([f"{head}keras-hub {version} installed"] if version else
             [f"{head}keras-hub is not installed, building one needs:", f"  {INSTALL_HINT}"])
    return [*lines,
            f"keras-hub classes that are not entries ({len(missing) + len(bases)}): "
            f"`--program {PREFIX}<name>` cannot build them. An entry is a class with a "
            "published configuration that tgt builds at every preset; why each has none:",
            f"  {', '.join(bases)}: base classes, not models",
            *(f"  {cls}: {why}" for cls, why in missing.items())]
