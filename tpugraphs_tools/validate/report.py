"""Findings and the report that collects them: one class per fault, with a precise location."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    """A fault: ``check`` is its class (e.g. ``graph.edge_out_of_range``), ``file`` relative to
    the validated root, ``key`` an npz key or table column, ``index`` a row / element index."""

    check: str
    message: str
    file: str
    key: str | None = None
    index: int | None = None
    severity: str = ERROR

    def location(self) -> str:
        loc = self.file
        if self.key is not None:
            loc += f"[{self.key}]"
        if self.index is not None:
            loc += f"@{self.index}"
        return loc


@dataclass
class Report:
    root: str
    kind: str = "tgt"
    max_errors: int | None = None
    findings: list[Finding] = field(default_factory=list)
    files_checked: int = 0
    truncated: bool = False

    def add(self, finding: Finding) -> None:
        if self.max_errors is not None and len(self.findings) >= self.max_errors:
            self.truncated = True
            return
        self.findings.append(finding)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    def counts(self) -> Counter[str]:
        return Counter(f.check for f in self.findings)

    def ok(self, strict: bool = False) -> bool:
        return not self.errors and not (strict and self.warnings)

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "kind": self.kind, "files_checked": self.files_checked,
                "errors": len(self.errors), "warnings": len(self.warnings),
                "truncated": self.truncated, "counts": dict(self.counts()),
                "findings": [asdict(f) for f in self.findings]}
