"""Per-file npz checks as picklable jobs, so a process pool can run them (``--jobs``).

A job checks one file into a report of its own and returns its findings; the caller adds them
to the real report in file order, so findings are the same for any number of processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tpugraphs_tools.validate.npz_file import NpzSummary, check_npz
from tpugraphs_tools.validate.report import Finding, Report


@dataclass(frozen=True)
class NpzJob:
    """One npz to check; ``before``: findings to report ahead of the file's own (e.g. a
    missing HLO of the same graph), carried along to keep the order."""

    path: Path | None
    rel: str
    collection: str | None
    hidden_runtimes_ok: bool
    max_array_bytes: int
    before: tuple[Finding, ...] = ()
    tag: str = ""
    # Layout groups may be partial minor_to_major prefixes: TpuGraphs' own (TPU) data.
    partial_layouts_ok: bool = False


@dataclass(frozen=True)
class NpzResult:
    job: NpzJob
    findings: tuple[Finding, ...]
    summary: NpzSummary | None
    checked: int


def run_npz_job(job: NpzJob) -> NpzResult:
    """Check the file (nothing when ``job.path`` is None) into a fresh report."""
    if job.path is None:
        return NpzResult(job, (), None, 0)
    report = Report(root="")
    summary = check_npz(job.path, job.rel, job.collection, report,
                        hidden_runtimes_ok=job.hidden_runtimes_ok,
                        partial_layouts_ok=job.partial_layouts_ok,
                        max_array_bytes=job.max_array_bytes)
    return NpzResult(job, tuple(report.findings), summary, report.files_checked)


def merge(result: NpzResult, report: Report) -> None:
    """Add a job's findings (the ``before`` ones first) to ``report``."""
    for finding in (*result.job.before, *result.findings):
        report.add(finding)
    report.files_checked += result.checked
