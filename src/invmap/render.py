"""Records -> text. Returns; never prints (the CLI's `emit` decides where output goes).

Each output format is an entry of `formats.FORMATS`, whose renderers live here (and, for export's
catalog view, in `interchange.py`): `render(result, context)` yields the text a piece at a time, so a
large result is never whole in memory. rich is imported only by the terminal renderers, so machine
formats never load it. Cells take their form from their field's kind (`fields.Kind`).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from invmap.fields import FIELD_HELP, HEADERS, KINDS, SCORED_FIELDS, WRAPPING
from invmap.safe import escape, json_safe

EXTRA_HEADERS = {
    "code": "Code",
    "title": "Title",
    "scope": "Scope",
    "count": "Count",
    "sources": "Sources",
    "names": "Names",
    "group": "Group",
    "key": "Key",
    "record_id": "Record",
    "result_type": "Result",
    "valid": "Valid",
    "addresses": "Addresses",
    "path": "File",
    "problem": "Why not valid",
    "term": "Term",
    "expansion": "Expansion",
    "definition": "Definition",
    "aliases": "Also",
    "question": "Question",
    "metrics": "Metrics",
    "symptoms": "Symptoms",
    "field": "Field",
    "status": "Status",
    "final_url": "Final URL",
    "error": "Error",
    "change": "Change",
    "old": "Old",
    "new": "New",
}
WRAP_EXTRA = frozenset(
    {
        "title",
        "scope",
        "names",
        "sources",
        "records",
        "addresses",
        "definition",
        "aliases",
        "metrics",
        "symptoms",
        "question",
        "matched",
        "old",
        "new",
        "error",
        "final_url",
        "expansion",
        "problem",
        "path",
    }
)
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"  # around matched words in `why` (search.MARK)


def header(f: str) -> str:
    return HEADERS.get(f) or EXTRA_HEADERS.get(f, f.replace("_", " ").capitalize())


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


# --- cells ---------------------------------------------------------------------------------------


def unmarked(value: str) -> str:
    return value.replace(MARK_OPEN, "").replace(MARK_CLOSE, "")


def machine_cell(f: str, value: Any) -> str:
    """A csv, tsv or plain cell: lists `;`-joined (as csv and tsv join them), null empty."""
    kind = KINDS.get(f)
    if kind is not None and value is not None and not isinstance(value, bool):
        return unmarked(kind.machine(value)) if f == "why" else kind.machine(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):  # a list of records (a level's sources) by their ids
        return ";".join(str(v.get("id", "")) if isinstance(v, dict) else str(v) for v in value)
    return str(value)


def human_cell(f: str, value: Any) -> str:
    """How a value reads in tables and Markdown: `n.d.` for no year, lists joined, scores to a tenth."""
    kind = KINDS.get(f)
    if kind is not None and not isinstance(value, bool):
        shown = kind.human(value)
        return unmarked(shown) if f == "why" else shown
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def _one_line(text: str) -> str:
    return " ".join(text.split()) if ("\t" in text or "\n" in text or "\r" in text) else text


EXCEL_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def excel_safe(cell: str) -> str:
    """OWASP's rule for spreadsheets: a cell that could start a formula gets a leading `'`."""
    return "'" + cell if cell.startswith(EXCEL_TRIGGERS) else cell


BATCH = 2_000  # records rendered and written at a time: a large result is never whole as text


def batches(result: Result) -> Iterator[list[dict[str, Any]]]:
    """The rows, a batch at a time, each holding exactly `result.fields` in that order."""
    fields, rows = result.fields, result.rows
    same = not rows or list(rows[0]) == fields  # project only records holding other keys or another order
    for start in range(0, len(rows), BATCH):
        part = rows[start : start + BATCH]
        yield part if same else [{f: r.get(f) for f in fields} for r in part]


# --- renderers (formats.FORMATS) -----------------------------------------------------------------


def to_json(data: Any, indent: int | None = 2) -> str:
    """The one JSON encoder: UTF-8 text kept as is, but every C0, C1 and bidi control written as a
    `\\u` escape (the same string to a JSON reader, nothing raw for a terminal)."""
    return json_safe(json.dumps(data, ensure_ascii=False, indent=indent)) + "\n"


_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


def json_line(value: Any) -> str:
    """Compact one-line JSON for one record, as `json.dumps(..., ensure_ascii=False)` writes it."""
    return json_safe(_ENCODE(value))


def machine_batches(result: Result) -> Iterator[list[dict[str, Any]]]:
    """`batches`, with the marks around matched words taken out of `why`: they are for drawing bold
    on a terminal, never data (csv, tsv and plain cells lose them in `machine_cell`)."""
    if "why" not in result.fields:
        yield from batches(result)
        return
    for part in batches(result):
        yield [{**r, "why": unmarked(r["why"])} if isinstance(r.get("why"), str) else r for r in part]


def json_text(result: Result, context: Context) -> Iterator[str]:
    if result.data is not None or result.single:
        yield to_json(result.data if result.data is not None else next(machine_batches(result))[0], indent=2)
        return
    # One record a line inside the array: readable, and fast (the C encoder; indent= is pure Python).
    if not result.rows:
        yield "[]\n"
        return
    for n, part in enumerate(machine_batches(result)):
        yield ("[\n" if n == 0 else ",\n") + ",\n".join(map(json_line, part))
    yield "\n]\n"


def jsonl_text(result: Result, context: Context) -> Iterator[str]:
    if isinstance(result.data, list):
        yield "".join(json_line(item) + "\n" for item in result.data)
        return
    for part in machine_batches(result):
        yield "".join(json_line(r) + "\n" for r in part)


def _delimited(result: Result, context: Context, dialect: str) -> Iterator[str]:
    import csv

    fields = result.fields
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, dialect=dialect, lineterminator="\n")
    writer.writerow(fields)
    for part in batches(result):
        cells = (
            [v if type(v) is str and f != "why" else machine_cell(f, v) for f, v in zip(fields, map(r.get, fields))]
            for r in part
        )
        writer.writerows(([excel_safe(c) for c in row] for row in cells) if context.excel else cells)
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def csv_text(result: Result, context: Context) -> Iterator[str]:
    return _delimited(result, context, "excel")


def tsv_text(result: Result, context: Context) -> Iterator[str]:
    return _delimited(result, context, "excel-tab")


def markdown_text(result: Result, context: Context) -> Iterator[str]:
    fields = result.fields
    rows = [r for part in batches(result) for r in part]
    if result.single:
        yield markdown_table(["Field", "Value"], [[header(f), human_cell(f, rows[0][f])] for f in fields])
    else:
        yield markdown_table([header(f) for f in fields], [[human_cell(f, r[f]) for f in fields] for r in rows])


def plain_text(result: Result, context: Context) -> Iterator[str]:
    fields = result.fields
    if result.single or result.blocks:  # the same shape whatever the number of records
        for n, record in enumerate(r for part in batches(result) for r in part):
            yield ("\n" if n else "") + "".join(f"{f}\t{_plain_cell(f, record[f])}\n" for f in fields)
        return
    for part in batches(result):
        yield "".join("\t".join(_plain_cell(f, r[f]) for f in fields) + "\n" for r in part)


TABLE_CHUNK = 500  # rows drawn at a time: a table of 100,000 rows into a file is drawn in pieces


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


def _plain_cell(f: str, value: Any) -> str:
    if f == "year" and value is None:
        return "n.d."
    if isinstance(value, float):
        return human_cell(f, value)
    return _one_line(machine_cell(f, value))


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(_one_line(c).replace("|", "\\|") for c in cells) + " |\n"

    return line(headers) + "|" + "---|" * len(headers) + "\n" + "".join(line(r) for r in rows)


def fields_text(fields: Sequence[str] = SCORED_FIELDS, width: int | None = None) -> str:
    """`invmap fields`: a name and its meaning a line; with a terminal `width`, meanings wrap at spaces
    under themselves."""
    import textwrap

    name_width = max(len(f) for f in fields)
    lines = []
    for f in fields:
        if width is None or width - name_width - 2 < 20:
            lines.append(f"{f.ljust(name_width)}  {FIELD_HELP[f]}")
            continue
        wrapped = textwrap.wrap(FIELD_HELP[f], width - name_width - 2, break_long_words=False, break_on_hyphens=False)
        lines.append(f"{f.ljust(name_width)}  {wrapped[0]}")
        lines += [" " * (name_width + 2) + more for more in wrapped[1:]]
    return "\n".join(lines) + "\n"


# --- terminal tables ---------------------------------------------------------------------------

GAP = 2  # columns between two table columns
SENTENCES = frozenset({"mechanism", "objective", "question", "availability", "why", "seam"})
MIN_SENTENCE = 30  # a sentence column narrower than this reads badly: drop other columns first
COMFORTABLE_SENTENCE = 32  # what a sentence column gets before a label grows to its whole width
NARROW = 60  # below this many columns, one block per source instead of a table
# Which columns go first when the terminal is too narrow (documented in the README).
DROP_ORDER = ("type", "layers", "accessed", "authors", "arxiv", "doi", "name", "year", "layer", "title", "source")


def wraps(f: str) -> bool:
    return f in WRAPPING or f in WRAP_EXTRA


def pack(items: Sequence[str], width: int, sep: str = ", ") -> list[str]:
    """Items on lines at most `width` wide, each item whole (an item wider than `width` gets a line)."""
    return _greedy([item + (sep.rstrip() if n < len(items) - 1 else "") for n, item in enumerate(items)], width)


def _greedy(tokens: Sequence[str], width: int) -> list[str]:
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


def layout(
    rows: Sequence[dict[str, Any]], fields: Sequence[str], width: int
) -> tuple[list[str], dict[str, int]] | None:
    """The columns that fit `width` and their widths, or None when only the stacked layout can.

    Identifier columns get their whole natural width and never wrap; wrapping columns get at least
    `MIN_SENTENCE` (or their natural width if less) and never less than their longest word. Columns in
    `DROP_ORDER` go, in that order, until the rest fit; `name` goes only while `id` stays, and a table
    keeps at least one identifier.
    """
    if width < NARROW:
        return None
    natural, unit = _measured(rows, fields)

    def minimum(f: str) -> int:
        if not wraps(f):
            return natural[f]
        floor = MIN_SENTENCE if f in SENTENCES else 12  # a sentence reads badly narrower; a label wraps well
        return max(min(natural[f], floor), unit[f], len(header(f)) if len(header(f)) <= 12 else 1)

    shown = _columns_that_fit(fields, minimum, width)
    if shown is None:
        return None
    widths = {f: minimum(f) for f in shown}
    _widened(widths, natural, width - sum(widths.values()) - GAP * (len(shown) - 1))
    return shown, widths


def hidden_columns(rows: Sequence[dict[str, Any]], fields: Sequence[str], width: int) -> list[str]:
    """The headers of the columns `layout` leaves out at `width` (none when every column fits, or when
    each record is a block of its own)."""
    fitted = layout(rows, fields, width)
    return [header(f) for f in fields if fitted and f not in fitted[0]]


def _measured(rows: Sequence[dict[str, Any]], fields: Sequence[str]) -> tuple[dict[str, int], dict[str, int]]:
    """Each column's natural width (its widest line, header included) and the narrowest it can be
    without splitting a word (a list's: its widest item), in one pass over the rows however many."""
    natural = {f: len(header(f)) for f in fields}
    word = dict.fromkeys(fields, 1)
    item = dict.fromkeys(fields, 0)
    wrapping = [f for f in fields if wraps(f)]
    for r in rows:
        for f in fields:
            text = human_cell(f, r.get(f))
            longest = max(map(len, text.split("\n"))) if "\n" in text else len(text)
            natural[f] = max(natural[f], longest)
        for f in wrapping:
            value = r.get(f)
            if isinstance(value, list):
                item[f] = max(item[f], *(len(str(v)) for v in value)) if value else item[f]
                continue
            text = human_cell(f, value)
            if len(text) > word[f]:
                word[f] = max(word[f], max((len(w) for w in text.split()), default=1))
    return natural, {f: item[f] or word[f] for f in fields}


def _columns_that_fit(fields: Sequence[str], minimum: Callable[[str], int], width: int) -> list[str] | None:
    """`fields` less the columns DROP_ORDER gives up until the rest fit at their minimum widths."""
    shown = list(fields)
    while sum(minimum(f) for f in shown) + GAP * (len(shown) - 1) > width:
        droppable = [f for f in DROP_ORDER if f in shown and not (f == "name" and "id" not in shown)]
        identifiers = [f for f in shown if f in ("id", "name")]
        droppable = [f for f in droppable if not (f in identifiers and len(identifiers) == 1)]
        if not droppable or len(shown) == 1:
            return None
        shown.remove(droppable[0])
    return shown


def _widened(widths: dict[str, int], natural: dict[str, int], spare: int) -> None:
    """The spare columns given out: sentences first reach a comfortable width, then a layer label its
    whole width (up to 20, so `L1 and machine model` stays on one line), then the sentences share
    what is left, evenly."""
    sentences = [f for f in widths if wraps(f) and f != "layer"]

    def share(limit: dict[str, int]) -> None:
        nonlocal spare
        while spare > 0:
            hungry = [f for f in sentences if widths[f] < limit[f]]
            if not hungry:
                return
            part = max(spare // len(hungry), 1)
            for f in hungry:
                extra = min(part, limit[f] - widths[f], spare)
                widths[f] += extra
                spare -= extra

    share({f: min(natural[f], COMFORTABLE_SENTENCE) for f in sentences})
    if "layer" in widths and wraps("layer"):
        extra = max(min(min(natural["layer"], 20) - widths["layer"], spare), 0)
        widths["layer"] += extra
        spare -= extra
    share(natural)


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


def marked_text(value: str) -> Any:
    """Text with the words between MARK_OPEN and MARK_CLOSE in bold (plain where colour is off)."""
    from rich.text import Text

    out = Text()
    for n, piece in enumerate(value.replace(MARK_CLOSE, MARK_OPEN).split(MARK_OPEN)):
        out.append(escape(piece), style="bold" if n % 2 else "")
    return out


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
    """What `records_table` draws without colour (rich's own line breaking, its column padding and
    rule), as text, ~30x faster: a long table into a file is text, not a drawing. Tested to be the
    same text, at every width, as rich's."""
    from rich._wrap import divide_line
    from rich.cells import cell_len

    right = {f for f in shown if f in ("year", "score", "count")}
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
                text = " " * pad + text if f in right else text + " " * pad
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


def styled_table(**extra: Any) -> Any:
    """A rich Table with every table's look: a rule under the header, no edges, GAP spaces between
    columns (`plain_table` draws the same text without rich)."""
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
    table = styled_table(show_header=first)
    for f in shown:
        style = {"id": "cyan", "score": "green", "year": "magenta", "code": "cyan"}.get(f) if color else None
        table.add_column(
            header(f),
            style=style,
            width=widths[f],
            no_wrap=not wraps(f),
            overflow="fold",
            justify="right" if f in ("year", "score", "count") else "left",
        )
    linked = "name" if "name" in shown else "id"
    for r in rows:
        link = r.get("url") if links and isinstance(r.get("url"), str) else None
        table.add_row(*(_cell(f, r.get(f), widths[f], link if f == linked else None) for f in shown))
    return table


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


def plain_stacked(rows: Sequence[dict[str, Any]], fields: Sequence[str], width: int, lead: bool = False) -> str:
    """`stacked` without colour: the text rich would draw, built as strings (a test compares them)."""
    lines: list[str] = []
    for n, r in enumerate(rows):
        if n or lead:
            lines.append("")
        lines.extend((label + part).rstrip() for label, part, _ in _labelled_parts(r, fields, width))
    return "\n".join(lines) + "\n" if lines else ""


SHORT_HEADERS = {
    "mechanism": "Mechanism",
    "objective": "Objective",
    "question": "Open question",
    "availability": "Availability",
}


def short_header(f: str) -> str:
    """Labels of the one-block-per-source views: short, so the values get the width."""
    return SHORT_HEADERS.get(f) or header(f)


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


# A list-of-tables field shown under another field's label: a place under `Where to look`, a setting
# under `Code`; alone, under this label.
UNDER = {"places": ("seam", "Where to look"), "settings": ("code", "Settings")}


def _labelled_parts(
    record: dict[str, Any], fields: Sequence[str], width: int, skip_empty: bool = False
) -> Iterator[tuple[str, str, str | None]]:
    """(`Label  ` padded, or as many spaces on a continuation line; a piece of the value; the http(s)
    link that piece is, if any) triples."""
    import textwrap

    shown = [f for f in fields if not (skip_empty and record.get(f) in (None, "", []))]
    labels = {f: "" if f in UNDER and UNDER[f][0] in shown else UNDER.get(f, ("", short_header(f)))[1] for f in shown}
    label_width = max((len(labels[f]) for f in shown), default=0)
    room = max(width - label_width - 2, 20)
    for f in shown:
        value = record.get(f)
        content = escape(human_cell(f, value))
        pieces: list[tuple[str, str | None]]
        if f in UNDER and isinstance(value, list):
            pieces = [p for n, item in enumerate(value, 1) for p in _item_lines(f, n, item, room)]
        elif f in ("url", "code") or not wraps(f):
            pieces = [(content, None)]  # identifiers and links whole, even past the edge
        elif isinstance(value, list):
            pieces = [(p, None) for p in pack([escape(str(v)) for v in value], room)]
        else:
            wrapped = textwrap.wrap(content, room, break_long_words=False, break_on_hyphens=False) or [""]
            pieces = [(p, None) for p in wrapped]
        for i, (part, link) in enumerate(pieces):
            yield (labels[f] if i == 0 else "").ljust(label_width) + "  ", part, link


def _item_lines(f: str, n: int, item: dict[str, Any], room: int) -> list[tuple[str, str | None]]:
    """One place (`1. path (symbol): note`, then its permalink whole on a line of its own) or one setting
    (`vLLM --flag: note (version)`), wrapped to `room`."""
    import textwrap

    if f == "places":
        head = f"{n}. {item['path']}" + (f" ({item['symbol']})" if item.get("symbol") else "")
        text = head + (f": {item['note']}" if item.get("note") else "")
    else:
        text = f"{item['engine']} {item['flag']}" + (f": {item['note']}" if item.get("note") else "")
        text += f" ({item['version']})" if item.get("version") else ""
    indent = "   " if f == "places" else "  "
    lines = textwrap.wrap(
        escape(text), room, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    ) or [""]
    pieces: list[tuple[str, str | None]] = [(line, None) for line in lines]
    link = item.get("url") if f == "places" else None
    if isinstance(link, str) and link.startswith(("https://", "http://")):
        pieces.append((indent + escape(link), link))
    return pieces


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


# --- overview views ----------------------------------------------------------------------------

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
    return _greedy(tokens, width)


def grid_lines(grid: dict[str, Any]) -> list[dict[str, Any]]:
    """The grid as flat rows (layer, year, names) for plain, CSV and Markdown: one per non-empty cell."""
    return [
        {"layer": row["code"], "year": year, "names": names}
        for row in grid["rows"]
        for year in grid["years"]
        if (names := row["cells"].get(year))
    ]


def guide_text(info: dict[str, Any] | None, fmt: str, width: int | None = None) -> str:
    """The map's study procedure and notes, for reading; unwrapped unless a width is given."""
    import textwrap

    if info is None or not info.get("title"):
        return "This catalog has no notes: it has no [catalog] table (title, preface, procedure, afterword).\n"

    def para(body: str, indent: str = "", first: str = "") -> str:
        if width is None:
            return f"{first or indent}{body}"
        return textwrap.fill(body, width=width, initial_indent=first or indent, subsequent_indent=indent)

    if fmt == "markdown":
        steps = "\n".join(f"{i}. {step}" for i, step in enumerate(info["procedure"], 1))
        parts = [f"# {info['title']}", info["preface"], "## Study procedure" if steps else "", steps, info["afterword"]]
        return "\n\n".join(p for p in parts if p) + "\n"
    blocks = [info["title"]]
    if info["preface"]:
        blocks.append(para(info["preface"]))
    if info["procedure"]:
        steps = [para(step, indent="     ", first=f"  {i}. ") for i, step in enumerate(info["procedure"], 1)]
        blocks.append("Study procedure\n" + "\n".join(steps))
    if info["afterword"]:
        blocks.append(para(info["afterword"]))
    return "\n\n".join(blocks) + "\n"


def document_markdown(result: Result, context: Context) -> Iterator[str]:
    """`guide --format markdown`."""
    yield guide_text(result.data, "markdown")


def document_plain(result: Result, context: Context) -> Iterator[str]:
    """`guide` in a pipe: the text unwrapped."""
    yield guide_text(result.data, "plain")


# --- levels --------------------------------------------------------------------------------------


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
    import textwrap

    from rich.console import Group
    from rich.text import Text

    blocks: list[Any] = []
    for n, r in enumerate(rows):
        if n:
            blocks.append(Text(""))
        head = f"{r['code'] or '-'}  {escape(r['title'] or '')}  ({r['count']})"
        blocks.append(Text(head, style="bold" if color else ""))
        lines = textwrap.wrap(
            escape(r["scope"] or ""), max(width - 4, 20), break_long_words=False, break_on_hyphens=False
        )
        blocks += [Text("    " + line) for line in lines]
    return Group(*blocks)


def level_view(level: dict[str, Any], width: int, color: bool) -> Any:
    """`layers L3`: the level's title, scope, question, metrics and symptoms, then its sources with
    their open questions."""
    import textwrap

    from rich.console import Group
    from rich.text import Text

    room = max(width - 4, 20)

    def wrapped(text: str, indent: str = "    ") -> list[Any]:
        return [
            Text(indent + line)
            for line in textwrap.wrap(escape(text), room, break_long_words=False, break_on_hyphens=False) or [""]
        ]

    bold = "bold" if color else ""
    parts: list[Any] = [
        Text(f"{level['code']}  {escape(level.get('title') or '')}", style="bold cyan" if color else "")
    ]
    for label, value in (("Scope", level.get("scope")), ("Question", level.get("question"))):
        if value:
            parts += [Text(""), Text(label, style=bold), *wrapped(value)]
    for label, items in (("Metrics", level.get("metrics")), ("Symptoms", level.get("symptoms"))):
        if items:
            parts += [Text(""), Text(label, style=bold)]
            for item in items:
                lines = textwrap.wrap(escape(item), room - 2, break_long_words=False, break_on_hyphens=False) or [""]
                parts += [Text("    - " + lines[0]), *(Text("      " + more) for more in lines[1:])]
    sources = level.get("sources") or []
    parts += [Text(""), Text(f"Sources ({len(sources)})", style=bold)]
    for s in sources:
        parts.append(Text(f"    {escape(s['name'])} ({escape(s['id'])})", style="bold" if color else ""))
        parts += wrapped(s["question"], "      ")
    return Group(*parts)
