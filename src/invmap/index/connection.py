"""The connection an `Index` reads through: every query goes through `_rows` or `_with`, which,
should the file turn out to be broken mid-run, rebuild the index from the catalog and ask
again."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence

from invmap.trace import trace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Damaged(sqlite3.DatabaseError):
    """What was read breaks what the index was built to hold (a NULL where the table says NOT NULL,
    a level missing): a damaged page that SQLite read without complaint. The index is rebuilt."""


_READ_ERRORS = (sqlite3.Error, UnicodeDecodeError, ValueError, OverflowError)


def all_text(values: Sequence[Any]) -> bool:
    return all(isinstance(v, str) for v in values)


class Connection:
    """An open index's connection, and the temporary tables made on it (gone with it on a rebuild)."""

    def __init__(self, con: sqlite3.Connection, rebuild: Callable[[], sqlite3.Connection]) -> None:
        self._con = con
        self._rebuild = rebuild
        self._rebuilt = False
        self._stemmer = False
        self._items = False
        self._stems: dict[str, tuple[str, ...]] = {}  # text -> its stems (the tokenizer's, whatever the index)

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._with(lambda con: con.execute(sql, params).fetchall())

    def _with(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        """`work(connection)`, again on a rebuilt index should the file turn out to be damaged. `work`
        makes the temporary tables it needs itself (`IF NOT EXISTS`): a rebuild is a new connection,
        and what the old one held in `temp` is gone with it."""
        try:
            return work(self._con)
        except sqlite3.OperationalError as exc:
            if "fts5: syntax error" in str(exc) or "no such column" in str(exc):
                raise  # a query this code built wrong: a bug, not damage
            return self._again(work)
        except _READ_ERRORS:
            return self._again(work)

    def _again(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        # A damaged file (a bad page, text that is not UTF-8): rebuilt from the catalog, then asked
        # again. An index built in this run that still fails is a bug, and raises.
        if self._rebuilt:
            return work(self._con)
        self._rebuilt = True
        with contextlib.suppress(sqlite3.Error):
            self._con.close()
        trace("index: damaged, rebuilding")
        self._con = self._rebuild()
        had_items = self._items
        self._stemmer = self._items = False
        if had_items:  # a query over the level items (`LevelReads`) may be what is asked again
            self.level_items()
        return work(self._con)
