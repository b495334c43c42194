"""XLA's verdict on a module from a file: its own parser, run in a child process.

A module XLA refuses is refused here with XLA's message and the line it names, on one line.
The child process matters: XLA aborts the process (a C++ CHECK, e.g. ``partition-id`` with a
non-``u32[]`` shape) on some malformed modules, which must not take the caller down with it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tpugraphs_tools.errors import HloParseError

_WORKER = Path(__file__).with_name("_xla_worker.py")
_PARSING = re.compile(r"was parsing (\d+):(\d+): error: ([^\n]*)")
_CHECK = re.compile(r"Check failed: ([^\n]*)")
_TIMEOUT_S = 600


@dataclass
class XlaVerdict:
    """XLA accepted the module; ``text`` is its print of a proto (None for text input)."""

    available: bool
    text: str | None = None
    async_names: dict[str, list] = field(default_factory=dict)


def _one_line(message: str, limit: int = 400) -> str:
    text = " ".join(message.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def refusal(message: str, source: str) -> HloParseError:
    """XLA's (multi-line) status message as one HloParseError naming the first line."""
    found = _PARSING.findall(message)
    if found:
        seen: list[str] = []
        for _, _, text in found:
            text = text.rstrip(":")
            if text not in seen:
                seen.append(text)
        return HloParseError(f"XLA refuses the module: {_one_line('; '.join(seen))}",
                             source=source, line=int(found[0][0]))
    body = message.split("\n", 1)[0]
    body = re.sub(r"^[A-Z_]+: ", "", body)
    return HloParseError(f"XLA refuses the module: {_one_line(body)}", source=source)


def xla_verdict(data: bytes, kind: str, source: str) -> XlaVerdict:
    """Run XLA's parser on ``data`` (``kind`` "text" or "proto"); HloParseError if refused."""
    try:
        proc = subprocess.run([sys.executable, str(_WORKER), kind], input=data,
                              capture_output=True, timeout=_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise HloParseError(f"XLA's parser did not finish in {_TIMEOUT_S} s",
                            source=source) from None
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode == 4:
        return XlaVerdict(available=False)
    if proc.returncode == 3:
        raise refusal(stderr, source)
    if proc.returncode != 0:
        check = _CHECK.search(stderr)
        detail = check.group(1) if check else (stderr.strip().splitlines() or ["no message"])[-1]
        raise HloParseError(f"XLA's parser aborted on the module: {_one_line(detail)}",
                            source=source)
    out = json.loads(proc.stdout)
    return XlaVerdict(available=True, text=out["text"], async_names=out["async"])
