"""Text into lines at most a width wide, a word never split: prose wrapped at spaces, a list packed
item by item, tokens joined greedily (a word wider than the width gets a line of its own)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence


def wrapped(text: str, width: int, indent: str = "") -> list[str]:
    """`text` wrapped at spaces to `width` (never inside a word, never at a hyphen); `indent` starts
    every line after the first. No lines for empty text."""
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


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
