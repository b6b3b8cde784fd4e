"""`triage` on a terminal: each level with its score and confidence, why it matched (the symptom's
words bold), what measurements showed, the reports it looks like, its question and its sources'."""

from __future__ import annotations

from typing import Any

from invmap.marks import MARK, unmarked
from invmap.render.cells import marked_text
from invmap.render.lines import wrapped
from invmap.safe import escape

MARGIN = "       "  # the 7 columns of `  why  `, `  ask  `, ... on a level's continuation lines


def triage_view(levels: list[dict[str, Any]], notes: dict[str, Any], width: int, color: bool) -> Any:
    """The terminal view of triage's levels (`triage.triage`'s, with their `_marked` items and `_note`;
    those that matched the symptom are starred among the sources)."""
    from rich.console import Group
    from rich.text import Text

    room = max(width - len(MARGIN), 20)

    def margined(first: str, rest: str, text: str, style: str = "") -> list[Any]:
        lines = wrapped(text, max(width - len(first), 20))
        return [Text((first if i == 0 else rest) + line, style=style) for i, line in enumerate(lines)]

    parts: list[Any] = []
    for n, level in enumerate(levels):
        if n:
            parts.append(Text(""))
        head = Text(f"{level['code']}  {escape(level['title'])}", style="bold cyan" if color else "")
        head.append(f"  {level['score']:.1f}  {level['confidence']}")
        parts.append(head)
        for item in level["_marked"]:
            parts += _marked_lines(item, room)
        for found in level.get("evidence") or ():  # what measurements showed (triage --metrics, --bench)
            parts += margined("  saw  ", MARGIN, escape(found["text"]))
        if level.get("_gap"):
            parts += margined("  gap  ", MARGIN, escape(level["_gap"]), "yellow" if color else "")
        if level.get("_note"):
            parts += margined("  note ", MARGIN, level["_note"], "dim" if color else "")
        for r in level["reports"]:
            parts += margined("  like ", MARGIN, f"{escape(r['id'])} ({r['primary']}): {escape(r['title'])}")
        if level["question"]:
            parts += margined("  ask  ", MARGIN, escape(level["question"]))
        if level.get("_filtered"):
            parts += margined("  kept ", MARGIN, level["_filtered"], "dim" if color else "")
        for said in _steps(level):
            parts += margined("  try  ", MARGIN, said)
        for s in level["sources"]:
            mark = "* " if s["matched"] else "  "
            parts.append(Text(f"  {mark}{escape(s['name'])} ({escape(s['id'])})", style="bold" if color else ""))
            parts += margined("      ", "      ", escape(s["question"]))
    return Group(*parts)


def _steps(level: dict[str, Any]) -> list[str]:
    """A level's `next` as the `try` lines say it: a setting with its engine and version, a command."""
    return [
        escape(f"{step['text']} ({step['engine']})" if step["kind"] == "setting" else step["text"])
        for step in level.get("next") or ()
    ]


def _marked_lines(item: str, room: int) -> list[Any]:
    """A `why` line wrapped at spaces like the others, the marks kept on each piece."""
    from rich.text import Text

    words = item.split(" ")
    lines: list[str] = []
    current = ""
    for w in words:
        if current and len(unmarked(current)) + 1 + len(unmarked(w)) > room:
            lines.append(current)
            current = w
        else:
            current = f"{current} {w}" if current else w
    if current:
        lines.append(current)
    out = []
    for i, line in enumerate(lines):
        opened = line.count(MARK[0]) > line.count(MARK[1])
        text = Text("  why  " if i == 0 else MARGIN)
        text.append_text(marked_text(line + (MARK[1] if opened else "")))
        out.append(text)
        if opened and i + 1 < len(lines):
            lines[i + 1] = MARK[0] + lines[i + 1]
    return out
