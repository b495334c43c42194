"""Token scanner for HLO text not laid out one statement per line.

XLA's parser reads tokens, so whitespace (newlines included) and ``/* */`` or ``//`` comments
may sit between any two of them: an instruction split over several lines and a whole module on
one line are both valid. This scanner finds the same statements ``text.line_statements`` finds
in XLA's own layout and writes each instruction back as one line for the shared parser. It is
slower than the line reader, which is why it only runs when that one cannot.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from tpugraphs_tools.hlo.text import _TABLES, Statement, StatementError

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>[(){}\[\],=])
  | (?P<word>(?:<=|[^\s(){}\[\],="/]|/(?![*/]))+)
  | (?P<bad>.)
""", re.S | re.X)
_CLOSERS = {"(": ")", "{": "}", "[": "]"}
_STOP = frozenset({",", ")", "}", "]", "="})


class _Tok(NamedTuple):
    text: str
    kind: str      # "word", "str" or "punct"
    offset: int
    spaced: bool   # whitespace or a comment before it


class _Scanner:
    def __init__(self, text: str) -> None:
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.toks: list[_Tok] = []
        spaced = False
        for m in _TOKEN.finditer(text):
            kind = m.lastgroup or "bad"
            if kind in ("ws", "comment"):
                spaced = True
                continue
            if kind == "bad":
                raise StatementError(f"unexpected {m.group()!r}", self.line_at(m.start()))
            self.toks.append(_Tok(m.group(), kind, m.start(), spaced))
            spaced = False
        self.close: dict[int, int] = {}
        stack: list[int] = []
        for i, tok in enumerate(self.toks):
            if tok.kind != "punct":
                continue
            if tok.text in _CLOSERS:
                stack.append(i)
            elif tok.text in ")}]":
                if not stack:
                    raise StatementError(f"unbalanced {tok.text!r}", self.line_at(tok.offset))
                opener = self.toks[stack[-1]]
                if _CLOSERS[opener.text] != tok.text:
                    raise StatementError(
                        f"{opener.text!r} is not closed (found {tok.text!r} at line "
                        f"{self.line_at(tok.offset)})", self.line_at(opener.offset))
                self.close[stack.pop()] = i
        if stack:
            raise StatementError(f"{self.toks[stack[-1]].text!r} is never closed",
                                 self.line_at(self.toks[stack[-1]].offset))
        self.i = 0

    def line_at(self, offset: int) -> int:
        return bisect.bisect_left(self.newlines, offset) + 1

    def line(self, i: int | None = None) -> int:
        i = self.i if i is None else i
        if i >= len(self.toks):
            return self.line_at(self.toks[-1].offset) if self.toks else 1
        return self.line_at(self.toks[i].offset)

    def at(self, text: str, i: int | None = None) -> bool:
        i = self.i if i is None else i
        return i < len(self.toks) and self.toks[i].text == text and self.toks[i].kind != "str"

    def word(self, what: str) -> str:
        if self.i >= len(self.toks) or self.toks[self.i].kind != "word":
            got = self.toks[self.i].text if self.i < len(self.toks) else "end of text"
            raise StatementError(f"expected {what}, got {got!r}", self.line())
        self.i += 1
        return self.toks[self.i - 1].text

    def expect(self, text: str) -> None:
        if not self.at(text):
            got = self.toks[self.i].text if self.i < len(self.toks) else "end of text"
            raise StatementError(f"expected {text!r}, got {got!r}", self.line())
        self.i += 1

    def run_end(self, i: int) -> int:
        """End (exclusive) of the value starting at ``i``: adjacent tokens and groups."""
        if i >= len(self.toks) or (self.toks[i].text in _STOP and self.toks[i].kind == "punct"):
            raise StatementError("expected a value", self.line(i))
        while True:
            i = self.close[i] + 1 if i in self.close else i + 1
            if i >= len(self.toks) or self.toks[i].spaced or \
                    (self.toks[i].kind == "punct" and self.toks[i].text in _STOP):
                return i

    def span(self, a: int, b: int, spaces: bool = True) -> str:
        parts = []
        for k in range(a, b):
            tok = self.toks[k]
            if spaces and tok.spaced and k > a:
                parts.append(" ")
            parts.append(tok.text)
        return "".join(parts)

    def attributes(self) -> str:
        """``, key=value`` pairs as one canonical string."""
        out = []
        while self.at(","):
            self.i += 1
            key = self.word("an attribute name")
            self.expect("=")
            end = self.run_end(self.i)
            out.append(f", {key}={self.span(self.i, end)}")
            self.i = end
        return "".join(out)


def _instruction(s: _Scanner) -> Statement:
    line = s.line()
    root = s.at("ROOT")
    if root:
        s.i += 1
    name = s.word("an instruction name")
    s.expect("=")
    end = s.run_end(s.i)
    shape = s.span(s.i, end, spaces=s.at("("))
    s.i = end
    opcode = s.word("an opcode")
    if not s.at("("):
        raise StatementError(f"expected '(' after opcode {opcode}", s.line())
    close = s.close[s.i]
    operands = s.span(s.i + 1, close)
    s.i = close + 1
    text = f"{'ROOT ' if root else ''}{name} = {shape} {opcode}({operands}){s.attributes()}"
    return (line, "inst", text)


def _computation(s: _Scanner, out: list[Statement]) -> None:
    line = s.line()
    is_entry = s.at("ENTRY")
    if is_entry:
        s.i += 1
    name = s.word("a computation name").lstrip("%")
    if s.at("("):  # signature: (params) -> shape
        s.i = s.close[s.i] + 1
        if s.word("'->'") != "->":
            raise StatementError("expected '->' in the computation signature", s.line())
        s.i = s.run_end(s.i)
    s.expect("{")
    out.append((line, "open", (name, is_entry)))
    while not s.at("}"):
        if s.i >= len(s.toks):
            raise StatementError(f"computation {name} is not closed", line)
        out.append(_instruction(s))
    close_line = s.line()
    s.i += 1
    thread = None
    if s.at(",") and s.at("execution_thread", s.i + 1) and s.at("=", s.i + 2):
        tok = s.toks[s.i + 3] if s.i + 3 < len(s.toks) else None
        if tok is None or tok.kind != "str":
            raise StatementError("expected a quoted execution thread", s.line(s.i + 3))
        thread = tok.text[1:-1]
        s.i += 4
    out.append((close_line, "close", thread))


def scan_statements(text: str) -> list[Statement]:
    """Statements of HLO text in any layout XLA's parser accepts."""
    s = _Scanner(text)
    out: list[Statement] = []
    while s.i < len(s.toks):
        tok = s.toks[s.i]
        if s.at("HloModule"):
            line = s.line()
            s.i += 1
            name = s.word("a module name")
            out.append((line, "module", name + s.attributes()))
        elif tok.kind == "word" and tok.text in _TABLES:
            s.i += 1
            while s.i < len(s.toks) and s.toks[s.i].kind == "word" and \
                    s.toks[s.i].text.isdigit():
                s.i = s.run_end(s.i + 1)
        else:
            _computation(s, out)
    return out
