"""Full-text reads for ranking (`invmap.search`, triage): the rows an FTS5 expression matches, their
BM25, highlighted text, raw cells and the columns' average lengths."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from invmap.index.connection import Connection
from invmap.index.schema import AT_ONCE, CODE_COLUMNS, LEVEL_COLUMNS, SEARCH_COLUMNS

JSON_EACH = sqlite3.sqlite_version_info >= (3, 38)  # JSON functions built in from 3.38

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class FullTextReads(Connection):
    """What an index answers about the words its rows hold."""

    # A filter is `+rowid IN (...)`: the `+` keeps SQLite from handing the rowids to FTS5, which would
    # run the whole MATCH once per selected row (a level of 23,000 sources: minutes); filtered after
    # one MATCH, a filtered search costs at most what an unfiltered one does.
    def match(self, table: str, expression: str, where: str = "", params: Sequence[Any] = ()) -> list[int]:
        """Rowids of `table` (`fts` or `levels_fts`) matching an FTS5 `expression`, among those `where`
        selects (SQL over `sources`)."""
        sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ?"
        if where:
            sql += f" AND +rowid IN (SELECT pos FROM sources WHERE {where})"
        return [row[0] for row in self._rows(sql, [expression, *params])]

    def count_matching(self, table: str, expression: str) -> int:
        """How many rows of `table` match `expression`: `len(match(...))`, counted inside SQLite."""
        return self._rows(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", [expression])[0][0]

    def matches_more(self, table: str, expression: str, than: float) -> bool:
        """Whether more than `than` rows of `table` match `expression`: `len(match(...)) > than`,
        counted inside SQLite and stopped at the first row past it (no rowid comes back)."""
        import math

        most = max(math.floor(than) + 1, 1)
        sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"
        return self._rows(sql, [expression, most])[0][0] > than

    def bm25(
        self, table: str, expression: str, weights: Sequence[float], where: str = "", params: Sequence[Any] = ()
    ) -> dict[int, float]:
        """rowid -> BM25 relevance (higher is better) of each row matching `expression`."""
        sql = f"SELECT rowid, bm25({table}, {', '.join(f'{w:g}' for w in weights)}) FROM {table} WHERE {table} MATCH ?"
        if where:
            sql += f" AND +rowid IN (SELECT pos FROM sources WHERE {where})"
        return {rowid: -score for rowid, score in self._rows(sql, [expression, *params])}

    def bm25_among(
        self, table: str, expression: str, weights: Sequence[float], rowids: Sequence[int]
    ) -> dict[int, float]:
        """`bm25` of the rows among `rowids` only: the same values (FTS5 takes a word's rarity and the
        columns' average lengths from the whole table, never from the rows a filter keeps), worked out
        for those rows alone. The rowids go in as one JSON array (`json_each`, built in from SQLite
        3.38; before it, every row's BM25 is read and these kept); `+rowid IN` keeps SQLite from
        handing them to FTS5 one MATCH each."""
        if not rowids:
            return {}
        if not JSON_EACH:
            wanted = set(rowids)
            return {r: v for r, v in self.bm25(table, expression, weights).items() if r in wanted}
        return {rowid: -score for rowid, score in self._rows(*_among(table, expression, weights, rowids))}

    def bm25_best(
        self, table: str, expression: str, weights: Sequence[float], rowids: Sequence[int], most: int
    ) -> list[tuple[int, float]] | None:
        """The `most` rows among `rowids` with the best `bm25` (ties: the lower rowid first), best
        first, each with its value as `bm25_among` gives it: ordered and cut inside SQLite. None on a
        SQLite without `json_each`."""
        if not JSON_EACH:
            return None
        sql, params = _among(table, expression, weights, rowids)
        return [(rowid, -score) for rowid, score in self._rows(sql + " ORDER BY 2, rowid LIMIT ?", [*params, most])]

    def highlights(
        self, table: str, expression: str, rowids: Sequence[int], columns: Sequence[str], marks: tuple[str, str]
    ) -> dict[int, dict[str, str]]:
        """rowid -> column -> its text with the words `expression` matches between `marks`, for the
        rows of `rowids` it matches (one statement for them all)."""
        every = {"fts": SEARCH_COLUMNS, "code_fts": CODE_COLUMNS}.get(table, LEVEL_COLUMNS)
        calls = ", ".join(f"highlight({table}, {every.index(c)}, ?, ?)" for c in columns)
        params = [*marks * len(columns)]
        step = max(AT_ONCE - len(params) - 1, 1)  # the marks and the expression are parameters too
        out: dict[int, dict[str, str]] = {}
        for start in range(0, len(rowids), step):
            part = list(rowids[start : start + step])
            sql = (
                f"SELECT rowid, {calls} FROM {table} WHERE {table} MATCH ? AND rowid IN ({', '.join('?' * len(part))})"
            )
            for row in self._rows(sql, [*params, expression, *part]):
                out[row[0]] = dict(zip(columns, row[1:]))
        return out

    def texts(self, table: str, rowids: Sequence[int], columns: Sequence[str]) -> dict[int, str]:
        """rowid -> the raw text of `columns` of that row, joined (for `--exact`)."""
        source = "levels" if table == "levels_fts" else "sources"
        return {r: " \x1f ".join(texts) for r, texts in self._cells(source, rowids, columns).items()}

    def cells(self, table: str, rowids: Sequence[int], columns: Sequence[str]) -> dict[int, list[str]]:
        """rowid -> the raw text of each of `columns` (`''` where empty), for per-field weighing."""
        return self._cells("sources" if table == "fts" else "levels", rowids, columns)

    def _cells(self, source: str, rowids: Sequence[int], columns: Sequence[str]) -> dict[int, list[str]]:
        picked = ", ".join(f"coalesce({c}, '')" for c in columns)
        out: dict[int, list[str]] = {}
        for start in range(0, len(rowids), AT_ONCE):
            part = list(rowids[start : start + AT_ONCE])
            sql = f"SELECT pos, {picked} FROM {source} WHERE pos IN ({', '.join('?' * len(part))})"
            for row in self._rows(sql, part):
                out[row[0]] = list(row[1:])
        return out

    def field_lengths(self, rowids: Sequence[int]) -> dict[int, list[int]]:
        """rowid -> how many tokens each of `fts`'s columns (SEARCH_COLUMNS) holds in that row, as FTS5
        counted them when indexing (its `_docsize` record: one varint a column). Rows whose record
        cannot be read as that are left out."""
        out: dict[int, list[int]] = {}
        width = len(SEARCH_COLUMNS)
        for start in range(0, len(rowids), AT_ONCE):
            part = list(rowids[start : start + AT_ONCE])
            sql = f"SELECT id, sz FROM fts_docsize WHERE id IN ({', '.join('?' * len(part))})"
            for rowid, blob in self._rows(sql, part):
                values = _varints(blob, width) if isinstance(blob, bytes) else []
                if len(values) == width:
                    out[rowid] = values
        return out

    def places(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[tuple[int, str, str], list[int]]:
        """(rowid, column, term) -> the token offsets where `fts` holds that stem in that column, for
        `terms` among `rowids` only: each term's postings are read inside SQLite (fts5vocab), and only
        the rows asked for come back."""
        out: dict[tuple[int, str, str], list[int]] = {}
        if not terms or not rowids:
            return out
        rows = list(dict.fromkeys(rowids))

        def ask(con: Any, term: str, part: list[int]) -> list[tuple[Any, ...]]:
            con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_places USING fts5vocab(main, fts, 'instance')")
            sql = (
                f"SELECT doc, col, offset FROM temp.fts_places WHERE term = ? AND doc IN ({', '.join('?' * len(part))})"
            )
            return con.execute(sql, [term, *part]).fetchall()

        for term in dict.fromkeys(terms):
            for start in range(0, len(rows), AT_ONCE - 1):
                part = rows[start : start + AT_ONCE - 1]
                for doc, column, offset in self._with(lambda con, t=term, p=part: ask(con, t, p)):
                    out.setdefault((doc, column, term), []).append(offset)
        return out

    def lengths(self, table: str) -> dict[str, float] | None:
        """column -> its average length in tokens in `table` (`fts`, `levels_fts`), as FTS5's own bm25()
        reads it: the averages record (rowid 1 of the table's `_data`: a varint row count, then one
        varint token total per column). None where it cannot be read as that."""
        columns = SEARCH_COLUMNS if table == "fts" else LEVEL_COLUMNS
        found = self._rows(f"SELECT block FROM {table}_data WHERE id = 1")
        if not found or not isinstance(found[0][0], bytes):
            return None
        values = _varints(found[0][0], 1 + len(columns))
        if len(values) != 1 + len(columns) or values[0] <= 0:
            return None
        return {c: total / values[0] for c, total in zip(columns, values[1:])}


def _varints(blob: bytes, most: int) -> list[int]:
    """The first `most` of SQLite's varints in `blob` (7 bits a byte, the high bit set on all but the
    last; 9 bytes at most), or fewer where the blob ends."""
    values: list[int] = []
    at = 0
    while at < len(blob) and len(values) < most:
        value = 0
        for n in range(9):
            byte = blob[at]
            at += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80 or at >= len(blob):
                break
        values.append(value)
    return values


def _among(table: str, expression: str, weights: Sequence[float], rowids: Sequence[int]) -> tuple[str, list[Any]]:
    """The SELECT of (rowid, bm25) for the rows among `rowids` matching `expression`, and its
    parameters: the rowids as one JSON array (`json_each`), `+rowid IN` so that SQLite does not hand
    them to FTS5 one MATCH each."""
    import json

    sql = (
        f"SELECT rowid, bm25({table}, {', '.join(f'{w:g}' for w in weights)}) FROM {table} "
        f"WHERE {table} MATCH ? AND +rowid IN (SELECT value FROM json_each(?))"
    )
    return sql, [expression, json.dumps(sorted(set(rowids)))]
