"""The drawings of the map's levels: `layers` (a table of levels, or a block a level when narrow) and
`layers CODE` (one level's page: its definition, then its sources and their open questions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from invmap.render.layout import GAP, NARROW
from invmap.render.lines import wrapped
from invmap.render.tables import styled_table
from invmap.safe import escape


def levels_table(rows: Sequence[dict[str, Any]], width: int, color: bool) -> Any:
    """`layers`: code, title, scope (wrapped at spaces) and count; below 60 columns a block per level."""

    count_width = max(len("Sources"), *(len(str(r["count"])) for r in rows))
    code_width = max(len("Code"), *(len(r["code"] or "") for r in rows))
    longest_title_word = max(len(w) for r in rows for w in (r["title"] or "").split()) if rows else 1
    title_width = min(max(len(r["title"] or "") for r in rows), max(22, longest_title_word))
    scope_width = width - code_width - title_width - count_width - 3 * GAP
    if width < NARROW or scope_width < 16:
        return _level_blocks(rows, width, color)
    out = styled_table()
    out.add_column("Code", width=code_width, no_wrap=True, style="cyan" if color else None)
    out.add_column("Title", width=title_width, overflow="fold")
    out.add_column("Scope", width=scope_width, overflow="fold")
    out.add_column("Sources", width=count_width, justify="right", no_wrap=True)
    for r in rows:
        out.add_row(escape(r["code"] or ""), escape(r["title"] or ""), escape(r["scope"] or ""), str(r["count"]))
    return out


def _level_blocks(rows: Sequence[dict[str, Any]], width: int, color: bool) -> Any:
    """`layers` in a narrow terminal: each level's code, title and count, then its scope wrapped."""
    from rich.console import Group
    from rich.text import Text

    blocks: list[Any] = []
    for n, r in enumerate(rows):
        if n:
            blocks.append(Text(""))
        head = f"{r['code'] or '-'}  {escape(r['title'] or '')}  ({r['count']})"
        blocks.append(Text(head, style="bold" if color else ""))
        blocks += [Text("    " + line) for line in wrapped(escape(r["scope"] or ""), max(width - 4, 20))]
    return Group(*blocks)


def level_view(level: dict[str, Any], width: int, color: bool) -> Any:
    """`layers L3`: the level's title, scope, question, metrics and symptoms, then its sources with
    their open questions."""
    from rich.console import Group
    from rich.text import Text

    room = max(width - 4, 20)

    def indented(text: str, indent: str = "    ") -> list[Any]:
        return [Text(indent + line) for line in wrapped(escape(text), room) or [""]]

    bold = "bold" if color else ""
    parts: list[Any] = [
        Text(f"{level['code']}  {escape(level.get('title') or '')}", style="bold cyan" if color else "")
    ]
    for label, value in (("Scope", level.get("scope")), ("Question", level.get("question"))):
        if value:
            parts += [Text(""), Text(label, style=bold), *indented(value)]
    for label, items in (("Metrics", level.get("metrics")), ("Symptoms", level.get("symptoms"))):
        if items:
            parts += [Text(""), Text(label, style=bold)]
            for item in items:
                lines = wrapped(escape(item), room - 2) or [""]
                parts += [Text("    - " + lines[0]), *(Text("      " + more) for more in lines[1:])]
    sources = level.get("sources") or []
    parts += [Text(""), Text(f"Sources ({len(sources)})", style=bold)]
    for s in sources:
        parts.append(Text(f"    {escape(s['name'])} ({escape(s['id'])})", style="bold" if color else ""))
        parts += indented(s["question"], "      ")
    return Group(*parts)
