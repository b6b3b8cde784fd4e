"""One block of `Label  value` lines a source, values wrapped at spaces to the width: `show` on a
terminal (one source or several), and a table too wide for its terminal (one block a record, drawn
with rich, or built as the same text without colour)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from invmap.fields import COMMAND_FIELDS as COMMANDS
from invmap.render.cells import header, human_cell, wraps
from invmap.render.lines import pack, slashed, wrapped
from invmap.safe import escape

SHORT_HEADERS = {
    "mechanism": "Mechanism",
    "objective": "Objective",
    "question": "Open question",
    "availability": "Availability",
}
# A list-of-tables field shown under another field's label: a place under `Where to look`, a setting
# under `Code`; alone, under this label.
UNDER = {"places": ("seam", "Where to look"), "settings": ("code", "Settings")}


def short_header(f: str) -> str:
    """Labels of the one-block-per-source views: short, so the values get the width."""
    return SHORT_HEADERS.get(f) or header(f)


def record_view(record: dict[str, Any], fields: Sequence[str], width: int, color: bool, links: bool = False) -> Any:
    """`show` on a terminal: empty fields left out, the layer once with its codes, links whole (a place's
    permalink an OSC 8 hyperlink with `links`), places under Where to look and settings under Code."""
    from rich.console import Group

    shown = dict(record)
    if "layer" in fields and "layers" in fields and record.get("layers"):
        codes = ", ".join(record["layers"])
        if codes != record["layer"]:
            shown["layer"] = f"{record['layer']} ({codes})"
    kept = [f for f in fields if not (f == "layers" and "layer" in fields)]
    return Group(*field_lines(shown, kept, width, color, skip_empty=True, links=links))


def records_view(
    records: Sequence[dict[str, Any]], fields: Sequence[str], width: int, color: bool, links: bool = False
) -> Any:
    """`show` of several sources on a terminal: each one's `record_view`, a blank line between."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = []
    for n, r in enumerate(records):
        if n:
            parts.append(Text(""))
        parts.append(record_view(r, fields, width, color, links))
    return Group(*parts)


def stacked(rows: Sequence[dict[str, Any]], fields: Sequence[str], width: int, color: bool, lead: bool = False) -> Any:
    """One block per source: the first identifier as a heading, then `Label  value` lines (`lead`: a
    blank line first, as between blocks: a later piece of a long result)."""
    from rich.console import Group
    from rich.text import Text

    blocks: list[Any] = []
    for n, r in enumerate(rows):
        if n or lead:
            blocks.append(Text(""))
        blocks.extend(field_lines(r, fields, width, color))
    return Group(*blocks)


def plain_stacked(
    rows: Sequence[dict[str, Any]], fields: Sequence[str], width: int, lead: bool = False, skip_empty: bool = False
) -> str:
    """`stacked` without colour: the text rich would draw, built as strings (a test compares them);
    `skip_empty`: a block leaves out its empty fields."""
    lines: list[str] = []
    for n, r in enumerate(rows):
        if n or lead:
            lines.append("")
        lines.extend((label + part).rstrip() for label, part, _ in _labelled_parts(r, fields, width, skip_empty))
    return "\n".join(lines) + "\n" if lines else ""


def field_lines(
    record: dict[str, Any],
    fields: Sequence[str],
    width: int,
    color: bool,
    skip_empty: bool = False,
    links: bool = False,
) -> list[Any]:
    """`Label  value` lines, values wrapped at spaces to the width; links whole on their own line (with
    `links`, a place's permalink is an OSC 8 hyperlink too)."""
    from rich.style import Style
    from rich.text import Text

    lines = []
    for label, part, link in _labelled_parts(record, fields, width, skip_empty):
        line = Text(no_wrap=True, overflow="ignore")
        line.append(label, style="bold" if color else "")
        line.append(part, style=Style(link=link) if links and link else "")
        lines.append(line)
    return lines


def _labelled_parts(
    record: dict[str, Any], fields: Sequence[str], width: int, skip_empty: bool = False
) -> Iterator[tuple[str, str, str | None]]:
    """(`Label  ` padded, or as many spaces on a continuation line; a piece of the value; the http(s)
    link that piece is, if any) triples."""
    shown = [f for f in fields if not (skip_empty and record.get(f) in (None, "", []))]
    labels = _labels(shown)
    label_width = max((len(labels[f]) for f in shown), default=0)
    room = max(width - label_width - 2, 20)
    for f in shown:
        for i, (part, link) in enumerate(_value_lines(f, record.get(f), room)):
            yield (labels[f] if i == 0 else "").ljust(label_width) + "  ", part, link


def _labels(shown: Sequence[str]) -> dict[str, str]:
    """Each shown field's label: none for a list of small tables shown under another field's label."""
    return {f: "" if f in UNDER and UNDER[f][0] in shown else UNDER.get(f, ("", short_header(f)))[1] for f in shown}


def _value_lines(f: str, value: Any, room: int) -> list[tuple[str, str | None]]:
    """A value's lines `room` wide, each with the http(s) link it is, if any: places and settings an
    item at a time, identifiers and links whole (even past the edge), lists packed, prose wrapped."""
    if f in UNDER and isinstance(value, list):
        return [p for n, item in enumerate(value, 1) for p in _item_lines(f, n, item, room)]
    if f in COMMANDS and isinstance(value, list):
        return [p for command in value for p in _command_lines(escape(str(command)), room)]
    content = escape(human_cell(f, value))
    if f in ("url", "code") or not wraps(f):
        link = content if f in ("url", "code") and content.startswith(("https://", "http://")) else None
        return [(piece, link) for piece in slashed(content, room)]
    if isinstance(value, list):
        return [(p, None) for p in pack([escape(str(v)) for v in value], room)]
    return [(p, None) for p in wrapped(content, room) or [""]]


def _item_lines(f: str, n: int, item: dict[str, Any], room: int) -> list[tuple[str, str | None]]:
    """One place (`1. path (symbol): note`, then its permalink whole on a line of its own) or one setting
    (`vLLM --flag: note (version); deprecated v1.2: what changed; use --other`), wrapped to `room`."""
    if f == "places":
        head = f"{n}. {item['path']}" + (f" ({item['symbol']})" if item.get("symbol") else "")
        text = head + (f": {item['note']}" if item.get("note") else "")
    else:
        text = f"{item['engine']} {item['flag']}" + (f": {item['note']}" if item.get("note") else "")
        text += f" ({item['version']})" if item.get("version") else ""
        if item.get("deprecated"):
            text += f"; {item['deprecated']}"
            text += f"; use {item['replaced_by']}" if item.get("replaced_by") else ""
    indent = "   " if f == "places" else "  "
    pieces: list[tuple[str, str | None]] = [(line, None) for line in wrapped(escape(text), room, indent) or [""]]
    link = item.get("url") if f == "places" else None
    if isinstance(link, str) and link.startswith(("https://", "http://")):
        pieces += [(indent + piece, link) for piece in slashed(escape(link), room - len(indent))]
    return pieces


def _command_lines(command: str, room: int) -> list[tuple[str, None]]:
    """A command on a line of its own; one wider than `room` broken at spaces, each line but the last
    ending in ` \\` (a shell reads the lines as one command when they are pasted)."""
    if len(command) <= room:
        return [(command, None)]
    lines = wrapped(command, room - 2, "  ")
    return [(line + (" \\" if n < len(lines) - 1 else ""), None) for n, line in enumerate(lines)]
