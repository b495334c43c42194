"""``tgt programs``: list the program zoo."""

from __future__ import annotations

import click
from rich.table import Table

from tpugraphs_tools.cli._common import console, handle_errors


@click.command("programs")
@click.option("--sizes", is_flag=True, help="Lower each program at --preset and show its "
              "instruction count (slow for big presets).")
@click.option("--preset", default="tiny", show_default=True, help="Preset used by --sizes.")
@handle_errors
def programs(sizes: bool, preset: str) -> None:
    """List registered JAX programs, their presets and (optionally) graph sizes.

    \b
    Example:
      tgt programs
      tgt programs --sizes --preset tiny
    """
    from tpugraphs_tools.programs import list_programs

    table = Table(title="tgt program zoo")
    table.add_column("program", style="bold")
    table.add_column("presets")
    table.add_column("description")
    if sizes:
        table.add_column(f"instructions ({preset}, infer/train)", justify="right")
    for prog in list_programs():
        cells = [prog.name, ", ".join(prog.presets), prog.description]
        if sizes:
            cells.append(_sizes(prog, preset))
        table.add_row(*cells)
    console.print(table)


def _sizes(prog: object, preset: str) -> str:
    from tpugraphs_tools.hlo import parse_hlo_text
    from tpugraphs_tools.programs import default_args, lower

    if preset not in prog.presets:  # type: ignore[attr-defined]
        return "-"
    counts = []
    for mode in ("infer", "train"):
        lowered = lower(prog, default_args(prog, preset, mode=mode))  # type: ignore[arg-type]
        counts.append(str(parse_hlo_text(lowered.as_text(dialect="hlo")).instruction_count))
    return " / ".join(counts)
