"""Reading kernel source text for mutation: where the code is, and where a bracket closes.

Mutation operators are regular-expression rows (operators.py); these helpers keep them from rewriting a
comment, a string, an `#include` or the kernel's own signature (a mutant there only fails to compile or
changes nothing), and find the extent of a call's arguments or a subscript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Spans that are not code a mutant should touch, per language.
SKIPPED: dict[str, list[re.Pattern]] = {
    "cuda": [re.compile(r"//[^\n]*"), re.compile(r"/\*.*?\*/", re.S), re.compile(r'"[^"\n]*"'),
             re.compile(r"^\s*#\s*include[^\n]*", re.M), re.compile(r"__global__[^{]*\{")],
    "triton": [re.compile(r"#[^\n]*"), re.compile(r'"""[\s\S]*?"""'), re.compile(r'"[^"\n]*"'),
               re.compile(r"^\s*(import|from)\b[^\n]*", re.M), re.compile(r"^\s*@[^\n]*", re.M),
               re.compile(r"^\s*def\b[^\n]*", re.M)],
    "ptx": [re.compile(r"//[^\n]*"), re.compile(r"^\s*\.(version|target|address_size|reg|param|file|loc)\b[^\n]*",
                                                re.M), re.compile(r"\.entry[^{]*\{")],
}
CLOSING = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class Source:
    """A kernel's text and the spans (start, end) of it that are not code."""

    text: str
    language: str

    @property
    def skipped(self) -> list[tuple[int, int]]:
        return [m.span() for pattern in SKIPPED[self.language] for m in pattern.finditer(self.text)]

    def code_matches(self, pattern: re.Pattern) -> list[re.Match]:
        """Matches of `pattern` that start in code."""
        skipped = self.skipped
        return [m for m in pattern.finditer(self.text) if not any(a <= m.start() < b for a, b in skipped)]


def closing(text: str, open_at: int) -> int:
    """Index of the bracket that closes the one at `open_at` (-1 if it never closes)."""
    opener, depth = text[open_at], 0
    for i in range(open_at, len(text)):
        if text[i] == opener:
            depth += 1
        elif text[i] == CLOSING[opener]:
            depth -= 1
            if depth == 0:
                return i
    return -1


def top_level_splits(text: str, start: int, end: int, separator: str) -> list[int]:
    """Positions in text[start:end] of `separator` outside any bracket (call arguments, conjuncts)."""
    found, depth, i = [], 0, start
    while i < end:
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(separator, i):
            found.append(i)
            i += len(separator)
            continue
        i += 1
    return found


def call_arguments(text: str, open_at: int) -> list[tuple[int, int]]:
    """The (start, end) span of each argument of the call whose `(` is at `open_at`."""
    close = closing(text, open_at)
    if close < 0:
        return []
    cuts = [open_at, *top_level_splits(text, open_at + 1, close, ","), close]
    return [(a + 1, b) for a, b in zip(cuts, cuts[1:], strict=False)]


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1
