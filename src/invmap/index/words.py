"""The words of an index: a query's words stemmed by the index's own tokenizer, which stems its
text holds, and the vocabulary typos are corrected against (with a word of the text for a stem)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

from invmap.index.connection import Connection
from invmap.index.schema import TOKENIZE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class WordReads(Connection):
    """What an index answers about its words and stems."""

    def stems(self, words: Sequence[str]) -> list[list[str]]:
        """Each word as the index's tokenizer stems it (`Evictions` -> ['evict'], `multi-model` ->
        ['multi', 'model']): SQLite's own Porter stemmer (`stemmed`). Each distinct text is stemmed
        once a run: the ones not asked before go through the stemmer together, in one statement."""
        if not words:
            return []
        known = self._stems
        missing = [w for w in dict.fromkeys(words) if w not in known]
        if missing:

            def stem(con: sqlite3.Connection) -> list[list[str]]:
                made = self._stemmer
                self._stemmer = True
                return stemmed(con, missing, made)

            known.update(zip(missing, map(tuple, self._with(stem))))
        return [list(known[w]) for w in words]

    def known(self, terms: Sequence[str], tables: Sequence[str] = ("fts",)) -> set[str]:
        """Which stems the searched text of `tables` (`fts`, `levels_fts`) holds."""
        if not terms:
            return set()
        marks = ", ".join("?" * len(terms))
        found: set[str] = set()
        for table in tables:

            def ask(con: sqlite3.Connection, table: str = table) -> list[tuple[Any, ...]]:
                con.execute(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_terms USING fts5vocab(main, {table}, 'row')"
                )
                return con.execute(
                    f"SELECT term FROM temp.{table}_terms WHERE term IN ({marks})", list(terms)
                ).fetchall()

            found |= {row[0] for row in self._with(ask)}
        return found

    def vocabulary(self, shortest: int, longest: int) -> list[tuple[str, int]]:
        """(stem, sources holding it) of the correction vocabulary, for stems of these lengths."""
        return self._rows("SELECT term, docs FROM words WHERE length BETWEEN ? AND ?", [shortest, longest])

    def surface(self, term: str) -> str | None:
        """A word of the catalog's text that stems to `term` (for saying what a typo was read as)."""

        def ask(con: sqlite3.Connection) -> list[tuple[Any, ...]]:
            con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_places USING fts5vocab(main, fts, 'instance')")
            return con.execute("SELECT doc, col, offset FROM temp.fts_places WHERE term = ? LIMIT 1", [term]).fetchall()

        place = self._with(ask)
        if not place:
            return None
        doc, column, offset = place[0]
        text = self._rows(f"SELECT {column} FROM sources WHERE pos = ?", [doc])
        tokens = re.findall(r"[^\W_]+", text[0][0] or "") if text else []
        return tokens[offset].lower() if offset < len(tokens) else None


def stemmed(con: sqlite3.Connection, texts: Sequence[str], made: bool = False) -> list[list[str]]:
    """Each text as the index's tokenizer stems it, through a temporary FTS5 table beside the index
    (its instance vocabulary read in order): the one stemmer of queries and of the levels' words the
    index stores. `made`: the temporary tables exist on `con` already."""
    if not made:
        con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem USING fts5(w, tokenize='{TOKENIZE}')")
        con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem_terms USING fts5vocab(temp, stem, 'instance')")
    con.execute("DELETE FROM temp.stem")
    con.executemany("INSERT INTO temp.stem (rowid, w) VALUES (?, ?)", enumerate(texts))
    out: list[list[str]] = [[] for _ in texts]
    for doc, term in con.execute("SELECT doc, term FROM temp.stem_terms ORDER BY doc, offset"):
        out[doc].append(term)
    return out
