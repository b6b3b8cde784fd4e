"""What `add`, `edit` and `rm` ask a catalog's persisted index (edits.py's fast path): the index is
consulted only when it is current for the exact file the writer read under its lock (`Current.of`
with the key taken before and after the read), and only for what it holds exactly: positions, ids,
types, look-up keys and the reports' citations. Anything else, and every refusal, is the full path's.
"""

from __future__ import annotations

import contextlib
import sqlite3

from invmap.index.cached import open_current
from invmap.index.schema import LIST_JOIN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


class Current:
    """A current persisted index of a catalog that extends nothing, read-only."""

    def __init__(self, con: sqlite3.Connection, count: int) -> None:
        self.con, self.count = con, count

    @classmethod
    def of(cls, key: dict[str, Any] | None) -> Current | None:
        """The index for `key` when it is persisted, current and of a catalog that extends nothing;
        None otherwise (never raises: the caller then goes the full way)."""
        if key is None:
            return None
        con = open_current(key)
        if con is None:
            return None
        with contextlib.suppress(sqlite3.Error, KeyError, ValueError, TypeError):
            meta = dict(con.execute("SELECT key, value FROM meta WHERE key IN ('sources', 'bases')").fetchall())
            if not meta.get("bases"):
                return cls(con, int(meta["sources"]))
        con.close()
        return None

    def close(self) -> None:
        self.con.close()

    def pos_of_id(self, ident: str) -> int | None:
        """The position (0 first) of the source whose id is exactly `ident`."""
        row = self.con.execute("SELECT pos FROM sources WHERE id = ?", (ident,)).fetchone()
        return None if row is None else row[0]

    def id_at(self, pos: int) -> str | None:
        row = self.con.execute("SELECT id FROM sources WHERE pos = ?", (pos,)).fetchone()
        return None if row is None else row[0]

    def positions_holding(self, keys: Iterable[str]) -> list[int]:
        """The positions of the sources holding any of these arXiv, DOI or link keys (`rows.source_keys`'s
        forms: the ones `edits.target_id` compares), in catalog order."""
        wanted = [k for k in keys if k.startswith(("arxiv:", "doi:", "link:"))]
        if not wanted:
            return []
        marks = ", ".join("?" * len(wanted))
        rows = self.con.execute(
            f"SELECT DISTINCT pos FROM keys WHERE key IN ({marks}) AND kind IN ('arxiv', 'doi', 'link') ORDER BY pos",
            wanted,
        )
        return [pos for (pos,) in rows]

    def types(self) -> list[str]:
        """Each type the catalog uses, once."""
        return [t for (t,) in self.con.execute("SELECT DISTINCT type FROM sources")]

    def cited(self, idents: Iterable[str]) -> bool:
        """Whether any report of the catalog cites one of `idents`."""
        sep = LIST_JOIN
        for ident in idents:
            found = self.con.execute(
                "SELECT 1 FROM reports WHERE instr(? || sources || ?, ?) LIMIT 1", (sep, sep, sep + ident + sep)
            ).fetchone()
            if found is not None:
                return True
        return False

    def may_share(self, arxiv: Iterable[str], doi: Iterable[str], links: Iterable[str]) -> bool:
        """Whether any source might hold one of these identifiers, as `validation._identifier_keys`
        compares them (`arxiv` without its version, `doi` lowered, `links` canonical): its own field,
        or (arXiv id, DOI) its Source text. Never a miss, sometimes a source that does not: the caller
        then asks the full path, which says exactly."""
        keys = [f"arxiv:{a.lower()}" for a in arxiv] + [f"doi:{d}" for d in doi] + [f"link:{u}" for u in links]
        if keys:
            marks = ", ".join("?" * len(keys))
            if self.con.execute(f"SELECT 1 FROM keys WHERE key IN ({marks}) LIMIT 1", keys).fetchone():
                return True
        for a in arxiv:  # an id the Source text names is a part of that text
            if self.con.execute("SELECT 1 FROM sources WHERE instr(source, ?) LIMIT 1", (a,)).fetchone():
                return True
        doi = list(doi)
        if doi:  # lowered as Python lowers it (SQLite's lower() knows ASCII only); `DOI:` holds a colon
            for (cell,) in self.con.execute("SELECT source FROM sources WHERE instr(source, ':')"):
                folded = cell.lower()
                if any(d in folded for d in doi):
                    return True
        return False
