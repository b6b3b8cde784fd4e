"""The overviews' drawings: `stats`' bar charts and `map`'s grid of levels by year (and the grid as
flat rows for the other formats)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from invmap.render.lines import greedy
from invmap.safe import escape

BLOCK = "█"


def bar_charts(groups: Sequence[tuple[str, dict[str, int]]], width: int) -> str:
    """Horizontal bar charts on one scale: the same count draws the same bar length in every chart."""
    keys = [k for _, counts in groups for k in counts]
    if not keys:
        return "(no sources)\n"
    label_width = max(len(k) for k in keys)
    top = max((n for _, counts in groups for n in counts.values()), default=1) or 1
    digits = len(str(top))
    room = max(width - label_width - digits - 5, 1)
    out = []
    for title, counts in groups:
        out.append(title)
        if not counts:
            out.append("  (none)")
        for key, n in counts.items():
            bar = BLOCK * (max(1, round(n * room / top)) if n else 0)
            out.append(f"  {escape(key).ljust(label_width)}  {bar}{' ' if bar else ''}{n}")
        out.append("")
    return "\n".join(out[:-1]) + "\n"


def grid_view(grid: dict[str, Any], titles: dict[str, str], width: int, color: bool) -> Any:
    """`map`: one block per level, `year: names` runs packed to the width, each name whole."""
    from rich.text import Text

    lines = Text()
    first = True
    for row in grid["rows"]:
        cells = [(year, names) for year, names in row["cells"].items() if names]
        if not cells:
            continue
        if not first:
            lines.append("\n")
        first = False
        heading = row["code"] + (f"  {titles[row['code']]}" if titles.get(row["code"]) else "")
        lines.append(escape(heading), style="bold cyan" if color else "")
        for line in _pack_runs(cells, max(width - 4, 20)):
            lines.append("\n    " + line)
    return lines


def _pack_runs(cells: Sequence[tuple[str, Sequence[str]]], width: int) -> list[str]:
    """`2023: A, B · 2024: C` packed into lines; a year's run may continue on the next line."""
    tokens: list[str] = []
    for c, (year, names) in enumerate(cells):
        for n, name in enumerate(names):
            token = (f"{year}: " if n == 0 else "") + escape(name)
            last_of_year = n == len(names) - 1
            if not last_of_year:
                token += ","
            elif c < len(cells) - 1:
                token += " ·"
            tokens.append(token)
    return greedy(tokens, width)


def grid_lines(grid: dict[str, Any]) -> list[dict[str, Any]]:
    """The grid as flat rows (layer, year, names) for plain, CSV and Markdown: one per non-empty cell."""
    return [
        {"layer": row["code"], "year": year, "names": names}
        for row in grid["rows"]
        for year in grid["years"]
        if (names := row["cells"].get(year))
    ]
