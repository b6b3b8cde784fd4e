"""Records -> text or rich renderables. Returns; never prints (the CLI's `emit` decides where output goes).

Output formats are one enum (`Format`); text formats are rendered by `text(result, fmt)`, terminal
views by `screen(result, width, color)`. rich is imported only by the terminal renderers, so machine
formats never load it. JSON is encoded by one encoder (`to_json`).
"""

from __future__ import annotations

import enum
import io
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from invmap.errors import UsageError
from invmap.fields import FIELD_HELP, HEADERS, SCORED_FIELDS, WRAPPING
from invmap.safe import escape


class Format(str, enum.Enum):
    TABLE = "table"
    JSON = "json"
    JSONL = "jsonl"
    CSV = "csv"
    TSV = "tsv"
    MARKDOWN = "markdown"
    PLAIN = "plain"


FORMATS: tuple[str, ...] = tuple(f.value for f in Format)
MACHINE_FORMATS = frozenset({"json", "jsonl", "csv", "tsv"})
# Commands whose result has no sensible form in every format; every other command takes all of them.
COMMAND_FORMATS: dict[str, tuple[str, ...]] = {
    "stats": ("table", "json", "csv", "tsv", "markdown", "plain"),
    "map": ("table", "json", "csv", "tsv", "markdown", "plain"),
    "guide": ("table", "json", "markdown", "plain"),
}


def formats_of(command: str | None) -> tuple[str, ...]:
    return COMMAND_FORMATS.get(command or "", FORMATS)


EXTRA_HEADERS = {
    "code": "Code",
    "title": "Title",
    "scope": "Scope",
    "count": "Count",
    "sources": "Sources",
    "names": "Names",
    "group": "Group",
    "key": "Key",
    "records": "Records",
    "record_id": "Record",
    "result_type": "Result",
    "valid": "Valid",
    "addresses": "Addresses",
    "path": "File",
}
WRAP_EXTRA = frozenset({"title", "scope", "names", "sources", "records", "addresses"})


def header(f: str) -> str:
    return HEADERS.get(f) or EXTRA_HEADERS.get(f, f.capitalize())


@dataclass
class Result:
    """What a command produced: flat `rows` (with `fields`) for every format; optionally a different
    JSON shape (`data`) and a terminal drawing of its own (`draw(width, color) -> renderable`)."""

    rows: list[dict[str, Any]]
    fields: list[str]
    data: Any = None
    draw: Callable[[int, bool], Any] | None = None
    single: bool = False  # one record (`show`): JSON is an object, plain is `field:<TAB>value` lines


def check_format(fmt: str, allowed: Sequence[str], command: str) -> None:
    if fmt not in allowed:
        raise UsageError(f"{command} cannot print '{fmt}' (its formats: {', '.join(allowed)})")


def choose_format(
    fmt: str | None, json_flag: bool, is_terminal: bool, allowed: Sequence[str] = FORMATS, command: str = "this command"
) -> str:
    """`--json` is `--format json`; with neither, a table on a terminal and plain lines in a pipe."""
    if json_flag:
        if fmt not in (None, "json"):
            raise UsageError(f"--json and --format {fmt} contradict each other: use one of them")
        fmt = "json"
    if fmt is None:
        fmt = "table" if is_terminal else "plain"
    check_format(fmt, allowed, command)
    return fmt


def parse_fields(value: str | None, allowed: Sequence[str]) -> list[str] | None:
    """`id,name,year` -> ['id', 'name', 'year']; an unknown name is a UsageError listing the valid ones."""
    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--fields needs at least one field name (valid fields: {', '.join(allowed)})")
    unknown = [n for n in names if n not in allowed]
    if unknown:
        word = "field" if len(unknown) == 1 else "fields"
        raise UsageError(f"unknown {word} {', '.join(repr(n) for n in unknown)} (valid fields: {', '.join(allowed)})")
    return list(dict.fromkeys(names))


# --- text formats ------------------------------------------------------------------------------


def to_json(data: Any, indent: int | None = 2) -> str:
    """The one JSON encoder: UTF-8 text kept as is (the CLI escapes what the stream cannot encode)."""
    return json.dumps(data, ensure_ascii=False, indent=indent) + "\n"


def line_encoder() -> Callable[[Any], str]:
    """Compact one-line JSON for one record at a time, as `json.dumps(..., ensure_ascii=False)`
    writes it. The C encoder is built once rather than once a record (~1/3 faster at 100,000)."""
    from json import encoder

    if encoder.c_make_encoder is None:  # pragma: no cover - an interpreter without the C accelerator
        return json.JSONEncoder(ensure_ascii=False).encode

    def refuse(value: Any) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    make = encoder.c_make_encoder(None, refuse, encoder.encode_basestring, None, ": ", ", ", False, False, True)
    return lambda value: "".join(make(value, 0))


def _machine_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ";".join(str(v) for v in value)
    return str(value)


def human_cell(f: str, value: Any, joiner: str = ", ") -> str:
    """How a value reads in tables and Markdown: `n.d.` for no year, lists joined."""
    if value is None:
        return "n.d." if f == "year" else ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return joiner.join(str(v) for v in value)
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


def text(result: Result, fmt: str, *, excel: bool = False) -> str:
    """Every format but `table`, whole; ends with a newline unless empty."""
    return "".join(pieces(result, fmt, excel=excel))


def pieces(result: Result, fmt: str, *, excel: bool = False) -> Iterator[str]:
    """Every format but `table`, as consecutive pieces of text: a batch of records at a time."""
    fields = result.fields
    rows = result.rows
    same = not rows or list(rows[0]) == fields  # project only records holding other keys or another order

    def batches() -> Iterator[list[dict[str, Any]]]:
        for start in range(0, len(rows), BATCH):
            part = rows[start : start + BATCH]
            yield part if same else [{f: r.get(f) for f in fields} for r in part]

    if fmt == "json" and (result.data is not None or result.single):
        yield to_json(result.data if result.data is not None else next(batches())[0], indent=2)
    elif fmt == "json":
        # One record a line inside the array: readable, and fast (the C encoder; indent= is pure Python).
        if not rows:
            yield "[]\n"
            return
        encode = line_encoder()
        for n, part in enumerate(batches()):
            yield ("[\n" if n == 0 else ",\n") + ",\n".join(map(encode, part))
        yield "\n]\n"
    elif fmt == "jsonl":
        encode = line_encoder()
        for part in batches():
            yield "".join(encode(r) + "\n" for r in part)
    elif fmt in ("csv", "tsv"):
        import csv

        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer, dialect="excel" if fmt == "csv" else "excel-tab", lineterminator="\n")
        writer.writerow(fields)
        for part in batches():
            cells = ([v if type(v) is str else _machine_cell(v) for v in map(r.get, fields)] for r in part)
            writer.writerows(([excel_safe(c) for c in row] for row in cells) if excel else cells)
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
        yield buffer.getvalue()
    elif fmt == "markdown":
        projected = [r for part in batches() for r in part]
        if result.single:
            yield markdown_table(["Field", "Value"], [[header(f), human_cell(f, projected[0][f])] for f in fields])
        else:
            yield markdown_table(
                [header(f) for f in fields], [[human_cell(f, r[f]) for f in fields] for r in projected]
            )
    elif fmt == "plain":
        if result.single:
            record = next(batches())[0]
            yield "".join(
                f"{f}:\t{_one_line(_machine_cell(record[f]) if f != 'year' else human_cell(f, record[f]))}\n"
                for f in fields
            )
            return
        for part in batches():
            yield "".join("\t".join(_plain_cell(f, r[f]) for f in fields) + "\n" for r in part)
    else:
        raise ValueError(f"not a text format: {fmt}")


def _plain_cell(f: str, value: Any) -> str:
    if isinstance(value, list):
        return ";".join(str(v) for v in value)  # as csv and tsv join lists
    return _one_line(human_cell(f, value))


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(_one_line(c).replace("|", "\\|") for c in cells) + " |\n"

    return line(headers) + "|" + "---|" * len(headers) + "\n" + "".join(line(r) for r in rows)


def fields_text(fields: Sequence[str] = SCORED_FIELDS) -> str:
    width = max(len(f) for f in fields)
    return "".join(f"{f.ljust(width)}  {FIELD_HELP[f]}\n" for f in fields)


# --- terminal tables ---------------------------------------------------------------------------

GAP = 2  # columns between two table columns
SENTENCES = frozenset({"mechanism", "objective", "question", "availability"})
MIN_SENTENCE = 36  # a sentence column narrower than this reads badly: drop other columns first
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


def _longest_word(texts: Sequence[str]) -> int:
    return max((len(w) for t in texts for w in t.split()), default=1)


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
    cells = {f: [human_cell(f, r.get(f)) for r in rows] for f in fields}
    natural = {f: max([len(header(f)), *(len(line) for c in cells[f] for line in c.split("\n"))]) for f in fields}

    def minimum(f: str) -> int:
        if not wraps(f):
            return natural[f]
        lists = [r.get(f) for r in rows if isinstance(r.get(f), list)]
        unit = max((len(str(item)) for items in lists for item in items), default=0) or _longest_word(cells[f])
        floor = MIN_SENTENCE if f in SENTENCES else 12  # a sentence reads badly narrower; a label wraps well
        return max(min(natural[f], floor), unit, len(header(f)) if len(header(f)) <= 12 else 1)

    shown = list(fields)
    while sum(minimum(f) for f in shown) + GAP * (len(shown) - 1) > width:
        droppable = [f for f in DROP_ORDER if f in shown and not (f == "name" and "id" not in shown)]
        identifiers = [f for f in shown if f in ("id", "name")]
        droppable = [f for f in droppable if not (f in identifiers and len(identifiers) == 1)]
        if not droppable or len(shown) == 1:
            return None
        shown.remove(droppable[0])
    widths = {f: minimum(f) for f in shown}
    spare = width - sum(widths.values()) - GAP * (len(shown) - 1)
    growing = [f for f in shown if wraps(f)]
    # Short labels first reach their natural width (up to 20), then the sentences share the rest.
    for f in sorted(growing, key=lambda f: f not in ("layer",)):
        cap = natural[f] if f not in ("layer",) else min(natural[f], 20)
        if f == "layer":
            extra = min(cap - widths[f], spare)
            widths[f] += max(extra, 0)
            spare -= max(extra, 0)
    sentences = [f for f in growing if f != "layer"]
    while spare > 0 and sentences:
        hungry = [f for f in sentences if widths[f] < natural[f]]
        if not hungry:
            break
        share = max(spare // len(hungry), 1)
        for f in hungry:
            extra = min(share, natural[f] - widths[f], spare)
            widths[f] += extra
            spare -= extra
    return shown, widths


def _cell(f: str, value: Any, width: int, link: str | None) -> Any:
    """One table cell; `link` (an http(s) URL) makes it an OSC 8 hyperlink."""
    from rich.style import Style
    from rich.text import Text

    if isinstance(value, list) and wraps(f):
        return Text("\n".join(pack([escape(str(v)) for v in value], width)))
    content = escape(human_cell(f, value))
    style = Style(link=link) if link and link.startswith(("https://", "http://")) else ""
    return Text(content, style=style)


def records_table(
    rows: Sequence[dict[str, Any]], fields: Sequence[str], width: int, color: bool, links: bool = False
) -> Any:
    """A table `width` columns wide that never splits an identifier; a stacked view when it cannot.
    With `links`, each source's name (or its id, when the name is not shown) links to its url."""
    from rich import box
    from rich.table import Table

    fitted = layout(rows, fields, width)
    if fitted is None:
        return stacked(rows, fields, width, color)
    shown, widths = fitted
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, GAP - 1, 0, 0),
        header_style="bold",
        collapse_padding=True,
    )
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


def stacked(rows: Sequence[dict[str, Any]], fields: Sequence[str], width: int, color: bool) -> Any:
    """One block per source: the first identifier as a heading, then `Label  value` lines."""
    from rich.console import Group
    from rich.text import Text

    blocks: list[Any] = []
    for n, r in enumerate(rows):
        if n:
            blocks.append(Text(""))
        blocks.extend(field_lines(r, fields, width, color))
    return Group(*blocks)


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
    record: dict[str, Any], fields: Sequence[str], width: int, color: bool, skip_empty: bool = False
) -> list[Any]:
    """`Label  value` lines, values wrapped at spaces to the width; links whole on their own line."""
    from rich.text import Text

    shown = [f for f in fields if not (skip_empty and record.get(f) in (None, "", []))]
    label_width = max((len(short_header(f)) for f in shown), default=0)
    room = max(width - label_width - 2, 20)
    lines = []
    for f in shown:
        value = record.get(f)
        content = escape(human_cell(f, value))
        if f in ("url", "code") or not wraps(f):
            parts = [content]  # identifiers and links whole, even past the edge
        elif isinstance(value, list):
            parts = pack([escape(str(v)) for v in value], room)
        else:
            import textwrap

            parts = textwrap.wrap(content, room, break_long_words=False, break_on_hyphens=False) or [""]
        for i, part in enumerate(parts):
            label = short_header(f) if i == 0 else ""
            line = Text(no_wrap=True, overflow="ignore")
            line.append(label.ljust(label_width) + "  ", style="bold" if color else "")
            line.append(part)
            lines.append(line)
    return lines


def record_view(record: dict[str, Any], fields: Sequence[str], width: int, color: bool) -> Any:
    """`show` on a terminal: empty fields left out, the layer once with its codes, links whole."""
    from rich.console import Group

    shown = dict(record)
    if "layer" in fields and "layers" in fields and record.get("layers"):
        codes = ", ".join(record["layers"])
        if codes != record["layer"]:
            shown["layer"] = f"{record['layer']} ({codes})"
    kept = [f for f in fields if not (f == "layers" and "layer" in fields)]
    return Group(*field_lines(shown, kept, width, color, skip_empty=True))


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

    if info is None:
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
