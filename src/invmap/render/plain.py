"""A table of records without colour (pipes, files, NO_COLOR) drawn as plain text: the very text rich
draws for `tables.records_table` (rich's own line breaking, its column padding and rule), built from
strings, which is what lets `list --format table` of 100,000 rows into a file take seconds, not half
a minute (figures in benchmarks/run.py). tests/test_terminal.py holds it to rich's text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from invmap.render.cells import header, human_cell, wraps
from invmap.render.layout import GAP, RIGHT
from invmap.render.lines import pack
from invmap.safe import escape

_WORD = re.compile(r"\s*\S+\s*")


def _divide_ascii(text: str, width: int) -> list[int]:
    """rich's `divide_line` for ASCII text (a character is a cell): the same break offsets, without
    measuring every word's cells."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:  # folded across lines, `width` characters at a time
            pieces = [word[i : i + width] for i in range(0, len(word), width)]
            for n, piece in enumerate(pieces):
                if start:
                    breaks.append(start)
                if n == len(pieces) - 1:
                    offset = len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return breaks


def plain_table(
    rows: Sequence[dict[str, Any]], shown: Sequence[str], widths: dict[str, int], first: bool = True
) -> str:
    """What `records_table` draws without colour for these columns and widths (`first`: with the
    header and its rule), as text."""
    from rich._wrap import divide_line
    from rich.cells import cell_len

    last = len(shown) - 1

    def cell_lines(f: str, text: str) -> list[str]:
        width = widths[f]
        out: list[str] = []
        for line in text.split("\n"):
            ascii_only = line.isascii()
            if not wraps(f) or (len(line) if ascii_only else cell_len(line)) <= width:
                out.append(line)
                continue
            cuts = [0, *(_divide_ascii(line, width) if ascii_only else divide_line(line, width, fold=True)), len(line)]
            out += [line[a:b].rstrip() for a, b in zip(cuts, cuts[1:])]
        return out or [""]

    def row_text(cells: list[list[str]], bottom: bool = False) -> list[str]:
        height = max(len(c) for c in cells)
        if bottom:  # rich sets header cells on the row's last lines
            cells = [[""] * (height - len(c)) + c for c in cells]
        lines = []
        for n in range(height):
            parts = []
            for i, f in enumerate(shown):
                text = cells[i][n] if n < len(cells[i]) else ""
                pad = widths[f] - (len(text) if text.isascii() else cell_len(text))
                text = " " * pad + text if f in RIGHT else text + " " * pad
                parts.append(text if i == last else text + " " * GAP)
            lines.append("".join(parts).rstrip())
        return lines

    out: list[str] = []
    if first:
        out += row_text([cell_lines(f, header(f)) for f in shown], bottom=True)
        out.append("─" * (sum(widths[f] for f in shown) + GAP * last))
    for r in rows:
        cells = []
        for f in shown:
            value = r.get(f)
            if isinstance(value, list) and wraps(f):
                text = "\n".join(pack([escape(str(v)) for v in value], widths[f]))
            else:
                text = escape(human_cell(f, value))
            cells.append(cell_lines(f, text))
        out += row_text(cells)
    return "\n".join(out) + "\n"
