"""A catalog's persisted index in the cache folder: its file name, opening it read-only, and
deciding whether to trust it.

An index is keyed on the catalog's real path, size, mtime, inode and ctime (and those of every
catalog it extends), invmap's version and the field schema (`fields.SCHEMA`). One that is damaged,
of another schema, not owned by this user or writable by others is never trusted: `open_current`
then answers None and the caller rebuilds. No typing here: a TAB press reads it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import zlib

from invmap.cache import enabled, folder, key_of, ours, usable_folder
from invmap.index.schema import FORMAT, expected_schema

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def index_path(key: dict[str, Any]) -> str:
    """One file name per catalog path (two CRC-32s: a clash costs a rebuild, never a wrong answer,
    since the file's own key is checked)."""
    raw = key["path"].encode("utf-8", "surrogateescape")
    digest = f"{zlib.crc32(raw):08x}{zlib.crc32(raw[::-1]):08x}"
    return os.path.join(folder(), f"index-{digest}.sqlite3")


def key_text(key: dict[str, Any]) -> str:
    """The key as stored in the index's meta table and compared there: one `name=repr` a line."""
    return "\n".join(f"{name}={key[name]!r}" for name in sorted(key))


def _connect(path: str) -> sqlite3.Connection:
    """A persisted index, read-only and immutable: a query never writes it, and never waits for or
    locks out another invmap (an index is replaced by a rename, never changed in place). Temporary
    tables (query stemming) live in memory beside it."""
    # A URI: `%`, `?` and `#` escaped; `file://` + an absolute path keeps `//x` a path.
    escaped = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    con = sqlite3.connect(f"file://{escaped}?mode=ro&immutable=1", uri=True, isolation_level=None)
    con.execute("PRAGMA trusted_schema = OFF")
    return con


def _trusted(con: sqlite3.Connection, key: dict[str, Any]) -> bool:
    """Our format, our exact tables, our key (and the catalogs it extends unchanged), and as many rows
    as the index says it holds: else the file is not used. Cheap on purpose (no hashing, no integrity
    scan): a damaged page anywhere else is found when it is read, and `Index` then rebuilds."""
    if con.execute("PRAGMA user_version").fetchone()[0] != FORMAT:
        return False
    found = con.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name").fetchall()
    if found != expected_schema():
        return False
    meta = dict(con.execute("SELECT key, value FROM meta WHERE key IN ('key', 'sources', 'bases')").fetchall())
    if meta.get("key") != key_text(key):
        return False
    for base in filter(None, meta.get("bases", "").split("\n\n")):
        import ast

        line = next((line for line in base.split("\n") if line.startswith("path=")), "path=''")
        path = ast.literal_eval(line.removeprefix("path="))
        current = key_of(path) if isinstance(path, str) and path else None
        if current is None or key_text(current) != base:
            return False
    return meta.get("sources") == str(con.execute("SELECT count(*) FROM sources").fetchone()[0])


def open_current(key: dict[str, Any]) -> sqlite3.Connection | None:
    """The persisted index for `key` if it exists, is ours and is current; never raises."""
    if usable_folder(create=False) is None:
        return None
    path = index_path(key)
    con = None
    # A file that is damaged or foreign (not UTF-8, not SQLite, another user's) is not used: None.
    with contextlib.suppress(OSError, sqlite3.Error, UnicodeDecodeError, ValueError, OverflowError):
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or not ours(info):
            return None
        con = _connect(path)
        if _trusted(con, key):
            return con
    if con is not None:
        con.close()
    return None


def state_of(path: str) -> dict[str, Any]:
    """For `where --json`: the index's path and state, without building it or failing."""
    if not enabled():
        return {"path": None, "state": "disabled", "sources": None}
    key = key_of(path)
    if key is None:
        return {"path": None, "state": "disabled", "sources": None}
    target = index_path(key)
    con = open_current(key)  # checks the row count against what the index says it holds
    if con is None:
        exists = os.path.exists(target)
        return {"path": target, "state": "stale" if exists else "missing", "sources": None}
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'sources'").fetchone()
        return {"path": target, "state": "current", "sources": int(row[0])}
    except (sqlite3.Error, UnicodeDecodeError, ValueError, TypeError):
        return {"path": target, "state": "stale", "sources": None}
    finally:
        con.close()
