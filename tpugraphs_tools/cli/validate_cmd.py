"""``tgt validate``: run every check over a dataset and report findings."""

from __future__ import annotations

import json

import click
from rich.table import Table
from rich.text import Text

from tpugraphs_tools.cli._common import DEFAULT_DATA, handle_errors, plural, terminal
from tpugraphs_tools.cli._options import check_executor, executor_options
from tpugraphs_tools.validate import CLASSES, Finding, Report


@click.command("validate")
@click.argument("data", required=False, default=DEFAULT_DATA,
                type=click.Path(exists=True, file_okay=True, dir_okay=True))
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report.")
@click.option("--max-errors", type=click.IntRange(min=1), default=None,
              help="Stop after this many errors (the report says it was truncated).")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@click.option("--examples", type=click.IntRange(min=0), default=5, show_default=True,
              help="Examples shown per check in the human report.")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0,
              help="Processes checking npz files (0: one per core). Findings do not depend "
                   "on it.")
@executor_options("Where files are read: local processes (--jobs) or tasks on a Ray cluster "
                  "(files on a filesystem every node sees).")
@handle_errors
def validate(data: str, as_json: bool, max_errors: int | None, strict: bool,
             examples: int, jobs: int, executor: str, address: str | None) -> None:
    """Check DATA (default data/) and exit 0 if clean, 1 on findings, 2 on usage errors.

    DATA is a tgt dataset (manifest.json), an official TpuGraphs tree (npz/layout/...,
    npz/tile/...), a directory of npz files or a single npz. Files are read one at a time and
    never modified.

    \b
    Example:
      tgt validate data/
      tgt validate data/ --json --strict
      tgt validate ~/tpugraphs/npz/layout/xla/default --max-errors 50
    """
    from tpugraphs_tools.parallel import default_jobs
    from tpugraphs_tools.validate import validate_path

    check_executor(executor, address)
    report = validate_path(data, max_errors=max_errors, jobs=jobs or default_jobs(),
                           executor=executor, address=address)
    if as_json:
        terminal.raw(json.dumps({**report.to_json(), "ok": report.ok(strict=strict),
                                 "strict": strict}, indent=2))
    else:
        _render(report, examples, strict)
    raise SystemExit(0 if report.ok(strict=strict) else 1)


def _render(report: Report, examples: int, strict: bool) -> None:
    """One table per fault class: check id (red error / yellow warning), count, examples."""
    findings = report.findings
    head = f"{report.root} ({report.kind}, {report.files_checked} files checked)"
    if not findings:
        terminal.success(f"{head}: clean", highlight=False)
        return
    by_class: dict[str, dict[str, list[Finding]]] = {}
    for f in findings:
        by_class.setdefault(f.fault_class, {}).setdefault(f.check, []).append(f)
    terminal.print(f"validation findings: {head}", highlight=False)
    order = {c: i for i, c in enumerate(CLASSES)}
    for cls in sorted(by_class, key=lambda c: order.get(c, 99)):
        groups = by_class[cls]
        table = Table(title=f"{cls} ({sum(len(v) for v in groups.values())})",
                      title_justify="left", show_lines=True)
        table.add_column("check", no_wrap=True)
        table.add_column("count", justify="right")
        table.add_column("examples (file[key]@index: message)", overflow="fold")
        for check, items in sorted(groups.items()):
            shown = items[:examples]
            lines = [f"{f.location()}: {f.message}" for f in shown]
            if len(items) > len(shown):
                lines.append(f"… {len(items) - len(shown)} more")
            colour = "red" if items[0].severity == "error" else "yellow"
            table.add_row(Text(check, style=colour), str(len(items)), "\n".join(lines))
        terminal.print(table)
    verdict = (Text("FAIL", style="red") if not report.ok(strict=strict)
               else Text("OK (warnings)", style="yellow"))
    terminal.print(Text.assemble(verdict, f": {plural(len(report.errors), 'error')}, "
                                 f"{plural(len(report.warnings), 'warning')}"
                                 + (" (stopped early: --max-errors)" if report.truncated else "")))
