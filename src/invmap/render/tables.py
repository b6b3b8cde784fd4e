"""The `table` format: a view's own drawing, else a table of its records drawn to the terminal's
width with rich (or, without colour, the same text drawn by `plain` and `blocks`), a long table a
piece at a time; and the rich helpers every table and drawing shares."""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from typing import Any

from invmap.fields import HEADERS
from invmap.render import BATCH, Context, Result
from invmap.render.blocks import plain_stacked, stacked
from invmap.render.cells import header, human_cell, marked_text, wraps
from invmap.render.layout import GAP, RIGHT, layout
from invmap.render.lines import pack
from invmap.render.plain import plain_table
from invmap.safe import escape

TABLE_CHUNK = 500  # rows drawn at a time: a table of 100,000 rows into a file is drawn in pieces
STYLES = {"id": "cyan", "score": "green", "year": "magenta", "code": "cyan"}  # columns' colours


def table(result: Result, context: Context) -> Iterator[str]:
    """The terminal view: the command's own drawing, else a table of its records (a long one drawn
    TABLE_CHUNK rows at a time with the widths worked out from every row, so the pieces line up)."""
    if result.draw is not None:
        drawing = result.draw(context.width, context.color)
        yield drawing if isinstance(drawing, str) else to_terminal_text(drawing, context.width, context.color)
        return
    rows, fields = result.rows, result.fields
    fitted = layout(rows, fields, context.width)
    if fitted and not context.color and not context.links and "why" not in fitted[0]:
        for start in range(0, max(len(rows), 1), BATCH):  # no colour: the same text, not drawn with rich
            yield plain_table(rows[start : start + BATCH], *fitted, first=start == 0)
        return
    if not fitted and not context.color:  # one block a source, as text
        for start in range(0, max(len(rows), 1), BATCH):
            yield plain_stacked(rows[start : start + BATCH], fields, context.width, lead=start > 0)
        return
    if len(rows) <= TABLE_CHUNK:
        drawing = records_table(rows, fields, context.width, context.color, context.links, fitted=fitted or False)
        yield to_terminal_text(drawing, context.width, context.color)
        return
    for start in range(0, len(rows), TABLE_CHUNK):
        part = rows[start : start + TABLE_CHUNK]
        drawing = records_table(
            part, fields, context.width, context.color, context.links, fitted=fitted or False, first=start == 0
        )
        yield to_terminal_text(drawing, context.width, context.color)


def to_terminal_text(renderable: Any, width: int, color: bool) -> str:
    """A rich renderable as text `width` wide; escape sequences only when colour is on."""
    from rich.console import Console

    buffer = io.StringIO()
    screen = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        color_system="truecolor" if color else None,
        legacy_windows=False,
        emoji=False,
        markup=False,
    )
    screen.print(renderable, crop=False, overflow="ignore")
    out = buffer.getvalue()
    if not color:
        out = "\n".join(line.rstrip() for line in out.split("\n"))
    return out


def styled_table(**extra: Any) -> Any:
    """A rich Table with every table's look: a rule under the header, no edges, GAP spaces between
    columns (`plain.plain_table` draws the same text without rich)."""
    from rich import box
    from rich.table import Table

    return Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, GAP - 1, 0, 0),
        header_style="bold",
        collapse_padding=True,
        **extra,
    )


def records_table(
    rows: Sequence[dict[str, Any]],
    fields: Sequence[str],
    width: int,
    color: bool,
    links: bool = False,
    fitted: Any = None,
    first: bool = True,
) -> Any:
    """A table `width` columns wide that never splits an identifier; a stacked view when it cannot.
    With `links`, each source's name (or its id, when the name is not shown) links to its url.
    `fitted`: the layout already worked out (False: stacked); `first`: this piece carries the header
    (a later piece of a long table does not, and a stacked piece starts with a blank line)."""
    if fitted is None:
        fitted = layout(rows, fields, width)
    if not fitted:
        return stacked(rows, fields, width, color, lead=not first)
    shown, widths = fitted
    drawn = styled_table(show_header=first)
    for f in shown:
        drawn.add_column(
            header(f),
            style=STYLES.get(f) if color else None,
            width=widths[f],
            no_wrap=not wraps(f),
            overflow="fold",
            justify="right" if f in RIGHT else "left",
        )
    linked = "name" if "name" in shown else "id"
    for r in rows:
        link = r.get("url") if links and isinstance(r.get("url"), str) else None
        drawn.add_row(*(_cell(f, r.get(f), widths[f], link if f == linked else None) for f in shown))
    return drawn


def _cell(f: str, value: Any, width: int, link: str | None) -> Any:
    """One table cell; `link` (an http(s) URL) makes it an OSC 8 hyperlink."""
    from rich.style import Style
    from rich.text import Text

    if isinstance(value, list) and wraps(f):
        return Text("\n".join(pack([escape(str(v)) for v in value], width)))
    if f == "why" and isinstance(value, str):
        return marked_text(whole_values(value))
    content = escape(human_cell(f, value))
    style = Style(link=link) if link and link.startswith(("https://", "http://")) else ""
    return Text(content, style=style)


def whole_values(why: str) -> str:
    """`name: System-Aware KV Cache Survey`: the value of a field that never wraps (a name, an id)
    keeps its spaces unbreakable, so a table cell never splits it."""
    name, colon, rest = why.partition(": ")
    if colon and name in HEADERS and not wraps(name):
        return f"{name}: " + rest.replace(" ", "\u00a0")
    return why
