"""Reading sources: counts, records in the JSON contract's form, plain columns, and the positions
of the sources a key (id, name, title, arXiv id, DOI, link) or its prefix names."""

from __future__ import annotations

from collections.abc import Sequence

from invmap.fields import KINDS, SOURCE_FIELDS
from invmap.index.connection import Connection
from invmap.index.schema import AT_ONCE, LIST_JOIN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_UNROW = tuple((name, KINDS[name]) for name in SOURCE_FIELDS if KINDS[name].name in ("list", "codes", "tables"))


def _record(columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    record = dict(zip(columns, row))
    for name, kind in _UNROW:
        if name in record:
            record[name] = kind.unrow(record[name])
    return record


def _records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """`_record` of each row, the columns to turn back into lists found once for all of them (a
    level's 23,000 rows of plain columns are zipped into dicts and nothing more)."""
    unrow = [(name, kind) for name, kind in _UNROW if name in columns]
    if not unrow:
        return [dict(zip(columns, row)) for row in rows]
    return [_record(columns, row) for row in rows]


_ITEM_BREAK = '", "'  # between two strings of a JSON array, as json.dumps writes it


def _json_cell(name: str) -> str | None:
    """SQL writing column `name` as `json.dumps(value, ensure_ascii=False)` writes its record value
    (SQLite's json_quote escapes exactly as Python's encoder does, tested over every character kind);
    NULL where SQL cannot be sure of the same bytes (a table's items; a list item with a backslash,
    whose escaping could be taken for the separator's), so that row is encoded in Python instead."""
    kind = KINDS[name].name
    if kind in ("list", "codes"):  # items joined in one string: quoted whole, the separators turned to `", "`
        between, guard = (
            (rf"\u{ord(LIST_JOIN):04x}", f" WHEN instr({name}, char(92)) THEN NULL") if kind == "list" else (";", "")
        )
        joined = f"replace(json_quote({name}), '{between}', '{_ITEM_BREAK}')"
        return f"CASE WHEN {name} IS NULL OR {name} = '' THEN '[]'{guard} ELSE '[' || {joined} || ']' END"
    if kind == "tables":
        return f"CASE WHEN {name} IS NULL OR {name} = '' THEN '[]' END"
    if KINDS[name].sql == "REAL":
        return None  # Python and SQLite write floats differently (1e+20, 1.0e+20)
    return f"json_quote({name})"


def _json_row(columns: Sequence[str]) -> str | None:
    """One SQL expression writing a record of `columns` as one compact JSON line, or None."""
    import json
    import sqlite3

    cells = [_json_cell(c) for c in columns]
    if sqlite3.sqlite_version_info < (3, 38) or None in cells:  # JSON functions built in from 3.38
        return None
    parts = []
    for n, (name, cell) in enumerate(zip(columns, cells)):
        key = ("{" if n == 0 else ", ") + json.dumps(name, ensure_ascii=False) + ": "
        parts.append("'" + key.replace("'", "''") + "' || " + cell)
    return " || ".join(parts) + " || '}'" if parts else None


class SourceReads(Connection):
    """What an index answers about its sources."""

    def count(self, where: str = "", params: Sequence[Any] = ()) -> int:
        return self._rows(f"SELECT count(*) FROM sources {('WHERE ' + where) if where else ''}", params)[0][0]

    def records(
        self, where: str = "", params: Sequence[Any] = (), columns: Sequence[str] = SOURCE_FIELDS, order: str = "pos"
    ) -> list[dict[str, Any]]:
        """Sources as JSON-contract dicts (only `columns`), in catalog order unless told otherwise."""
        sql = f"SELECT {', '.join(columns)} FROM sources {('WHERE ' + where) if where else ''} ORDER BY {order}"
        return _records(columns, self._rows(sql, params))

    def columns(
        self, where: str = "", params: Sequence[Any] = (), columns: Sequence[str] = SOURCE_FIELDS
    ) -> list[tuple[Any, ...]]:
        """Rows as plain tuples of `columns` (named, never `*`), in catalog order: the cheapest read."""
        sql = f"SELECT {', '.join(columns)} FROM sources {('WHERE ' + where) if where else ''} ORDER BY pos"
        return self._rows(sql, params)

    def at(self, positions: Sequence[int], columns: Sequence[str] = SOURCE_FIELDS) -> list[dict[str, Any]]:
        """Records (only `columns`) of the sources at `positions`, in that order."""
        by_pos: dict[int, dict[str, Any]] = {}
        for start in range(0, len(positions), AT_ONCE):
            part = list(positions[start : start + AT_ONCE])
            for r in self.records(f"pos IN ({', '.join('?' * len(part))})", part, ("pos", *columns)):
                by_pos[r.pop("pos")] = r
        return [by_pos[p] for p in positions if p in by_pos]

    def json_at(self, positions: Sequence[int], columns: Sequence[str]) -> dict[int, str | None] | None:
        """position -> the record (only `columns`) at it as one line of compact JSON, byte for byte as
        `json.dumps(record, ensure_ascii=False)` writes it, built inside SQLite (a list of 23,000
        records: no Python dict, no Python encoding); None for a record left to Python (`_json_cell`).
        None when this SQLite cannot write JSON, or `columns` hold a kind it cannot write."""
        written = _json_row(columns)
        if written is None or not columns:
            return None
        out: dict[int, str | None] = {}
        for start in range(0, len(positions), AT_ONCE):
            part = list(positions[start : start + AT_ONCE])
            sql = f"SELECT pos, {written} FROM sources WHERE pos IN ({', '.join('?' * len(part))})"
            out.update(self._rows(sql, part))
        return out

    def values(self, column: str, where: str = "", params: Sequence[Any] = ()) -> list[Any]:
        sql = f"SELECT {column} FROM sources {('WHERE ' + where) if where else ''} ORDER BY pos"
        return [row[0] for row in self._rows(sql, params)]

    def distinct(self, column: str) -> list[Any]:
        return [row[0] for row in self._rows(f"SELECT DISTINCT {column} FROM sources ORDER BY pos")]

    def types(self) -> list[str]:
        """The catalog's types, each once, in alphabetical order whatever the case."""
        return sorted(self.distinct("type"), key=str.casefold)

    def lookup(self, keys: Sequence[str], kinds: Sequence[str] | None = None) -> list[int]:
        """Positions of sources having any of `keys` (of `kinds`), in catalog order."""
        if not keys:
            return []
        sql = f"SELECT DISTINCT pos FROM keys WHERE key IN ({', '.join('?' * len(keys))})"
        params = list(keys)
        if kinds:
            sql += f" AND kind IN ({', '.join('?' * len(kinds))})"
            params += list(kinds)
        return [row[0] for row in self._rows(sql + " ORDER BY pos", params)]

    def prefixed(self, prefix: str, kinds: Sequence[str]) -> list[int]:
        """Positions of sources with a key of `kinds` starting with `prefix` (an index range scan)."""
        sql = (
            f"SELECT DISTINCT pos FROM keys WHERE key >= ? AND key < ? AND kind IN ({', '.join('?' * len(kinds))}) "
            "ORDER BY pos"
        )
        return [row[0] for row in self._rows(sql, [prefix, prefix + "\U0010ffff", *kinds])]
