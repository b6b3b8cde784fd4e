"""The SQLite index of a catalog: build, open, query. The only sqlite3 user.

catalog.toml stays the source of truth; the index is a rebuildable copy in the user's cache folder
(`$XDG_CACHE_HOME/invmap/`, else `~/.cache/invmap/`), one file per catalog, keyed on the catalog's
real path, size, mtime, inode and ctime, invmap's version and the field schema (`fields.SCHEMA`).
A stale or missing index is rebuilt in a temporary file and renamed into place, so readers never
see half of one. An index that is corrupt, locked, of another schema, not owned by this user or
writable by others is never trusted: it is rebuilt, or the catalog is indexed in memory. Input that
cannot have a persisted index (`-c -`, a FIFO, `INVMAP_NO_CACHE=1`, an unusable cache folder) gets
the same schema in `:memory:`. Columns are always named from `fields.FIELDS`, never read by position.

No pydantic, typer or rich at import time: the completion fast path reads the index too.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence

from invmap import __version__
from invmap.fields import FIELDS, SCHEMA, SEARCHED_FIELDS, SOURCE_FIELDS
from invmap.trace import trace

TYPE_CHECKING = False  # a TAB press reads this module: no `typing`, `json`, `hashlib` or `urllib` here
if TYPE_CHECKING:
    from typing import Any

    from invmap.catalog import Location
    from invmap.model import Catalog

NO_CACHE_VAR = "INVMAP_NO_CACHE"
FORMAT = 3  # PRAGMA user_version: bump when the tables below change
_STRICT = " STRICT" if sqlite3.sqlite_version_info >= (3, 37) else ""
_SQL_TYPE = {"text": "TEXT", "int": "INTEGER", "date": "TEXT", "codes": "TEXT"}
# Every column is a field of the JSON contract (`url` is the effective link, `layers` the codes
# joined with ';'), plus `pos`, the catalog order.
TABLES: tuple[str, ...] = (
    f"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL){_STRICT}",
    "CREATE TABLE sources (pos INTEGER PRIMARY KEY, "
    + ", ".join(f"{f.name} {_SQL_TYPE[f.kind]}{' NOT NULL' if f.required else ''}" for f in FIELDS)
    + f"){_STRICT}",
    # The fields search scores by default, in lower case: a narrow table read in a third of the time.
    "CREATE TABLE folded (pos INTEGER PRIMARY KEY, "
    + ", ".join(f"{name} TEXT NOT NULL" for name in SEARCHED_FIELDS)
    + f"){_STRICT}",
    f"CREATE TABLE codes (code TEXT NOT NULL, pos INTEGER NOT NULL){_STRICT}",
    f"CREATE TABLE keys (key TEXT NOT NULL, kind TEXT NOT NULL, pos INTEGER NOT NULL){_STRICT}",
    f"CREATE TABLE levels (code TEXT PRIMARY KEY, title TEXT NOT NULL, scope TEXT){_STRICT}",
    "CREATE INDEX codes_by_code ON codes (code, pos)",
    "CREATE INDEX keys_by_key ON keys (key, pos)",
    "CREATE INDEX sources_by_year ON sources (year)",
)
AT_ONCE = 999  # positions looked up by one `pos IN (...)` query: the most any SQLite allows
PROGRESS_FROM = 8_000_000  # bytes of TOML: a first run this large shows a progress bar on a terminal


def enabled() -> bool:
    return os.environ.get(NO_CACHE_VAR, "") in ("", "0")


def folder() -> str:
    """`$XDG_CACHE_HOME/invmap`; a relative XDG_CACHE_HOME is ignored, as the XDG rule says."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "invmap")


def _ours(info: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else."""
    return info.st_uid == os.geteuid() and not info.st_mode & 0o022


def _usable_folder(create: bool) -> str | None:
    """The cache folder if it is ours (created 0700 if asked), else None."""
    path = folder()
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if not create:
            return None
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            os.chmod(path, 0o700)
            info = os.stat(path)
        except OSError:
            return None
    except OSError:
        return None
    if not (stat.S_ISDIR(info.st_mode) and _ours(info)):
        return None
    if create and info.st_mode & 0o077:  # made by an older invmap (0755): make it private as well
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
    return path


def key_of(path: str) -> dict[str, Any] | None:
    """What must be unchanged for an index to count; None for what cannot have one (stdin, a FIFO)."""
    if path == "-":
        return None
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return {
        "path": real,
        "size": st.st_size,
        "mtime": st.st_mtime_ns,
        "inode": st.st_ino,
        "dev": st.st_dev,
        "ctime": st.st_ctime_ns,
        "version": __version__,
        "schema": SCHEMA,
    }


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
    locks out another invmap (an index is replaced by a rename, never changed in place)."""
    # A URI: `%`, `?` and `#` escaped; `file://` + an absolute path keeps `//x` a path.
    escaped = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    con = sqlite3.connect(f"file://{escaped}?mode=ro&immutable=1", uri=True, isolation_level=None)
    con.execute("PRAGMA trusted_schema = OFF")
    return con


# What `sqlite_master` of an index we built holds (SQLite keeps each statement's text verbatim), for
# comparison with a file found on disk; the primary keys' automatic indexes have no statement.
EXPECTED_SCHEMA = sorted((re.match(r"CREATE (?:TABLE|INDEX) (\w+)", sql).group(1), sql) for sql in TABLES)  # type: ignore[union-attr]


def _trusted(con: sqlite3.Connection, key: dict[str, Any]) -> bool:
    """Our format, our exact tables, our key, and as many rows as the index says it holds: else the
    file is not used. Cheap on purpose (no hashing, no integrity scan): a damaged page anywhere else
    is found when it is read, and `Index` then rebuilds."""
    if con.execute("PRAGMA user_version").fetchone()[0] != FORMAT:
        return False
    if (
        con.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name").fetchall()
        != EXPECTED_SCHEMA
    ):
        return False
    meta = dict(con.execute("SELECT key, value FROM meta WHERE key IN ('key', 'sources')").fetchall())
    if meta.get("key") != key_text(key):
        return False
    return meta.get("sources") == str(con.execute("SELECT count(*) FROM sources").fetchone()[0])


def open_current(key: dict[str, Any]) -> sqlite3.Connection | None:
    """The persisted index for `key` if it exists, is ours and is current; never raises."""
    if _usable_folder(create=False) is None:
        return None
    path = index_path(key)
    con = None
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or not _ours(info):
            return None
        con = _connect(path)
        if _trusted(con, key):
            return con
    except (OSError, sqlite3.Error, UnicodeDecodeError, ValueError, OverflowError):
        pass  # damaged or foreign: not used
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


# --- building --------------------------------------------------------------------------------


_NOT_WORD = re.compile(r"[\W_]+")
_ASCII_LOWER = bytes(range(256)).lower()
_ASCII_NOT_WORD = bytes(c for c in range(128) if not chr(c).isalnum())


def normalize(text: str) -> str:
    """Case, spacing and punctuation do not matter: `Paged attention` == `pagedattention`."""
    if text.isascii():  # the common case: one pass over the bytes, ~15x faster than the expression
        return text.encode().translate(_ASCII_LOWER, _ASCII_NOT_WORD).decode()
    return _NOT_WORD.sub("", text.casefold())


_DATES_AT = tuple(i for i, f in enumerate(FIELDS) if f.kind == "date")
_LAYERS_AT = SOURCE_FIELDS.index("layers")
_URL_AT = SOURCE_FIELDS.index("url")


def _record_row(source: Any, pos: int) -> list[Any]:
    """A source's row, `pos` then every field in `SOURCE_FIELDS` order (values, not names: SQLite
    binds them ~15% faster): the stored values, the derived `layers` and the effective `url`."""
    values = source.__dict__
    row = [values.get(name) for name in SOURCE_FIELDS]
    row[_LAYERS_AT] = ";".join(source.layers)
    row[_URL_AT] = source.link
    for i in _DATES_AT:
        row[i] = row[i].isoformat()
    return [pos, *row]


def source_keys(source: Any, canonical_link: Callable[[str], str]) -> Iterable[tuple[str, str]]:
    """(key, kind) pairs by which `show` finds a source: texts normalized, identifiers canonical."""
    values = source.__dict__
    seen = set()
    for kind in ("id", "name", "source", "title"):
        value = values[kind]
        if value and (key := normalize(value)) and key not in seen:
            seen.add(key)
            yield key, kind
    if arxiv := values["arxiv"]:
        yield "arxiv:" + arxiv.split("v")[0].lower(), "arxiv"
    if doi := values["doi"]:
        yield "doi:" + doi.lower(), "doi"
    # An arXiv or DOI page derived from those ids is found by them; only explicit links need keys.
    for link in {canonical_link(link) for link in (values["url"], values["code"]) if link}:
        yield "link:" + link, "link"


def _fill(
    con: sqlite3.Connection, catalog: Catalog, key: dict[str, Any] | None, progress: Callable[[int], None] | None = None
) -> None:
    from invmap.identifiers import canonical_link  # building only: a warm run never needs it

    tables = [sql for sql in TABLES if sql.startswith("CREATE TABLE")]
    for sql in tables:
        con.execute(sql)
    con.execute(f"PRAGMA user_version = {FORMAT}")
    con.execute("BEGIN")
    columns = ", ".join(("pos", *SOURCE_FIELDS))
    marks = ", ".join("?" * (1 + len(SOURCE_FIELDS)))
    chunk = 10_000
    sources = catalog.sources
    for start in range(0, len(sources), chunk):
        part = sources[start : start + chunk]
        # Generators, not lists: the rows of a chunk are never all in memory at once.
        con.executemany(
            f"INSERT INTO sources ({columns}) VALUES ({marks})", (_record_row(s, start + i) for i, s in enumerate(part))
        )
        con.executemany(
            f"INSERT INTO folded VALUES (?{', ?' * len(SEARCHED_FIELDS)})",
            ((start + i, *((s.__dict__[f] or "").lower() for f in SEARCHED_FIELDS)) for i, s in enumerate(part)),
        )
        con.executemany(
            "INSERT INTO codes VALUES (?, ?)", ((code, start + i) for i, s in enumerate(part) for code in s.layers)
        )
        con.executemany(
            "INSERT INTO keys VALUES (?, ?, ?)",
            ((k, kind, start + i) for i, s in enumerate(part) for k, kind in source_keys(s, canonical_link)),
        )
        if progress:
            progress(len(part))
    con.executemany(
        "INSERT INTO levels VALUES (?, ?, ?)", [(code, info.title, info.scope) for code, info in catalog.layers.items()]
    )
    import json  # building only: a warm run and a TAB never need it

    info = catalog.catalog.model_dump() if catalog.catalog is not None else None
    meta = {
        "key": key_text(key) if key is not None else "",
        "catalog": json.dumps(info),
        "sources": str(len(sources)),
    }
    con.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    for sql in TABLES:  # indexes last: building one over all rows is faster than keeping it up to date
        if sql not in tables:
            con.execute(sql)
    con.execute("COMMIT")


# What earlier versions of invmap left in the cache folder and this one never reads: round-one
# marshal caches, and index files named by the older scheme (24 hex digits; now 16).
_LEFT_BEHIND = re.compile(r"(?:catalog|index)-[0-9a-f]{8}\.marshal|index-[0-9a-f]{24}\.sqlite3|\.index-\w+\.tmp")
STALE_TMP_SECONDS = 3600  # a temporary index this old is a crashed build's, not a running one's


def _tidy(where: str) -> None:
    """Remove what older invmap versions (and crashed builds) left in the cache folder: only files
    matching their names, regular, owned by this user; never a symlink; never failing."""
    import time

    try:
        names = os.listdir(where)
    except OSError:
        return
    now = time.time()
    for name in names:
        if not _LEFT_BEHIND.fullmatch(name):
            continue
        path = os.path.join(where, name)
        with contextlib.suppress(OSError):
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                continue
            if name.endswith(".tmp") and now - info.st_mtime < STALE_TMP_SECONDS:
                continue
            os.unlink(path)


def _sync(path: str) -> None:
    """fsync a file or folder (a folder: so that a rename into it is on disk too)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def build(
    catalog: Catalog, key: dict[str, Any] | None, progress: Callable[[int], None] | None = None
) -> sqlite3.Connection:
    """Index `catalog`: persisted for `key` where the cache folder is usable, else in memory."""
    where = _usable_folder(create=True) if key is not None and enabled() else None
    if where is not None:
        target = index_path(key)  # type: ignore[arg-type]
        tmp = None
        import tempfile

        _tidy(where)
        try:
            fd, tmp = tempfile.mkstemp(dir=where, prefix=".index-", suffix=".tmp")
            os.close(fd)
            os.chmod(tmp, 0o600)
            con = sqlite3.connect(tmp, isolation_level=None)
            con.execute("PRAGMA journal_mode = OFF")
            con.execute("PRAGMA synchronous = OFF")
            _fill(con, catalog, key, progress)
            con.close()
            _sync(tmp)  # on disk before it takes the index's name: a crash never leaves half a file there
            os.replace(tmp, target)
            tmp = None
            _sync(where)
            opened = open_current(key)  # type: ignore[arg-type]
            if opened is not None:
                trace(f"index: built {target}")
                return opened
        except (OSError, sqlite3.Error):
            pass
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        progress = None  # the rows were counted once already
    trace("index: in memory")
    con = sqlite3.connect(":memory:", isolation_level=None)
    _fill(con, catalog, None, progress)
    return con


# --- reading ---------------------------------------------------------------------------------


def _record(columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    record = dict(zip(columns, row))
    if "layers" in record:
        record["layers"] = record["layers"].split(";") if record["layers"] else []
    return record


class Index:
    """An open index of one catalog. Every query goes through `_rows`, which, should the file turn
    out to be broken mid-run, rebuilds the index in memory from the catalog and asks again."""

    def __init__(self, con: sqlite3.Connection, rebuild: Callable[[], sqlite3.Connection]) -> None:
        self._con = con
        self._rebuild = rebuild
        self._rebuilt = False

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._con.execute(sql, params).fetchall()
        except (sqlite3.Error, UnicodeDecodeError, ValueError, OverflowError):
            # A damaged file (a bad page, text that is not UTF-8): rebuilt from the catalog, then asked
            # again. An index built in this run that still fails is a bug, and raises.
            if self._rebuilt:
                raise
            self._rebuilt = True
            with contextlib.suppress(sqlite3.Error):
                self._con.close()
            trace("index: damaged, rebuilding")
            self._con = self._rebuild()
            return self._con.execute(sql, params).fetchall()

    def count(self) -> int:
        return self._rows("SELECT count(*) FROM sources")[0][0]

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

    def folded(self, where: str, params: Sequence[Any], fields: Sequence[str]) -> list[tuple[Any, ...]]:
        """`pos` and `fields` (of `fields.SEARCHED_FIELDS`) in lower case, in catalog order."""
        picked = f"WHERE pos IN (SELECT pos FROM sources WHERE {where})" if where else ""
        return self._rows(f"SELECT {', '.join(('pos', *fields))} FROM folded {picked} ORDER BY pos", params)

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

    def levels(self) -> dict[str, tuple[str, str | None]]:
        return {code: (title, scope) for code, title, scope in self._rows("SELECT code, title, scope FROM levels")}

    def info(self) -> dict[str, Any] | None:
        import json  # only `guide` asks

        row = self._rows("SELECT value FROM meta WHERE key = 'catalog'")
        value = json.loads(row[0][0]) if row else None
        return value if isinstance(value, dict) else None



def open_catalog(location: Location) -> Index:
    """The index of the active catalog: current from the cache, else built (and persisted if it can be).
    A persisted index found damaged while it is read is rebuilt (and persisted again)."""
    key = key_of(location.path) if enabled() else None
    if key is not None and (con := open_current(key)) is not None:
        trace(f"index: current {index_path(key)}")
        return Index(con, lambda: _from_toml(location, key))
    return Index(_from_toml(location, key), lambda: _from_toml(location, None))


def _from_toml(location: Location, key: dict[str, Any] | None) -> sqlite3.Connection:
    from invmap import catalog as catalog_io

    try:
        size = os.stat(location.path).st_size if location.path != "-" else 0
    except OSError:
        size = 0
    with _Progress(location.path, size) as report:
        report("reading")
        catalog = catalog_io.validate(catalog_io.read_table(location.path), location.path)
        report("indexing", len(catalog.sources))
        return build(catalog, key, progress=lambda n: report(None, n))


class _Progress:
    def __init__(self, path: str, size: int) -> None:
        self.bar: Any = None
        self.task: Any = None
        import sys

        if size >= PROGRESS_FROM and sys.stderr is not None and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            from invmap.safe import escape

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.name = escape(os.path.basename(path))

    def __call__(self, phase: str | None, amount: int | None = None) -> None:
        if self.bar is None:
            return
        if phase == "reading":
            self.bar.start()
            self.task = self.bar.add_task(f"Reading {self.name}", total=None)
        elif phase == "indexing":
            self.bar.update(self.task, description=f"Indexing {self.name}", total=amount, completed=0)
        elif amount:
            self.bar.advance(self.task, amount)

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.stop()


class Records(Sequence):  # of dict[str, Any]
    """The records (only `columns`) at `positions` of an index, read a slice at a time: a command
    holds the positions of what it selected and sorted, and a format writes 100,000 records in
    batches without ever holding them all."""

    def __init__(self, index: Index, positions: Sequence[int], columns: Sequence[str] = SOURCE_FIELDS) -> None:
        self.index, self.positions, self.columns = index, positions, tuple(columns)

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return self.index.at(self.positions[at], self.columns)
        return self.index.at([self.positions[at]], self.columns)[0]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for start in range(0, len(self.positions), AT_ONCE * 4):
            yield from self[start : start + AT_ONCE * 4]
