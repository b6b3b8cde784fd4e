"""Text into lines at most a width wide, a word never split: prose wrapped at spaces, a list packed
item by item, tokens joined greedily (a word wider than the width gets a line of its own)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence


def wrapped(text: str, width: int, indent: str = "") -> list[str]:
    """`text` wrapped at spaces to `width` (never inside a word, never at a hyphen); `indent` starts
    every line after the first. No lines for empty text. A word wider than the width (a path, a URL)
    is broken after its slashes, each piece on a line of its own, indented as the others."""
    lines = textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
    if all(len(line) <= width for line in lines):
        return lines
    out: list[str] = []
    for n, line in enumerate(lines):
        lead = indent if n else ""
        if len(line) <= width:
            out.append(line)
            continue
        pieces = slashed(line[len(lead) :], width - len(indent))
        out.extend((lead if k == 0 else indent) + piece for k, piece in enumerate(pieces))
    return out


def slashed(token: str, width: int) -> list[str]:
    """A long token (a URL, a path) in pieces at most `width` wide, each broken right after a `/`
    (a piece with no slash to break at stays whole, even wider)."""
    if len(token) <= width:
        return [token]
    parts = re.findall(r"[^/]*/+|[^/]+$", token)
    lines: list[str] = []
    current = ""
    for part in parts:
        if current and len(current + part) > width:
            lines.append(current)
            current = part
        else:
            current += part
    if current:
        lines.append(current)
    return lines


def pack(items: Sequence[str], width: int, sep: str = ", ") -> list[str]:
    """Items on lines at most `width` wide, each item whole (an item wider than `width` gets a line)."""
    return greedy([item + (sep.rstrip() if n < len(items) - 1 else "") for n, item in enumerate(items)], width)


def greedy(tokens: Sequence[str], width: int) -> list[str]:
    """Tokens joined by spaces into lines at most `width` wide; a token is never split."""
    lines: list[str] = []
    current = ""
    for token in tokens:
        candidate = f"{current} {token}" if current else token
        if current and len(candidate) > width:
            lines.append(current)
            current = token
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines
