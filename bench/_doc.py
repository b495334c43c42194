"""Write one benchmark's section into docs/benchmarks.md (sections are '## ' headings), or into
a page of full tables under docs/benchmarks/ for the few benchmarks whose tables outgrow it."""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
DETAILS = DOC.parent / "benchmarks"  # full tables: catalog-breadth.md, cost-model.md


def heading_id(title: str) -> str:
    """The anchor GitHub gives the ``## title`` heading (for links between the pages)."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def write_section(title: str, body: str, command: str, doc: Path = DOC) -> None:
    """Replace (or append) the ``## title`` section of ``doc``, stamped with the date and the
    command."""
    stamp = dt.date.today().isoformat()
    section = f"## {title}\n\nMeasured {stamp} with `{command}`.\n\n{body.strip()}\n"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _m: section + "\n", text)
    else:
        text = text.rstrip() + "\n\n" + section
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)


def portable_arg(arg: str, root: Path = DOC.parent.parent) -> str:
    """An argument as a reader can type it: paths inside the repository relative to it, other
    absolute paths (save dirs, scratch) by their last component, so docs name no one machine."""
    if not arg.startswith("/"):
        return arg
    path = Path(arg)
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return path.name or arg


def record(title: str, body: str, doc: Path = DOC) -> None:
    """``write_section`` with the command line that is running now."""
    args = [portable_arg(arg) for arg in sys.argv[1:]]
    command = " ".join(["python", f"bench/{Path(sys.argv[0]).name}", *args])
    write_section(title, body, command, doc)
