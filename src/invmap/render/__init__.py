"""Records -> text: what a command hands to rendering (`Result`), how to render (`Context`), and the
one call that renders a format (`text`). Renderers return; they never print (the CLI's `emit` decides
where output goes).

Each output format is an entry of `formats.FORMATS` naming its renderer in one of these modules
(and, for export's catalog view, in `interchange.py`): `render(result, context)` yields the text a
piece at a time, so a large result is never whole in memory. One job a module:

- cells.py: a value as a cell (headers, machine and human forms, spreadsheet-safe, matched words bold)
- lines.py: text into lines at a width, never inside a word
- machine.py: JSON, JSON lines, CSV, TSV, Markdown tables and plain lines (never loads rich)
- layout.py: which columns of a table fit a width, and how wide each is
- tables.py: the `table` format: the view's own drawing, else a table of its records (rich)
- plain.py: rich's table drawn again as plain text, for tables without colour (pipes, files)
- blocks.py: one block of `Label  value` lines a source (`show`, and a table too wide to fit)
- levels.py, triage.py, overview.py, documents.py: the drawings of `layers`, `triage`, `stats` and
  `map`, `guide` and `fields`
- progress.py: progress bars on stderr (reading a large catalog, checking links)

rich is imported only inside the functions that draw with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

BATCH = 2_000  # records rendered and written at a time: a large result is never whole as text


@dataclass
class Result:
    """What a command produced: flat `rows` (with `fields`) for every format; optionally a different
    JSON shape (`data`), a terminal drawing of its own (`draw(width, color) -> renderable or text`),
    and for export's catalog view the catalog itself (`catalog()`)."""

    rows: Sequence[dict[str, Any]]
    fields: list[str]
    data: Any = None
    draw: Callable[[int, bool], Any] | None = None
    single: bool = False  # one record (`show NAME`, `layers CODE`): JSON is an object, not an array
    blocks: bool = False  # plain: one block of `field<TAB>value` lines a record, blank lines between (`show`)
    catalog: Callable[[], Any] | None = None


@dataclass
class Context:
    """How to render: the terminal's width and colour, hyperlinks, spreadsheet-safe cells, and (export's
    Markdown) cells written as links."""

    width: int = 80
    color: bool = False
    links: bool = False
    excel: bool = False
    cell_links: bool = False


def text(result: Result, fmt: str, view: str, context: Context | None = None) -> str:
    """A format's whole text."""
    from invmap import formats

    return "".join(formats.renderer(fmt, view)(result, context or Context()))


def batches(result: Result) -> Iterator[list[dict[str, Any]]]:
    """The rows, a batch at a time, each holding exactly `result.fields` in that order."""
    fields, rows = result.fields, result.rows
    same = not rows or list(rows[0]) == fields  # project only records holding other keys or another order
    for start in range(0, len(rows), BATCH):
        part = rows[start : start + BATCH]
        yield part if same else [{f: r.get(f) for f in fields} for r in part]
