"""The ``tgt`` command: a thin click group; each command lives in its own module."""

from __future__ import annotations

import click

from tpugraphs_tools import __version__
from tpugraphs_tools.cli import _process  # noqa: F401  (first: Arrow's allocator, see there)
from tpugraphs_tools.cli.baseline_cmd import baseline
from tpugraphs_tools.cli.collect_cmd import collect
from tpugraphs_tools.cli.export_cmd import export
from tpugraphs_tools.cli.import_cmd import import_
from tpugraphs_tools.cli.partition_cmd import partition
from tpugraphs_tools.cli.programs_cmd import programs
from tpugraphs_tools.cli.publish_cmd import publish
from tpugraphs_tools.cli.report_cmd import report
from tpugraphs_tools.cli.validate_cmd import validate
from tpugraphs_tools.measure import share_device_memory


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tgt")
def main() -> None:
    """tgt: build, validate and publish TpuGraphs-style datasets from JAX programs or HLO.

    \b
    Example session:
      tgt programs
      tgt collect --program resnet50
      tgt validate data/
    """
    share_device_memory()  # before any jax backend starts: tgt's worker processes share a GPU


for command in (programs, collect, validate, partition, baseline, export, import_, publish, report):
    main.add_command(command)

__all__ = ["main"]
