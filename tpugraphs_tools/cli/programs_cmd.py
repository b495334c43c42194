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
    for prog in list_programs():
        if measure_preset and not prog.unavailable:
            if measure_preset in prog.presets:
                counts = [measure(prog.name, measure_preset, m) for m in ("infer", "train")]
                cell = f"{measure_preset}: {counts[0]:,} / {counts[1]:,}"
            else:
                cell = f"(no preset {measure_preset})"
        else:
            known = sizes.get(prog.name, {})
            cell = "\n".join(
                f"{p}: {known[p][0]:,} / {known[p][1]:,}" if p in known else f"{p}: -"
                for p in prog.presets)
        if prog.unavailable:
            cell = f"cannot be built: {prog.unavailable}"
        table.add_row(prog.name, prog.description, cell)
    terminal.print(table)
    for line in catalog_status():
        terminal.print(line)
