"""Findings and the report that collects them: one class per fault, with a precise location."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from tpugraphs_tools.validate.catalog import ERROR, WARNING, fault_class, severity

__all__ = ["ERROR", "WARNING", "Finding", "Report"]


@dataclass(frozen=True)
class Finding:
    """A fault: ``check`` is its id (e.g. ``graph.edge_out_of_range``), ``file`` relative to
    the validated root, ``key`` an npz key or table column, ``index`` a row / element index."""

    check: str
    message: str
    file: str
    key: str | None = None
    index: int | None = None
    severity: str = ERROR

    @property
    def fault_class(self) -> str:
        return fault_class(self.check)

    def location(self) -> str:
        loc = self.file
        if self.key is not None:
            loc += f"[{self.key}]"
        if self.index is not None:
            loc += f"@{self.index}"
        return loc

    def to_json(self) -> dict[str, Any]:
        return {"class": self.fault_class, **asdict(self)}


@dataclass
class Report:
    root: str
    kind: str = "tgt"
    max_errors: int | None = None
    findings: list[Finding] = field(default_factory=list)
    files_checked: int = 0
    truncated: bool = False
    _error_count: int = field(default=0, repr=False)

    def add(self, finding: Finding) -> None:
        """Record ``finding`` unless ``max_errors`` errors were already recorded."""
        if self.full:
            self.truncated = True
            return
        self.findings.append(finding)
        if finding.severity == ERROR:
            self._error_count += 1
        if self.full:  # the runner stops checking now, so later faults go unreported
            self.truncated = True

    def emit(self, check: str, message: str, file: str, key: str | None = None,
             index: int | None = None) -> None:
        """Record a finding with the catalog's severity for ``check``."""
        self.add(Finding(check, message, file, key, None if index is None else int(index),
                         severity(check)))

    @property
    def full(self) -> bool:
        """True once ``max_errors`` errors are in: callers stop early instead of wasting time."""
        return self.max_errors is not None and self._error_count >= self.max_errors

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    def counts(self) -> Counter[str]:
        return Counter(f.check for f in self.findings)

    def checks(self) -> set[str]:
        return {f.check for f in self.findings}

    def ok(self, strict: bool = False) -> bool:
        return not self.errors and not (strict and self.warnings)

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "kind": self.kind, "files_checked": self.files_checked,
                "errors": len(self.errors), "warnings": len(self.warnings),
                "truncated": self.truncated,
                "classes": dict(Counter(f.fault_class for f in self.findings)),
                "counts": dict(self.counts()),
                "findings": [f.to_json() for f in self.findings]}
