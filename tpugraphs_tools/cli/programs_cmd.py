"""``tgt programs``: list the program zoo with presets and graph sizes."""

from __future__ import annotations

import click
from rich.table import Table

from tpugraphs_tools.cli._common import handle_errors, terminal


@click.command("programs")
@click.option("--measure", "measure_preset", default=None, metavar="PRESET",
              help="Lower every program at PRESET now and show live instruction counts "
                   "(slow for big presets) instead of the recorded ones.")
@handle_errors
def programs(measure_preset: str | None) -> None:
    """List registered JAX programs: description, presets, HLO size per preset.

    Sizes are instructions of the un-optimized HLO (all computations, batch 1, float32) in
    infer / train mode, as recorded by `python -m tpugraphs_tools.programs.sizes --json`.
    The keras-hub catalog (`keras_hub/<name>`, the `catalog` extra) follows the zoo, then the
    keras-hub classes it has no entry for, with the reason.

    \b
    Example:
      tgt programs
      tgt programs --measure tiny
    """
    from tpugraphs_tools.programs import catalog_status, list_programs
    from tpugraphs_tools.programs.sizes import measure, recorded_sizes

    recorded = recorded_sizes()
    sizes = recorded.get("sizes", {})
    title = "tgt program zoo"
    if measure_preset:
        title += f" (sizes measured now at preset {measure_preset})"
    elif recorded:
        title += f" (sizes recorded with jax {recorded.get('jax')}, infer / train)"
    table = Table(title=title)
    table.add_column("program", style="bold")
    table.add_column("description")
    table.add_column("preset: instructions (infer / train)")
    unrecorded: dict[str, list[str]] = {}  # preset -> zoo programs it has no size of
    catalog_unrecorded = False
    for prog in list_programs():
        if prog.unavailable:
            cell = f"cannot be built: {prog.unavailable}"
        elif measure_preset and measure_preset in prog.presets:
            counts = [measure(prog.name, measure_preset, m) for m in ("infer", "train")]
            cell = f"{measure_preset}: {counts[0]:,} / {counts[1]:,}"
        elif measure_preset:
            cell = f"(no preset {measure_preset})"
        else:
            known = sizes.get(prog.name, {})
            missing = [p for p in prog.presets if p not in known]
            if prog.origin != "zoo" and missing:
                catalog_unrecorded = True
            else:
                for preset in missing:
                    unrecorded.setdefault(preset, []).append(prog.name)
            cell = "\n".join([f"{p}: {known[p][0]:,} / {known[p][1]:,}"
                              for p in prog.presets if p in known]
                             + ([f"{', '.join(missing)}: not recorded (see below)"]
                                if missing else []))
        table.add_row(prog.name, prog.description, cell)
    terminal.print(table)
    for line in _unrecorded_notes(unrecorded, catalog_unrecorded, sizes):
        terminal.note("no size", line)
    for line in catalog_status():
        terminal.print(line, highlight=False)


def _unrecorded_notes(unrecorded: dict[str, list[str]], catalog: bool,
                      sizes: dict[str, dict[str, list[int]]]) -> list[str]:
    """Why a cell says "not recorded", and how to get the figure now."""
    order = ("tiny", "small", "base", "medium", "large")
    held = sorted({p for per_preset in sizes.values() for p in per_preset},
                  key=lambda p: (order.index(p) if p in order else len(order), p))
    lines = []
    if catalog:
        lines.append("keras_hub/* entries: the recorded sizes cover the zoo only (a catalog "
                     "entry needs the optional keras-hub, and a keras-hub release can change "
                     "its graph); `tgt programs --measure tiny` lowers every program now (minutes)")
    for preset, names in sorted(unrecorded.items()):
        lines.append(f"preset {preset} of {', '.join(names)}: the recorded sizes hold presets "
                     f"{', '.join(held) or 'none'} only; `tgt programs --measure {preset}` "
                     "lowers it now")
    return lines
