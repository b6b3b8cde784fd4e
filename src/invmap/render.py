"""Records -> text or rich tables. Returns; never prints (the CLI decides stdout vs stderr).

Records are the JSON-contract dicts of `Source.to_dict()` (plus `score` from search). rich is
imported only by the table builders, so machine formats never load it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invmap.errors import UsageError
from invmap.vocabulary import FIELD_HELP, SCORED_FIELDS

if TYPE_CHECKING:
    from rich.table import Table

FORMATS: tuple[str, ...] = ("table", "json", "jsonl", "csv", "tsv", "markdown", "plain")
MACHINE_FORMATS = frozenset({"json", "jsonl", "csv", "tsv"})

HEADERS: dict[str, str] = {
    "id": "ID", "name": "Name", "source": "Source", "authors": "Authors", "arxiv": "arXiv", "doi": "DOI",
    "url": "URL", "type": "Type", "year": "Year", "layer": "Layer", "layers": "Codes",
    "mechanism": "Central mechanism", "objective": "Reported objective",
    "question": "Unresolved engineering question", "availability": "Implementation availability",
    "accessed": "Accessed", "score": "Score",
    # overview views
    "code": "Code", "title": "Title", "count": "Count", "sources": "Sources", "names": "Names",
    "group": "Group", "key": "Key",
}  # fmt: skip


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


def choose_format(fmt: str | None, json_flag: bool, is_terminal: bool) -> str:
    """`--json` is `--format json`; with neither, a table on a terminal and plain lines in a pipe."""
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"unknown format '{fmt}' (valid formats: {', '.join(FORMATS)})")
    if json_flag:
        if fmt not in (None, "json"):
            raise UsageError(f"--json and --format {fmt} contradict each other: use one of them")
        return "json"
    if fmt is not None:
        return fmt
    return "table" if is_terminal else "plain"


def project(records: Sequence[dict[str, Any]], fields: Sequence[str]) -> list[dict[str, Any]]:
    return [{f: r[f] for f in fields} for r in records]


def _machine_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ";".join(str(v) for v in value)
    return str(value)


def human_cell(field: str, value: Any) -> str:
    """How a value reads in tables, plain lines and Markdown: `n.d.` for no year, lists comma-joined."""
    if value is None:
        return "n.d." if field == "year" else ""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def _one_line(text: str) -> str:
    return " ".join(text.split()) if ("\t" in text or "\n" in text or "\r" in text) else text


def render_records(records: Sequence[dict[str, Any]], fields: Sequence[str], fmt: str) -> str:
    """Every format but `table`, for a list of records; ends with a newline unless empty."""
    rows = project(records, fields)
    if fmt == "json":
        # One record a line inside the array: readable, and encoded by json's C encoder, which
        # `indent=` would swap for the pure-Python one (~1 s more at 100,000 sources).
        if not rows:
            return "[]\n"
        encode = json.JSONEncoder(ensure_ascii=False).encode  # one encoder, not one per record
        return "[\n" + ",\n".join(map(encode, rows)) + "\n]\n"
    if fmt == "jsonl":
        encode = json.JSONEncoder(ensure_ascii=False).encode
        return "".join(encode(r) + "\n" for r in rows)
    if fmt in ("csv", "tsv"):
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer, dialect="excel" if fmt == "csv" else "excel-tab", lineterminator="\n")
        writer.writerow(fields)
        writer.writerows([_machine_cell(r[f]) for f in fields] for r in rows)
        return buffer.getvalue()
    if fmt == "markdown":
        return markdown_table([HEADERS[f] for f in fields], [[human_cell(f, r[f]) for f in fields] for r in rows])
    if fmt == "plain":
        return "".join("\t".join(_one_line(human_cell(f, r[f])) for f in fields) + "\n" for r in rows)
    raise ValueError(f"not a text format: {fmt}")


def render_record(record: dict[str, Any], fields: Sequence[str], fmt: str) -> str:
    """One record (`show`): JSON is an object; plain is `field:<TAB>value` lines; Markdown a two-column table."""
    if fmt == "json":
        return json.dumps(project([record], fields)[0], ensure_ascii=False, indent=2) + "\n"
    if fmt == "plain":
        return "".join(f"{f}:\t{_one_line(human_cell(f, record[f]))}\n" for f in fields)
    if fmt == "markdown":
        return markdown_table(["Field", "Value"], [[HEADERS[f], human_cell(f, record[f])] for f in fields])
    return render_records([record], fields, fmt)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(_one_line(c).replace("|", "\\|") for c in cells) + " |\n"

    return line(headers) + "|" + "---|" * len(headers) + "\n" + "".join(line(r) for r in rows)


# Table layout: short columns get their content's width up to a cap; the long sentences share the rest.
_CAPS = {"id": 24, "name": 22, "type": 17, "layer": 12, "year": 4, "score": 5, "layers": 14, "accessed": 10,
         "arxiv": 10, "doi": 24, "authors": 20, "url": 32, "code": 5, "count": 5, "title": 30}  # fmt: skip
_SENTENCES = {"mechanism", "objective", "question", "availability", "source", "names"}


def column_widths(rows: Sequence[Sequence[str]], fields: Sequence[str], total: int) -> list[int]:
    """Widths for a table `total` columns wide (3 a column and 1 for the edges go to padding and rules)."""
    natural = [max([len(HEADERS[f])] + [len(r[i]) for r in rows]) for i, f in enumerate(fields)]
    sentences = [i for i, f in enumerate(fields) if f in _SENTENCES]
    short = [i for i, f in enumerate(fields) if f not in _SENTENCES]
    widths = [0 if f in _SENTENCES else min(n, _CAPS.get(f, 20)) for n, f in zip(natural, fields)]
    room = total - 3 * len(fields) - 2
    # The sentences are what people read: they keep at least 45% of the room (16 columns at worst).
    least = max(16, int(room * 0.45) // len(sentences)) if sentences else 0
    wanted = room - least * len(sentences)
    squeezable = [i for i in short if fields[i] not in ("year", "score")]
    while sum(widths[i] for i in short) > wanted and any(widths[i] > 6 for i in squeezable):
        widest = max(squeezable, key=lambda i: widths[i])
        widths[widest] -= 1
    spare = room - sum(widths)
    if not sentences:  # nothing to share with: let capped columns grow back towards their content
        for i in short:
            extra = min(natural[i] - widths[i], max(spare, 0))
            widths[i] += extra
            spare -= extra
    for rank, i in enumerate(sentences):
        share = spare // (len(sentences) - rank)
        widths[i] = max(min(natural[i], share), 16)
        spare -= widths[i]
    return widths


def more_note(more: int) -> str:
    """Under a table cut short: how many rows were left out and how to see them."""
    return f"{more} more; use --limit or --all, or a machine format (--format jsonl, csv)"


def records_table(records: Sequence[dict[str, Any]], fields: Sequence[str], *, width: int) -> Table:
    """A rich table of records, `width` columns wide."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    rows = [[human_cell(f, r[f]) for f in fields] for r in records]
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", show_lines=False)
    for f, w in zip(fields, column_widths(rows, fields, width)):
        style = {"id": "cyan", "score": "green", "year": "magenta"}.get(f)
        table.add_column(HEADERS[f], style=style, width=w, overflow="fold",
                         justify="right" if f in ("year", "score") else "left")  # fmt: skip
    for row in rows:
        table.add_row(*map(Text, row))  # Text, not str: a "[bold]" in the data is data, not markup
    return table


def record_table(record: dict[str, Any], fields: Sequence[str]) -> Table:
    """`show` on a terminal: one row per field."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE, show_header=False, expand=False)
    table.add_column("Field", style="bold", no_wrap=True)
    table.add_column("Value", overflow="fold")
    for f in fields:
        table.add_row(HEADERS[f], Text(human_cell(f, record[f])))
    return table


def fields_text(fields: Sequence[str] = SCORED_FIELDS) -> str:
    width = max(len(f) for f in fields)
    return "".join(f"{f.ljust(width)}  {FIELD_HELP[f]}\n" for f in fields)


# --- overview views ---------------------------------------------------------------------------

BLOCK = "█"


def bar_chart(title: str, counts: dict[str, int], width: int) -> str:
    """A horizontal bar chart `width` columns wide: label, bar of blocks scaled to the largest count, count."""
    if not counts:
        return f"{title}\n  (none)\n"
    label_width = max(len(k) for k in counts)
    digits = max(len(str(n)) for n in counts.values())
    room = max(width - label_width - digits - 6, 1)
    top = max(counts.values()) or 1
    lines = [title]
    for key, n in counts.items():
        bar = BLOCK * (max(1, round(n * room / top)) if n else 0)
        lines.append(f"  {key.ljust(label_width)}  {bar}{' ' if bar else ''}{n}")
    return "\n".join(lines) + "\n"


def stats_charts(counts: dict[str, Any], width: int) -> str:
    """`invmap stats` on a terminal: the three bar charts."""
    return "\n".join(
        [
            f"{counts['total']} sources\n",
            bar_chart("By type", counts["by_type"], width),
            bar_chart("By year", counts["by_year"], width),
            bar_chart("By layer code", counts["by_layer"], width),
        ]
    )


def grid_table(grid: dict[str, Any]) -> Table:
    """`invmap map`: layer codes down, years across, short names in the cells."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SQUARE, show_lines=True, header_style="bold")
    table.add_column("Layer", style="bold cyan", no_wrap=True)
    for year in grid["years"]:
        table.add_column(year, overflow="fold")
    from rich.text import Text

    for row in grid["rows"]:
        table.add_row(row["code"], *(Text("\n".join(row["cells"][y])) for y in grid["years"]))
    return table


def grid_lines(grid: dict[str, Any]) -> list[dict[str, Any]]:
    """The grid as flat rows (layer, year, names) for plain, CSV and Markdown: one per non-empty cell."""
    return [
        {"layer": row["code"], "year": year, "names": names}
        for row in grid["rows"]
        for year in grid["years"]
        if (names := row["cells"][year])
    ]


def guide_text(info: Any, fmt: str, width: int | None = None) -> str:
    """The map's study procedure and notes, for reading; unwrapped unless a width is given."""
    import textwrap

    def para(text: str, indent: str = "", first: str = "") -> str:
        if width is None:
            return f"{first or indent}{text}"
        return textwrap.fill(text, width=width, initial_indent=first or indent, subsequent_indent=indent)

    if fmt == "markdown":
        steps = "\n".join(f"{i}. {step}" for i, step in enumerate(info.procedure, 1))
        parts = [f"# {info.title}", info.preface, "## Study procedure", steps, info.afterword]
        return "\n\n".join(p for p in parts if p) + "\n"
    blocks = [info.title]
    if info.preface:
        blocks.append(para(info.preface))
    if info.procedure:
        steps = [para(step, indent="     ", first=f"  {i}. ") for i, step in enumerate(info.procedure, 1)]
        blocks.append("Study procedure\n" + "\n".join(steps))
    if info.afterword:
        blocks.append(para(info.afterword))
    return "\n\n".join(blocks) + "\n"
