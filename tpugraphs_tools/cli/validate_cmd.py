"""``tgt validate``: run every check over a dataset and report findings."""

from __future__ import annotations

import json
import sys

import click
from rich.table import Table

from tpugraphs_tools.cli._common import console, data_argument, handle_errors
from tpugraphs_tools.validate.report import Finding, Report


@click.command("validate")
@data_argument
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report.")
@click.option("--max-errors", type=click.IntRange(min=1), default=None,
              help="Stop recording findings after this many.")
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.option("--examples", default=5, show_default=True, help="Examples shown per fault class.")
@handle_errors
def validate(data: str, as_json: bool, max_errors: int | None, strict: bool,
             examples: int) -> None:
    """Check DATA (default data/) and exit 0 if clean, 1 on findings, 2 on usage errors.

    \b
    Example:
      tgt validate data/
      tgt validate data/ --json --strict
    """
    from tpugraphs_tools.validate import validate_path

    report = validate_path(data, max_errors=max_errors)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        _render(report, examples)
    sys.exit(0 if report.ok(strict=strict) else 1)


def _render(report: Report, examples: int) -> None:
    findings = report.findings
    if not findings:
        console.print(f"[green]✓[/] {report.root}: clean "
                      f"({report.files_checked} files checked)")
        return
    table = Table(title=f"validation findings in {report.root}")
    table.add_column("class", style="bold")
    table.add_column("severity")
    table.add_column("count", justify="right")
    table.add_column("examples", overflow="fold")
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.check, []).append(f)
    for check, items in sorted(groups.items()):
        lines = "\n".join(f"{f.location()}: {f.message}" for f in items[:examples])
        colour = "red" if items[0].severity == "error" else "yellow"
        table.add_row(check, f"[{colour}]{items[0].severity}[/]", str(len(items)), lines)
    console.print(table)
    console.print(f"{len(report.errors)} errors, {len(report.warnings)} warnings"
                  + (" (truncated by --max-errors)" if report.truncated else ""))
