"""A field's value as a cell: its header, its machine form (csv, tsv, plain), its human form (tables,
Markdown), spreadsheet-safe, on one line, with matched words bold; and which fields wrap. Cells take
their form from their field's kind (`fields.Kind`)."""

from __future__ import annotations

from typing import Any

from invmap.fields import HEADERS, KINDS, WRAPPING
from invmap.marks import MARK, unmarked
from invmap.safe import escape

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
    "bf16_dense": "BF16 dense",  # `invmap gpus`
    "fp8_dense": "FP8 dense",
    "figure": "Figure",
    "note": "Note",
}
WRAP_EXTRA = frozenset(
    {
        "note",
        "deprecated",  # a setting's: a sentence (`settings` blocks wrap it)
        "replaced_by",
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
EXCEL_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def header(f: str) -> str:
    return HEADERS.get(f) or EXTRA_HEADERS.get(f, f.replace("_", " ").capitalize())


def wraps(f: str) -> bool:
    """Whether a field's cells wrap at spaces (sentences, labels, lists) or stay whole (identifiers)."""
    return f in WRAPPING or f in WRAP_EXTRA


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


def one_line(text: str) -> str:
    """Tabs and line breaks as single spaces (a cell of a line-based format)."""
    return " ".join(text.split()) if ("\t" in text or "\n" in text or "\r" in text) else text


def excel_safe(cell: str) -> str:
    """OWASP's rule for spreadsheets: a cell that could start a formula gets a leading `'`."""
    return "'" + cell if cell.startswith(EXCEL_TRIGGERS) else cell


def marked_text(value: str) -> Any:
    """rich Text with the words between the marks in bold (plain where colour is off)."""
    from rich.text import Text

    out = Text()
    for n, piece in enumerate(value.replace(MARK[1], MARK[0]).split(MARK[0])):
        out.append(escape(piece), style="bold" if n % 2 else "")
    return out
