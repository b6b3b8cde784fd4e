"""The SQLite index of a catalog: build, open, read. The only sqlite3 user (every module of this
package, and none outside it: tests/test_house.py checks).

catalog.toml stays the source of truth; the index is a rebuildable copy in the user's cache folder
(`$XDG_CACHE_HOME/invmap/`, else `~/.cache/invmap/`), one file per catalog, keyed on the catalog's
real path, size, mtime, inode and ctime (and those of every catalog it extends), invmap's version and
the field schema (`fields.SCHEMA`). A stale or missing index is rebuilt in a temporary file, synced,
and renamed into place, so readers never see half of one; readers open it read-only and never write
it. One invmap builds a catalog's index at a time (a lock beside it, `index-....lock`): the others
wait, then read what it built; SIGINT, SIGTERM or SIGHUP during a build removes the partial file.
An index that is damaged, of another schema, not owned by this user or writable by others is
never trusted: it is rebuilt, or the catalog is indexed in memory. Input that cannot have a persisted
index (`-c -`, a FIFO, `INVMAP_NO_CACHE=1`, an unusable cache folder) gets the same schema in
`:memory:`. Columns are always named from `fields.FIELDS`, never read by position.

Search is SQLite's FTS5: one external-content table over the searched fields (`fts`), with the
Porter stemmer, read by `search`; the stems it holds are the vocabulary typos are corrected
against (`words`).

The modules, one job each:
  schema.py      what an index holds: format, tables, searched columns and their weights
  cached.py      a persisted index's file name, opening it read-only, whether to trust it
  rows.py        a source as the index stores it: its row and its look-up keys
  fill.py        writing the tables from a catalog (tokenizing in a second thread)
  building.py    where a build goes: persisted atomically in the cache folder, else in memory
  connection.py  the connection every read goes through, rebuilt once if found damaged
  sources.py, levels.py, fulltext.py, words.py   the reads, by what they answer
  reading.py     `Index`, those reads together
  opening.py     `open_catalog`: current from the cache, else built by one invmap at a time
  lazy.py        `Records`, records read a slice at a time

No pydantic, typer or rich at import time: the completion fast path reads the index too.
"""

from __future__ import annotations

from invmap.index.building import build
from invmap.index.cached import index_path, key_text, open_current, state_of
from invmap.index.connection import Damaged
from invmap.index.lazy import Records
from invmap.index.opening import open_catalog
from invmap.index.reading import Index
from invmap.index.rows import source_keys
from invmap.index.schema import (
    AT_ONCE,
    CODE_COLUMNS,
    DEFAULT_CODE_COLUMNS,
    DEFAULT_COLUMNS,
    EXTRA_COLUMNS,
    FORMAT,
    ITEM_STRIDE,
    LEVEL_COLUMNS,
    LIST_JOIN,
    REPORT_COLUMNS,
    SEARCH_COLUMNS,
    TABLES,
    TOKENIZE,
    WEIGHTS,
    expected_schema,
)

__all__ = [
    "AT_ONCE", "CODE_COLUMNS", "DEFAULT_CODE_COLUMNS", "DEFAULT_COLUMNS", "EXTRA_COLUMNS", "FORMAT",
    "ITEM_STRIDE", "LEVEL_COLUMNS", "LIST_JOIN", "REPORT_COLUMNS", "SEARCH_COLUMNS", "TABLES", "TOKENIZE",
    "WEIGHTS", "Damaged", "Index", "Records", "build", "expected_schema", "index_path", "key_text",
    "open_catalog", "open_current", "source_keys", "state_of",
]  # fmt: skip
