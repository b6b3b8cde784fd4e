"""How a validation problem is worded: one pydantic error -> one sentence in the catalog's own terms,
naming the source (or table), the field and what was found (`source 3 (flashattention): field 'year':
expected an integer, got text '2022'`). Each kind of error has its describer (`_DESCRIBERS`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from invmap.fields import TABLE_FIELDS

# What each pydantic error type means in a catalog, said in the catalog's own terms.
_EXPECTED = {
    "string_type": "text",
    "int_type": "an integer",
    "date_type": "a TOML date such as 2026-08-07 (no quotes)",
    "list_type": "an array",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "dict_type": "a table",
}


def number_text(value: int) -> str:
    """An integer as text, however long (Python refuses to write one of more than 4,300 digits)."""
    if -(10**18) < value < 10**18:
        return str(value)
    return f"of about {int(abs(value).bit_length() * 0.30103):,} digits"


def _describe_value(value: Any) -> str:
    from invmap.safe import escape

    kinds = {
        str: "text",
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        dt.date: "a date",
        dt.datetime: "a date-time",
        dt.time: "a time",
        list: "an array",
        dict: "a table",
    }
    kind = kinds.get(type(value), type(value).__name__)
    if isinstance(value, int) and not isinstance(value, bool):
        shown = number_text(value)
    else:
        shown = escape(repr(value)) if isinstance(value, (str, float)) else ""
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{kind} {shown}".strip()


class _Error(NamedTuple):
    """One pydantic error, its location without validator names."""

    loc: list[Any]
    kind: str
    value: Any
    err: Any

    @property
    def field(self) -> str:
        """The field (or key) the error is about."""
        from invmap.safe import escape

        return escape(str(self.loc[-1])) if self.loc else ""

    @property
    def item(self) -> str:
        """The field, or for an item of a list the list and the item's place (`keywords[2]`)."""
        from invmap.safe import escape

        if isinstance(self.loc[-1] if self.loc else None, int) and len(self.loc) >= 2:
            return f"{escape(str(self.loc[-2]))}[{self.loc[-1]}]"
        return self.field

    @property
    def message(self) -> str:
        """pydantic's own words, for a rule no describer words better."""
        from invmap.safe import escape

        return escape(str(self.err["msg"]).removeprefix("Value error, "))


def _missing(e: _Error) -> str:
    return f"missing required field '{e.field}'"


def _unknown(e: _Error) -> str:
    return f"unknown field '{e.field}'"


def _empty_list(e: _Error) -> str:
    return f"field '{e.field}': must not be an empty array (leave the field out instead)"


def _wrong_type(e: _Error) -> str:
    return f"field '{e.field}': expected {_EXPECTED[e.kind]}, got {_describe_value(e.value)}"


def _wrong_form(e: _Error) -> str:
    return f"field '{e.item}': {_pattern_mismatch(e.item, e.value, (e.err.get('ctx') or {}).get('pattern'))}"


def _out_of_range(e: _Error) -> str:
    from invmap.model import FIRST_YEAR, LAST_YEAR

    if e.item != "year":
        return _other(e)
    value = number_text(e.value) if isinstance(e.value, int) else e.value
    return f"field 'year': implausible year {value} (expected {FIRST_YEAR} to {LAST_YEAR}, or leave it out for n.d.)"


def _other(e: _Error) -> str:
    return f"field '{e.item}': {e.message}"


_DESCRIBERS: dict[str, Callable[[_Error], str]] = {
    "missing": _missing,
    "extra_forbidden": _unknown,
    "too_short": _empty_list,
    **dict.fromkeys(_EXPECTED, _wrong_type),
    "string_pattern_mismatch": _wrong_form,
    "greater_than_equal": _out_of_range,
    "less_than_equal": _out_of_range,
}


def describe_error(err: Any, raw: dict[str, Any]) -> str:
    """One pydantic error -> `source 3 (flashattention): field 'year': expected an integer, got text '2022'`."""
    from invmap.safe import escape

    loc = [part for part in err["loc"] if not (isinstance(part, str) and "[" in part)]  # drop validator names
    e = _Error(loc, err["type"], err.get("input"), err)
    where = _where(loc, raw)
    if e.kind in ("missing", "too_short") and loc == ["sources"]:
        return "no sources: add at least one [[sources]] table"
    if len(loc) >= 3 and loc[-3] in TABLE_FIELDS and isinstance(loc[-2], int):
        return _column_error(where, str(loc[-3]), loc[-2], e.field, e.kind, e.value, err)
    if len(loc) >= 2 and loc[-2] in TABLE_FIELDS and isinstance(loc[-1], int) and e.kind in _EXPECTED:
        return f"{where}field '{escape(str(loc[-2]))}[{loc[-1]}]': expected a table, got {_describe_value(e.value)}"
    return where + _DESCRIBERS.get(e.kind, _other)(e)


def _column_error(where: str, name: str, item: int, column: str, kind: str, value: Any, err: Any) -> str:
    """A problem in one column of one item of a list-of-tables field: `places[2].commit: ...`."""
    from invmap.fields import KINDS
    from invmap.model import COLUMN_FORMS
    from invmap.safe import escape

    at = f"{name}[{item}]"
    columns = KINDS[name].columns  # type: ignore[attr-defined]
    if kind == "missing":
        return f"{where}field '{at}': missing required key '{column}'"
    if kind == "extra_forbidden":
        return f"{where}field '{at}': unknown key '{column}' (its keys: {', '.join(c.name for c in columns)})"
    if kind in _EXPECTED:
        return f"{where}field '{at}.{column}': expected {_EXPECTED[kind]}, got {_describe_value(value)}"
    if kind == "string_pattern_mismatch":
        form = next((c.form for c in columns if c.name == column), "text")
        if form == "text" or (isinstance(value, str) and re.search(f"[{_forbidden()}]", value)):
            return f"{where}field '{at}.{column}': {_pattern_mismatch(column, value, err['ctx']['pattern'])}"
        return f"{where}field '{at}.{column}': {escape(repr(value))} is not {COLUMN_FORMS[form][1]}"
    return f"{where}field '{at}.{column}': {escape(str(err['msg']).removeprefix('Value error, '))}"


def _forbidden() -> str:
    from invmap.model import FORBIDDEN

    return FORBIDDEN


def _pattern_mismatch(field: str, value: Any, pattern: str | None) -> str:
    """What is wrong with a text that does not have its field's form: a control character, csv's list
    separator in a list item, nothing but spaces, or not the form a field like `arxiv` needs."""
    from invmap.fields import LIST_SEPARATOR
    from invmap.model import CLEAN_ITEM, CLEAN_PROSE, CLEAN_TEXT, FORBIDDEN, PATTERNS, PROSE_FORBIDDEN
    from invmap.safe import escape

    if isinstance(value, str):
        bad = re.search(f"[{PROSE_FORBIDDEN if pattern == CLEAN_PROSE else FORBIDDEN}]", value)
        if bad:
            return f"contains the control character U+{ord(bad.group()):04X}"
        if pattern == CLEAN_ITEM and LIST_SEPARATOR in value:
            return f"must not contain '{LIST_SEPARATOR}' (it separates list items in csv)"
        if pattern in (CLEAN_TEXT, CLEAN_ITEM):
            return "must not be empty"
    expected = PATTERNS[field][1] if field in PATTERNS else "a different form"
    return f"{escape(repr(value))} is not {expected}"


def _where(loc: list[Any], raw: dict[str, Any]) -> str:
    """`source 3 (flashattention): ` for a source's field, `[catalog]: ` for the catalog table."""
    label = _PLACES.get(loc[0]) if loc and isinstance(loc[0], str) else None
    return label(loc, raw) if label is not None else ""


def _entry_place(loc: list[Any], raw: dict[str, Any]) -> str:
    """`source 3 (flashattention): `, `report 2: ` (an entry without an id)."""
    from invmap.safe import escape

    if len(loc) < 2 or not isinstance(loc[1], int):
        return ""
    entries = raw.get(loc[0])
    entry = entries[loc[1]] if isinstance(entries, list) and loc[1] < len(entries) else None
    ident = entry.get("id") if isinstance(entry, dict) else None
    label = f"{'source' if loc[0] == 'sources' else 'report'} {loc[1] + 1}"
    return f"{label} ({escape(ident)}): " if isinstance(ident, str) and ident else f"{label}: "


def _named_table_place(title: str) -> Callable[[list[Any], dict[str, Any]], str]:
    """`[layers] L3: ` for a value of one entry of a table of entries, `[layers]: ` for the entry."""

    def place(loc: list[Any], _raw: dict[str, Any]) -> str:
        from invmap.safe import escape

        if len(loc) <= 1:
            return ""
        return f"{title} {escape(str(loc[1]))}: " if len(loc) > 2 else f"{title}: "

    return place


_PLACES: dict[str, Callable[[list[Any], dict[str, Any]], str]] = {
    "sources": _entry_place,
    "reports": _entry_place,
    "layers": _named_table_place("[layers]"),
    "glossary": _named_table_place("[glossary]"),
    "catalog": lambda loc, _raw: "[catalog]: " if len(loc) > 1 else "",
}
