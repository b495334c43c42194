"""The ``tgt`` command: a thin click group; each command lives in its own module."""

from __future__ import annotations

import click

from tpugraphs_tools import __version__
from tpugraphs_tools.cli.collect_cmd import collect
from tpugraphs_tools.cli.programs_cmd import programs
from tpugraphs_tools.cli.validate_cmd import validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tgt")
def main() -> None:
    """tgt: build, validate and publish TpuGraphs-style datasets from JAX programs or HLO.

    \b
    Typical session:
      tgt programs
      tgt collect --program resnet50
      tgt validate data/
    """


for command in (programs, collect, validate):
    main.add_command(command)

__all__ = ["main"]
