"""The formats written flat, a record after another, never drawn: JSON, JSON lines, CSV and TSV (for
programs), Markdown tables and plain tab-separated lines. rich is never loaded here. Each renderer is
named by `formats.FORMATS`: `render(result, context)` yields the text a batch of records at a time."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

from invmap.marks import unmarked
from invmap.render import BATCH, Context, Result, batches
from invmap.render.cells import excel_safe, header, human_cell, machine_cell, one_line
from invmap.safe import json_safe

_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode  # NaN and Infinity are not JSON


def _finite(encode: Any, data: Any) -> str:
    """`encode(data)`; a NaN or infinity in `data` (which strict JSON readers reject) is refused, never
    written: every number a command prints is checked where it is read, so this is the last guard."""
    try:
        return encode(data)
    except ValueError as exc:
        if "out of range float" not in str(exc).lower():
            raise
        from invmap.errors import CatalogError

        raise CatalogError("the JSON answer", ["would hold a number that is not finite (NaN or infinity)"]) from None


def to_json(data: Any, indent: int | None = 2) -> str:
    """The one JSON encoder: UTF-8 text kept as is, but every C0, C1 and bidi control written as a
    `\\u` escape (the same string to a JSON reader, nothing raw for a terminal); never NaN or Infinity."""
    if indent == 2:
        try:
            return json_safe(_finite(lambda d: _indented(d, "\n"), data)) + "\n"
        except _Unusual:
            pass
    text = _finite(lambda d: json.dumps(d, ensure_ascii=False, indent=indent, allow_nan=False), data)
    return json_safe(text) + "\n"


_SCALARS = frozenset({str, int, float, bool, type(None)})
_TEXT = frozenset({str})
_TOGETHER: dict[str, Any] = {}  # the indent of a record's items -> a C encoder parting items by `,` and it


def _flat(value: Any) -> bool:
    """A dict of scalars with text keys: one `_records` can write it."""
    return type(value) is dict and _TEXT.issuperset(map(type, value)) and _SCALARS.issuperset(map(type, value.values()))


def _records(values: Sequence[dict[str, Any]], newline: str) -> str:
    """`_indented` of a list of non-empty flat dicts (a triage level's 23,000 sources), from one C
    encoder call over the whole list, its items parted by `,`, a line break and the records' items'
    indent. A part between a `}` and a `{` is between two records: a scalar never ends in `}`, and the
    encoder writes no raw line break inside a string. Those become the records' own lines."""
    inner, deeper = newline + "  ", newline + "    "
    encode = _TOGETHER.get(deeper)
    if encode is None:
        encode = _TOGETHER[deeper] = json.JSONEncoder(
            ensure_ascii=False, allow_nan=False, separators=("," + deeper, ": ")
        ).encode
    text = encode(values)[2:-2]  # without the outer `[{` and `}]`
    text = text.replace("}," + deeper + "{", inner + "}," + inner + "{" + deeper)
    return "[" + inner + "{" + deeper + text + inner + "}" + newline + "]"


class _Unusual(Exception):
    """A value `_indented` leaves to `json.dumps` (a key that is not text)."""


def _indented(value: Any, newline: str) -> str:
    """`json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False)`, byte for byte, with each
    scalar written by the C encoder (`json.dumps` with an indent is pure Python: a triage of a level of
    23,000 sources spent seconds there). `newline` is a line break and the current indent."""
    inner = newline + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        if not all(type(k) is str for k in value):
            raise _Unusual
        items = (_ENCODE(k) + ": " + _indented(v, inner) for k, v in value.items())
        return "{" + inner + ("," + inner).join(items) + newline + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        if all(v and _flat(v) for v in value):
            return _records(value, newline)
        return "[" + inner + ("," + inner).join(_indented(v, inner) for v in value) + newline + "]"
    return _ENCODE(value)


def json_line(value: Any) -> str:
    """Compact one-line JSON for one record, as `json.dumps(..., ensure_ascii=False)` writes it."""
    return json_safe(_finite(_ENCODE, value))


def json_lines(values: Sequence[Any], between: str) -> str:
    """`json_line` of each value, joined by `between`: encoded as a batch (one guard, one escaping pass
    over the batch's text; the same bytes, as the escaping works character by character)."""
    return json_safe(_finite(lambda part: between.join(map(_ENCODE, part)), values))


def _written_batches(result: Result) -> Iterator[list[str]] | None:
    """Each batch of the rows as compact JSON lines, written by the index (a lazy selection of records
    holding exactly the fields asked for, in order: `list`, `search`'s sources aside): None otherwise."""
    rows = result.rows
    lines = getattr(rows, "json_lines", None)
    if lines is None or "why" in result.fields or list(getattr(rows, "columns", ())) != result.fields:
        return None
    return (lines(start, start + BATCH, json_line) for start in range(0, len(rows), BATCH))


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
    written = _written_batches(result)
    if written is not None:
        for n, lines in enumerate(written):
            yield ("[\n" if n == 0 else ",\n") + json_safe(",\n".join(lines))
        yield "\n]\n"
        return
    for n, part in enumerate(machine_batches(result)):
        yield ("[\n" if n == 0 else ",\n") + json_lines(part, ",\n")
    yield "\n]\n"


def jsonl_text(result: Result, context: Context) -> Iterator[str]:
    if isinstance(result.data, list):
        yield json_lines(result.data, "\n") + "\n" if result.data else ""
        return
    written = _written_batches(result)
    if written is not None:
        for lines in written:
            if lines:
                yield json_safe("\n".join(lines)) + "\n"
        return
    for part in machine_batches(result):
        if part:
            yield json_lines(part, "\n") + "\n"


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


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(one_line(c).replace("|", "\\|") for c in cells) + " |\n"

    return line(headers) + "|" + "---|" * len(headers) + "\n" + "".join(line(r) for r in rows)


def plain_text(result: Result, context: Context) -> Iterator[str]:
    fields = result.fields
    if result.single or result.blocks:  # the same shape whatever the number of records
        for n, record in enumerate(r for part in batches(result) for r in part):
            yield ("\n" if n else "") + "".join(f"{f}\t{_plain_cell(f, record[f])}\n" for f in fields)
        return
    for part in batches(result):
        yield "".join("\t".join(_plain_cell(f, r[f]) for f in fields) + "\n" for r in part)


def _plain_cell(f: str, value: Any) -> str:
    if f == "year" and value is None:
        return "n.d."
    if isinstance(value, float):
        return human_cell(f, value)
    return one_line(machine_cell(f, value))
