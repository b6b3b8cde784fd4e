"""Reading what a catalog says beside its sources: its levels (and their items, for triage), its
real symptom reports and triage's evidence, its glossary and its own description."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from invmap.index.connection import Connection, Damaged, all_text
from invmap.index.schema import ITEM_STRIDE, LIST_JOIN, REPORT_COLUMNS, TOKENIZE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class LevelReads(Connection):
    """What an index answers about levels, reports, evidence and the glossary."""

    def levels(self) -> dict[str, tuple[str, str | None]]:
        return {code: (title, scope) for code, title, scope in self._rows("SELECT code, title, scope FROM levels")}

    def level_details(self) -> list[dict[str, Any]]:
        """Every level the catalog describes: code, title, scope, question, metrics, symptoms, in catalog order."""

        def read(con: sqlite3.Connection) -> list[tuple[Any, ...]]:
            rows = con.execute(
                "SELECT pos, code, title, scope, question, metrics, symptoms, not_covered FROM levels ORDER BY pos"
            )
            rows = rows.fetchall()
            indexed = con.execute("SELECT count(*) FROM levels_fts_docsize").fetchone()[0]
            if [r[0] for r in rows] != list(range(indexed)) or not all(all_text(r[1:3]) for r in rows):
                raise Damaged("the levels table does not hold what was built")
            return rows

        rows = self._with(read)
        return [
            {
                "pos": pos,
                "code": code,
                "title": title,
                "scope": scope,
                "question": question,
                "metrics": metrics.split(LIST_JOIN) if metrics else [],
                "symptoms": symptoms.split(LIST_JOIN) if symptoms else [],
                "not_covered": json.loads(gaps) if gaps else [],
            }
            for pos, code, title, scope, question, metrics, symptoms, gaps in rows
        ]

    def level_items(self) -> str:
        """The name of a temporary FTS5 table with one row per level item (its title, scope, question,
        and each metric and symptom alone; `kind` says which), rowid `pos * ITEM_STRIDE + n`, so that a
        symptom that holds more of a query counts for more than words scattered over a level."""
        if not self._items:
            rows = []
            for level in self.level_details():
                texts = [("title", level["title"]), ("scope", level["scope"]), ("question", level["question"])]
                texts += [("metrics", m) for m in level["metrics"]] + [("symptoms", t) for t in level["symptoms"]]
                rows += [(level["pos"] * ITEM_STRIDE + n, kind, text) for n, (kind, text) in enumerate(texts) if text]

            def fill(con: sqlite3.Connection) -> None:
                con.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.level_items "
                    f"USING fts5(kind UNINDEXED, text, tokenize='{TOKENIZE}')"
                )
                con.execute("DELETE FROM temp.level_items")
                con.executemany("INSERT INTO temp.level_items (rowid, kind, text) VALUES (?, ?, ?)", rows)

            self._with(fill)
            self._items = True
        return "level_items"

    def items(self, rowids: Sequence[int], expression: str, marks: tuple[str, str]) -> dict[int, tuple[str, str]]:
        """rowid -> (kind, text with the words `expression` matches between `marks`) of level items."""
        if not rowids:
            return {}
        sql = (
            "SELECT rowid, kind, highlight(level_items, 1, ?, ?) FROM level_items WHERE level_items MATCH ? "
            f"AND rowid IN ({', '.join('?' * len(rowids))})"
        )
        return {r: (k, t) for r, k, t in self._rows(sql, [*marks, expression, *rowids])}

    def reports(self, where: str = "", params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Reports (every column, `sources` a list), in catalog order; `where` an SQL condition on them."""
        columns = ", ".join(f'"{c}"' for c in REPORT_COLUMNS)
        sql = f"SELECT {columns} FROM reports" + (f" WHERE {where}" if where else "") + " ORDER BY pos"
        out = []
        for row in self._rows(sql, list(params)):
            record = dict(zip(REPORT_COLUMNS, row))
            record["sources"] = record["sources"].split(LIST_JOIN) if record["sources"] else []
            record["resolution"] = record["resolution"] or ""
            out.append(record)
        return out

    def evidence(self, expression: str, most: int) -> list[tuple[int, str, str, str | None, float]]:
        """(rowid, level, kind, secondary, BM25 relevance: higher is better) of the `most` best
        evidence rows matching an FTS5 `expression`, best first."""
        sql = (
            "SELECT rowid, level, kind, secondary, -bm25(evidence) FROM evidence WHERE evidence MATCH ? "
            "ORDER BY bm25(evidence) LIMIT ?"
        )
        return [tuple(r) for r in self._rows(sql, [expression, most])]  # type: ignore[misc]

    def glossary(self) -> list[dict[str, Any]]:
        """Every glossary term: term, expansion, aliases, definition, in alphabetical order of term."""

        def read(con: sqlite3.Connection) -> list[tuple[Any, ...]]:
            rows = con.execute("SELECT term, expansion, aliases, definition FROM glossary").fetchall()
            if not all(all_text((r[0], r[3])) for r in rows):
                raise Damaged("the glossary table does not hold what was built")
            return rows

        rows = self._with(read)
        return sorted(
            (
                {"term": t, "expansion": e, "aliases": a.split(LIST_JOIN) if a else [], "definition": d}
                for t, e, a, d in rows
            ),
            key=lambda entry: entry["term"].casefold(),
        )

    def info(self) -> dict[str, Any] | None:
        import json  # only `guide` asks

        row = self._rows("SELECT value FROM meta WHERE key = 'catalog'")
        value = json.loads(row[0][0]) if row else None
        return value if isinstance(value, dict) else None
