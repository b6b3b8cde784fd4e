"""Reading sources: counts, records in the JSON contract's form, plain columns, and the positions
of the sources a key (id, name, title, arXiv id, DOI, link) or its prefix names."""

from __future__ import annotations

from collections.abc import Sequence

from invmap.fields import KINDS, SOURCE_FIELDS
from invmap.index.connection import Connection
from invmap.index.schema import AT_ONCE

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


class SourceReads(Connection):
    """What an index answers about its sources."""

    def count(self, where: str = "", params: Sequence[Any] = ()) -> int:
        return self._rows(f"SELECT count(*) FROM sources {('WHERE ' + where) if where else ''}", params)[0][0]

    def records(
        self, where: str = "", params: Sequence[Any] = (), columns: Sequence[str] = SOURCE_FIELDS, order: str = "pos"
    ) -> list[dict[str, Any]]:
        """Sources as JSON-contract dicts (only `columns`), in catalog order unless told otherwise."""
        sql = f"SELECT {', '.join(columns)} FROM sources {('WHERE ' + where) if where else ''} ORDER BY {order}"
        return [_record(columns, row) for row in self._rows(sql, params)]

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
