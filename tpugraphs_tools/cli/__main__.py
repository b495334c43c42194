"""``python -m tpugraphs_tools.cli`` — the same as the ``tgt`` console script."""

from tpugraphs_tools.cli import main

main(prog_name="tgt")
