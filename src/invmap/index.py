"""The SQLite index of a catalog: build, open, query. The only sqlite3 user.

catalog.toml stays the source of truth; the index is a rebuildable copy in the user's cache folder
(`$XDG_CACHE_HOME/invmap/`, else `~/.cache/invmap/`), one file per catalog, keyed on the catalog's
real path, size, mtime, inode and ctime (and those of every catalog it extends), invmap's version and
the field schema (`fields.SCHEMA`). A stale or missing index is rebuilt in a temporary file, synced,
and renamed into place, so readers never see half of one; readers open it read-only and never write
it. One invmap builds a catalog's index at a time (a lock beside it, `index-....lock`): the others
wait, then read what it built; SIGINT, SIGTERM or SIGHUP during a build removes the partial file. An index that is damaged, of another schema, not owned by this user or writable by others is
never trusted: it is rebuilt, or the catalog is indexed in memory. Input that cannot have a persisted
index (`-c -`, a FIFO, `INVMAP_NO_CACHE=1`, an unusable cache folder) gets the same schema in
`:memory:`. Columns are always named from `fields.FIELDS`, never read by position.

Search is SQLite's FTS5: one external-content table over the searched fields (`fts`), with the
Porter stemmer, read by `search.py`; the stems it holds are the vocabulary typos are corrected
against (`words`).

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

from invmap.cache import enabled, folder, key_of, ours, usable_folder
from invmap.fields import DEFAULT_SEARCH, FIELDS, KINDS, SOURCE_FIELDS, TEXT_FIELDS
from invmap.text import camel_parts, normalize
from invmap.trace import trace

TYPE_CHECKING = False  # a TAB press reads this module: no `typing`, `json`, `hashlib` or `urllib` here
if TYPE_CHECKING:
    from typing import Any

    from invmap.location import Location
    from invmap.model import Catalog

FORMAT = 5  # PRAGMA user_version: bump when the tables below change
_STRICT = " STRICT" if sqlite3.sqlite_version_info >= (3, 37) else ""
TOKENIZE = "porter unicode61 remove_diacritics 2"
LIST_JOIN = "\x1f"  # list columns (metrics, symptoms, aliases) in the index, as fields.List does

# Searched columns of `fts`, in order: every text field (so `--in FIELD` can name any), then each
# source's level titles (`level_words`) and the parts of its CamelCase words (`parts`: FlashAttention
# -> Flash Attention), which live only in the index.
# The lists of small tables (a source's places in the code, its engine settings) are searched in a
# table of their own (`code_fts`): BM25 divides by a row's whole length, so long lists of paths in
# `fts` would push a source down for words its name and title hold.
CODE_COLUMNS: tuple[str, ...] = tuple(f for f in TEXT_FIELDS if KINDS[f].name == "tables")
SEARCH_COLUMNS: tuple[str, ...] = (*(f for f in TEXT_FIELDS if f not in CODE_COLUMNS), "level_words", "parts")
EXTRA_COLUMNS: tuple[str, ...] = ("level_words", "parts")
# BM25 weight of each column (a field's `weight`; a field searched only when named counts as 1).
WEIGHTS: dict[str, float] = {
    **{name: (f.weight or 1.0) for f in FIELDS if (name := f.name) in TEXT_FIELDS},
    "level_words": 0.5,
    "parts": 2.0,
}
DEFAULT_COLUMNS: tuple[str, ...] = (*(f for f in DEFAULT_SEARCH if f not in CODE_COLUMNS), *EXTRA_COLUMNS)
DEFAULT_CODE_COLUMNS: tuple[str, ...] = tuple(f for f in DEFAULT_SEARCH if f in CODE_COLUMNS)

TABLES: tuple[str, ...] = (
    f"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL){_STRICT}",
    # Every field of the JSON contract (`url` the effective link, `layers` the codes joined with ';',
    # lists joined with U+001F), `pos` (the catalog order), and the two search-only columns.
    "CREATE TABLE sources (pos INTEGER PRIMARY KEY, "
    + ", ".join(f"{f.name} {f.kind.sql}{' NOT NULL' if f.required else ''}" for f in FIELDS)
    + f", level_words TEXT, parts TEXT){_STRICT}",
    f"CREATE VIRTUAL TABLE fts USING fts5({', '.join(SEARCH_COLUMNS)}, content='sources', content_rowid='pos', "
    f"tokenize='{TOKENIZE}')",
    f"CREATE VIRTUAL TABLE code_fts USING fts5({', '.join(CODE_COLUMNS)}, content='sources', content_rowid='pos', "
    f"tokenize='{TOKENIZE}')",
    # The stems of the catalog's words that typos are corrected against, by length (see `_fill`).
    f"CREATE TABLE words (length INTEGER NOT NULL, term TEXT NOT NULL, docs INTEGER NOT NULL, "
    f"PRIMARY KEY (length, term)) WITHOUT ROWID{_STRICT.replace(' ', ', ')}",
    f"CREATE TABLE codes (code TEXT NOT NULL, pos INTEGER NOT NULL){_STRICT}",
    f"CREATE TABLE keys (key TEXT NOT NULL, kind TEXT NOT NULL, pos INTEGER NOT NULL){_STRICT}",
    "CREATE TABLE levels (pos INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, title TEXT NOT NULL, scope TEXT, "
    f"question TEXT, metrics TEXT, symptoms TEXT){_STRICT}",
    "CREATE VIRTUAL TABLE levels_fts USING fts5(title, scope, question, metrics, symptoms, content='levels', "
    f"content_rowid='pos', tokenize='{TOKENIZE}')",
    f"CREATE TABLE glossary (term TEXT PRIMARY KEY, expansion TEXT, aliases TEXT, definition TEXT NOT NULL){_STRICT}",
    # Real symptom reports (`[[reports]]`), sources joined with U+001F, in catalog order.
    "CREATE TABLE reports (pos INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, title TEXT NOT NULL, url TEXT NOT NULL, "
    'engine TEXT NOT NULL, "primary" TEXT NOT NULL, secondary TEXT, sources TEXT, resolution TEXT, '
    f"accessed TEXT NOT NULL){_STRICT}",
    # What triage ranks levels by: each level's items (title, scope, question, each metric and
    # symptom) and each report (title and resolution), with the level(s) each speaks for.
    "CREATE VIRTUAL TABLE evidence USING fts5(level UNINDEXED, kind UNINDEXED, secondary UNINDEXED, text, "
    f"tokenize='{TOKENIZE}')",
    "CREATE INDEX codes_by_code ON codes (code, pos)",
    "CREATE INDEX keys_by_key ON keys (key, pos)",
    "CREATE INDEX sources_by_year ON sources (year)",
)
LEVEL_COLUMNS: tuple[str, ...] = ("title", "scope", "question", "metrics", "symptoms")
ITEM_STRIDE = 1 << 16  # level items' rowids: a level's pos times this, plus the item's place
AT_ONCE = 999  # positions looked up by one `pos IN (...)` query: the most any SQLite allows
PROGRESS_FROM = 8_000_000  # bytes of TOML: a first run this large reports progress (a bar on a terminal)
WORDS_ALL = 10_000  # a catalog smaller than this corrects typos against every word it holds


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


_EXPECTED: list[tuple[str, str]] = []


def expected_schema() -> list[tuple[str, str]]:
    """What `sqlite_master` of an index we built holds (SQLite keeps each statement's text verbatim,
    and FTS5 adds shadow tables of its own): read once from an empty index built in memory."""
    if not _EXPECTED:
        con = sqlite3.connect(":memory:")
        for sql in TABLES:
            con.execute(sql)
        _EXPECTED.extend(con.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"))
        con.close()
    return _EXPECTED


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


# --- building --------------------------------------------------------------------------------


_LISTS_AT = tuple(1 + i for i, f in enumerate(FIELDS) if f.kind.name == "list")
_TABLES_AT = tuple((1 + i, f.kind) for i, f in enumerate(FIELDS) if f.kind.name == "tables")
_DATES_AT = tuple(1 + i for i, f in enumerate(FIELDS) if f.kind.name == "date")
_LAYERS_AT = 1 + SOURCE_FIELDS.index("layers")
_URL_AT = 1 + SOURCE_FIELDS.index("url")
_NAME_AT, _TITLE_AT, _KEYWORDS_AT = (1 + SOURCE_FIELDS.index(f) for f in ("name", "title", "keywords"))


def _record_row(source: Any, pos: int, level_titles: dict[str, str]) -> list[Any]:
    """A source's row: `pos`, every field in `SOURCE_FIELDS` order (values, not names: SQLite binds them
    ~15% faster) in its kind's index form (lists joined as `fields.List.row` joins them, dates as ISO
    text), then the search-only columns."""
    values = source.__dict__
    row = [pos, *map(values.get, SOURCE_FIELDS), None, None]
    codes = source.layers
    row[_LAYERS_AT] = ";".join(codes)
    row[_URL_AT] = source.link
    for i in _DATES_AT:
        row[i] = row[i].isoformat()
    keywords = row[_KEYWORDS_AT]
    for i in _LISTS_AT:
        row[i] = LIST_JOIN.join(row[i]) if row[i] else None
    for i, kind in _TABLES_AT:  # in the JSON contract's form: a place's repo filled from `code`
        row[i] = kind.row(kind.json(kind.fill(row[i], values))) if row[i] else None
    if codes:
        row[-2] = " \x1f ".join(level_titles[code] for code in codes if code in level_titles) or None
    row[-1] = camel_parts(row[_NAME_AT], row[_TITLE_AT], *(keywords or ()))
    return row


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


class _Tokenizer:
    """The thread that tokenizes one chunk of rows into the full-text index while the next chunk of the
    catalog is validated. The statement is one `INSERT ... SELECT` that SQLite runs in C with the GIL
    let go, so on two cores it costs no time of the building thread's; statements that bind Python
    values (which take the GIL for every row) stay in the building thread, which waits for the chunk
    before it uses the connection again. A failure is raised again in the building thread."""

    def __init__(self, con: sqlite3.Connection) -> None:
        import threading

        self.con = con
        self.failed: list[BaseException] = []
        self.thread: threading.Thread | None = None

    def start(self, first: int, end: int) -> None:
        import threading

        self.wait()
        self.thread = threading.Thread(target=self._run, args=(first, end), daemon=True)
        self.thread.start()

    def _run(self, first: int, end: int) -> None:
        try:
            self.con.execute(_INDEX_TEXT, (first, end))
            if CODE_COLUMNS:
                self.con.execute(_INDEX_CODE_TEXT, (first, end))
            self.con.execute(_INDEX_CODES, (first, end))
        except BaseException as exc:  # noqa: BLE001 - raised again in the building thread
            self.failed.append(exc)

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        if self.failed:
            raise self.failed[0]


_INSERT_SOURCES = (
    f"INSERT INTO sources ({', '.join(('pos', *SOURCE_FIELDS, *EXTRA_COLUMNS))}) "
    f"VALUES ({', '.join('?' * (1 + len(SOURCE_FIELDS) + len(EXTRA_COLUMNS)))})"
)
_INDEX_TEXT = (
    f"INSERT INTO fts (rowid, {', '.join(SEARCH_COLUMNS)}) SELECT pos, {', '.join(SEARCH_COLUMNS)} "
    "FROM sources WHERE pos >= ? AND pos < ?"
)
# A list-of-tables column is indexed up to U+001D: its items' searched columns (`fields.Tables.row`);
# the rest (a place's commit and repository) is kept for reading, never searched.
_INDEX_CODE_TEXT = (
    f"INSERT INTO code_fts (rowid, {', '.join(CODE_COLUMNS)}) SELECT pos, "
    + ", ".join(f"substr({c}, 1, instr({c}, char(29)) - 1)" for c in CODE_COLUMNS)
    + " FROM sources WHERE pos >= ? AND pos < ? AND ("
    + " OR ".join(f"{c} IS NOT NULL" for c in CODE_COLUMNS)
    + ")"
)
# Each source's level codes, one row a code, from its `layers` column (`L4;L5;L6`), in SQL.
_INDEX_CODES = (
    "WITH RECURSIVE split(pos, code, rest) AS ("
    " SELECT pos, '', layers || ';' FROM sources WHERE pos >= ? AND pos < ? AND layers != ''"
    " UNION ALL SELECT pos, substr(rest, 1, instr(rest, ';') - 1), substr(rest, instr(rest, ';') + 1)"
    " FROM split WHERE rest != '')"
    " INSERT INTO codes SELECT code, pos FROM split WHERE code != ''"
)


def _fill(
    con: sqlite3.Connection,
    catalog: Any,
    key: dict[str, Any] | None,
    progress: Callable[[int], None] | None = None,
    bases: Sequence[dict[str, Any]] = (),
) -> Catalog:
    """Write the index of `catalog` (a Catalog, or a `catalog.Validation` not yet read: its chunks
    are indexed as they are validated). Returns the catalog; a catalog that turns out to be invalid
    raises its CatalogError once every chunk is checked."""
    import json  # building only: a warm run and a TAB never need it

    tables = [sql for sql in TABLES if not sql.startswith("CREATE INDEX")]
    for sql in tables:
        con.execute(sql)
    con.execute(f"PRAGMA user_version = {FORMAT}")
    con.execute("BEGIN")
    whole = _fill_sources(con, catalog, progress)
    count = len(whole.sources)
    # The correction vocabulary: the stems two sources or more hold (a word only one source holds is
    # mostly its own name or id, typed whole by whoever means it: `show` forgives typos in names); in
    # a catalog under WORDS_ALL sources, every stem. Digits-only terms are never a correction.
    con.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, fts, 'row')")
    con.execute(
        "INSERT INTO words SELECT length(term), term, doc FROM temp.vocab WHERE term GLOB '*[^0-9]*' AND (doc >= 2 OR ?)",
        [count < WORDS_ALL],
    )
    con.execute("DROP TABLE temp.vocab")
    con.executemany(
        "INSERT INTO levels VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (n, code, info.title, info.scope, info.question, _joined(info.metrics), _joined(info.symptoms))
            for n, (code, info) in enumerate(whole.layers.items())
        ],
    )
    con.execute("INSERT INTO levels_fts (levels_fts) VALUES ('rebuild')")
    _fill_reports(con, whole)
    con.executemany(
        "INSERT INTO glossary VALUES (?, ?, ?, ?)",
        [(term, t.expansion, _joined(t.aliases), t.definition) for term, t in whole.glossary.items()],
    )
    info = whole.catalog.model_dump() if whole.catalog is not None else None
    meta = {
        "key": key_text(key) if key is not None else "",
        "bases": "\n\n".join(key_text(b) for b in bases),
        "catalog": json.dumps(info),
        "sources": str(count),
    }
    con.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    for sql in TABLES:  # indexes last: building one over all rows is faster than keeping it up to date
        if sql not in tables:
            con.execute(sql)
    con.execute("COMMIT")
    return whole


REPORT_COLUMNS: tuple[str, ...] = (
    "id", "title", "url", "engine", "primary", "secondary", "sources", "resolution", "accessed",
)  # fmt: skip


def _fill_reports(con: sqlite3.Connection, whole: Catalog) -> None:
    """The reports' rows, and the evidence triage ranks with: every level item, then every report."""
    con.executemany(
        f"INSERT INTO reports VALUES (?, {', '.join('?' * len(REPORT_COLUMNS))})",
        [
            (n, r.id, r.title, r.url, r.engine, r.primary, r.secondary, _joined(r.sources), r.resolution,
             r.accessed.isoformat())
            for n, r in enumerate(whole.reports)
        ],
    )  # fmt: skip
    rows = []
    for code, info in whole.layers.items():
        texts = [("title", info.title), ("scope", info.scope), ("question", info.question)]
        texts += [("metrics", m) for m in info.metrics] + [("symptoms", t) for t in info.symptoms]
        rows += [(code, kind, None, text) for kind, text in texts if text]
    rows += [(r.primary, f"report:{r.id}", r.secondary, f"{r.title} {r.resolution}") for r in whole.reports]
    con.executemany("INSERT INTO evidence (level, kind, secondary, text) VALUES (?, ?, ?, ?)", rows)


def _fill_sources(con: sqlite3.Connection, catalog: Any, progress: Callable[[int], None] | None) -> Catalog:
    """The sources' rows, keys and words, 10,000 rows at a time; the whole catalog, validated."""
    from invmap.catalog import Validation
    from invmap.identifiers import canonical_link  # building only: a warm run never needs it

    streamed = isinstance(catalog, Validation)
    chunks = catalog.chunks() if streamed else [catalog.sources]
    titles = catalog.level_titles() if streamed else {code: info.title for code, info in catalog.layers.items()}
    tokenizer = _Tokenizer(con)
    start = 0
    try:
        for chunk in chunks:  # validated while the chunk before is tokenized
            for at in range(0, len(chunk), 10_000):  # the rows of a chunk are never all in memory at once
                part = chunk[at : at + 10_000]
                rows = [_record_row(s, start + i, titles) for i, s in enumerate(part)]
                keys = [(k, kind, start + i) for i, s in enumerate(part) for k, kind in source_keys(s, canonical_link)]
                tokenizer.wait()
                con.executemany(_INSERT_SOURCES, rows)
                con.executemany("INSERT INTO keys VALUES (?, ?, ?)", keys)
                tokenizer.start(start, start + len(rows))
                start += len(part)
                del rows, keys
                if progress:
                    progress(len(part))
        return catalog.catalog() if streamed else catalog  # every problem, at once, if there are any
    finally:
        tokenizer.wait()


def _joined(items: Sequence[str]) -> str | None:
    return LIST_JOIN.join(items) if items else None


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
    catalog: Any,
    key: dict[str, Any] | None,
    progress: Callable[[int], None] | None = None,
    bases: Sequence[dict[str, Any]] = (),
) -> sqlite3.Connection:
    """Index `catalog` (a Catalog, or a `catalog.Validation` to index as it is validated): persisted
    for `key` where the cache folder is usable, else in memory."""
    from invmap.catalog import _signals_clean_up, _Stopped

    where = usable_folder(create=True) if key is not None and enabled() else None
    if where is not None:
        try:  # SIGINT, SIGTERM, SIGHUP while building: the partial file is removed, then exit 128 + N
            with _signals_clean_up():
                return _build_persisted(catalog, key, progress, bases, where)
        except _Stopped as stopped:
            raise SystemExit(128 + stopped.signum) from None
        except _InMemory as fallback:
            catalog = fallback.catalog
            progress = None  # the rows were counted once already
    trace("index: in memory")
    con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    _fill(con, catalog, None, progress)
    return con


class _InMemory(Exception):
    """The persisted build could not be done (or opened after): index `catalog` in memory instead."""

    def __init__(self, catalog: Any) -> None:
        super().__init__("in memory")
        self.catalog = catalog


def _build_persisted(
    catalog: Any, key: Any, progress: Callable[[int], None] | None, bases: Sequence[dict[str, Any]], where: str
) -> sqlite3.Connection:
    from invmap.catalog import Validation

    target = index_path(key)  # type: ignore[arg-type]
    tmp = None
    import tempfile

    _tidy(where)
    try:
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".index-", suffix=".tmp")
        os.close(fd)
        os.chmod(tmp, 0o600)
        con = sqlite3.connect(tmp, isolation_level=None, check_same_thread=False)
        con.execute("PRAGMA page_size = 16384")  # fewer, fuller pages for the full-text index
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        try:
            catalog = _fill(con, catalog, key, progress, bases)
        finally:
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
        if isinstance(catalog, Validation):  # the rest is still to be checked: then kept in memory
            for _ in catalog.chunks():
                pass
            catalog = catalog.catalog()
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    raise _InMemory(catalog)


# --- reading ---------------------------------------------------------------------------------

_UNROW = tuple((name, KINDS[name]) for name in SOURCE_FIELDS if KINDS[name].name in ("list", "codes", "tables"))


def _record(columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    record = dict(zip(columns, row))
    for name, kind in _UNROW:
        if name in record:
            record[name] = kind.unrow(record[name])
    return record


class Damaged(sqlite3.DatabaseError):
    """What was read breaks what the index was built to hold (a NULL where the table says NOT NULL,
    a level missing): a damaged page that SQLite read without complaint. The index is rebuilt."""


_READ_ERRORS = (sqlite3.Error, UnicodeDecodeError, ValueError, OverflowError)


def _texts(values: Sequence[Any]) -> bool:
    return all(isinstance(v, str) for v in values)


class Index:
    """An open index of one catalog. Every query goes through `_rows`, which, should the file turn
    out to be broken mid-run, rebuilds the index from the catalog and asks again."""

    def __init__(self, con: sqlite3.Connection, rebuild: Callable[[], sqlite3.Connection]) -> None:
        self._con = con
        self._rebuild = rebuild
        self._rebuilt = False
        self._stemmer = False
        self._items = False

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
        if had_items:  # a query over the level items may be what is asked again
            self.level_items()
        return work(self._con)

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

    def levels(self) -> dict[str, tuple[str, str | None]]:
        return {code: (title, scope) for code, title, scope in self._rows("SELECT code, title, scope FROM levels")}

    def level_details(self) -> list[dict[str, Any]]:
        """Every level the catalog describes: code, title, scope, question, metrics, symptoms, in catalog order."""

        def read(con: sqlite3.Connection) -> list[tuple[Any, ...]]:
            rows = con.execute("SELECT pos, code, title, scope, question, metrics, symptoms FROM levels ORDER BY pos")
            rows = rows.fetchall()
            indexed = con.execute("SELECT count(*) FROM levels_fts_docsize").fetchone()[0]
            if [r[0] for r in rows] != list(range(indexed)) or not all(_texts(r[1:3]) for r in rows):
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
            }
            for pos, code, title, scope, question, metrics, symptoms in rows
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
            if not all(_texts((r[0], r[3])) for r in rows):
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

    # --- full-text search (search.py) ---------------------------------------------------------

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

    def bm25(
        self, table: str, expression: str, weights: Sequence[float], where: str = "", params: Sequence[Any] = ()
    ) -> dict[int, float]:
        """rowid -> BM25 relevance (higher is better) of each row matching `expression`."""
        sql = f"SELECT rowid, bm25({table}, {', '.join(f'{w:g}' for w in weights)}) FROM {table} WHERE {table} MATCH ?"
        if where:
            sql += f" AND +rowid IN (SELECT pos FROM sources WHERE {where})"
        return {rowid: -score for rowid, score in self._rows(sql, [expression, *params])}

    def highlights(
        self, table: str, expression: str, rowid: int, columns: Sequence[str], marks: tuple[str, str]
    ) -> dict[str, str]:
        """column -> its text with the words `expression` matches between `marks`, for one row."""
        every = {"fts": SEARCH_COLUMNS, "code_fts": CODE_COLUMNS}.get(table, LEVEL_COLUMNS)
        calls = ", ".join(f"highlight({table}, {every.index(c)}, ?, ?)" for c in columns)
        sql = f"SELECT {calls} FROM {table} WHERE {table} MATCH ? AND rowid = ?"
        rows = self._rows(sql, [*marks * len(columns), expression, rowid])
        return dict(zip(columns, rows[0])) if rows else {}

    def texts(self, table: str, rowids: Sequence[int], columns: Sequence[str]) -> dict[int, str]:
        """rowid -> the raw text of `columns` of that row, joined (for `--exact`)."""
        source = "levels" if table == "levels_fts" else "sources"
        out: dict[int, str] = {}
        for start in range(0, len(rowids), AT_ONCE):
            part = list(rowids[start : start + AT_ONCE])
            picked = ", ".join(f"coalesce({c}, '')" for c in columns)
            key = "pos"
            sql = f"SELECT {key}, {picked} FROM {source} WHERE {key} IN ({', '.join('?' * len(part))})"
            for row in self._rows(sql, part):
                out[row[0]] = " \x1f ".join(row[1:])
        return out

    def cells(self, table: str, rowids: Sequence[int], columns: Sequence[str]) -> dict[int, list[str]]:
        """rowid -> the raw text of each of `columns` (`''` where empty), for per-field weighing."""
        source = "sources" if table == "fts" else "levels"
        picked = ", ".join(f"coalesce({c}, '')" for c in columns)
        out: dict[int, list[str]] = {}
        for start in range(0, len(rowids), AT_ONCE):
            part = list(rowids[start : start + AT_ONCE])
            sql = f"SELECT pos, {picked} FROM {source} WHERE pos IN ({', '.join('?' * len(part))})"
            for row in self._rows(sql, part):
                out[row[0]] = list(row[1:])
        return out

    def lengths(self, table: str) -> dict[str, float] | None:
        """column -> its average length in tokens in `table` (`fts`, `levels_fts`), as FTS5's own bm25()
        reads it: the averages record (rowid 1 of the table's `_data`: a varint row count, then one
        varint token total per column). None where it cannot be read as that."""
        columns = SEARCH_COLUMNS if table == "fts" else LEVEL_COLUMNS
        found = self._rows(f"SELECT block FROM {table}_data WHERE id = 1")
        if not found or not isinstance(found[0][0], bytes):
            return None
        values: list[int] = []
        blob, at = found[0][0], 0
        while at < len(blob) and len(values) <= len(columns):
            value = 0  # SQLite's varint: 7 bits a byte, the high bit set on all but the last; 9 bytes at most
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
        if len(values) != 1 + len(columns) or values[0] <= 0:
            return None
        return {c: total / values[0] for c, total in zip(columns, values[1:])}

    def stems(self, words: Sequence[str]) -> list[list[str]]:
        """Each word as the index's tokenizer stems it (`Evictions` -> ['evict'], `multi-model` ->
        ['multi', 'model']): SQLite's own Porter stemmer, in a temporary table beside the index."""
        if not words:
            return []

        def stem(con: sqlite3.Connection) -> list[list[str]]:
            if not self._stemmer:
                con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem USING fts5(w, tokenize='{TOKENIZE}')")
                con.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem_terms USING fts5vocab(temp, stem, 'instance')"
                )
                self._stemmer = True
            con.execute("DELETE FROM temp.stem")
            con.executemany("INSERT INTO temp.stem (rowid, w) VALUES (?, ?)", enumerate(words))
            out: list[list[str]] = [[] for _ in words]
            for doc, term in con.execute("SELECT doc, term FROM temp.stem_terms ORDER BY doc, offset"):
                out[doc].append(term)
            return out

        return self._with(stem)

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


def open_catalog(
    location: Location, progress: Callable[[str, int], Callable[[str | None, int | None], None]] | None = None
) -> Index:
    """The index of the active catalog: current from the cache, else built (and persisted if it can be).
    A persisted index found damaged while it is read is rebuilt (and persisted again). `progress(path,
    size)` may return a reporter for a first run of a large catalog (the CLI draws a bar with it)."""
    key = key_of(location.path) if enabled() else None
    if key is not None:  # the size limit holds with a current index too (the rebuild checks it again)
        from invmap.location import MAX_VAR, max_size

        if key["size"] > (limit := max_size()):
            from invmap.errors import CatalogError

            raise CatalogError(location.path, [f"larger than {limit:,} bytes (${MAX_VAR} sets the limit)"])
    if key is not None and (con := open_current(key)) is not None:
        trace(f"index: current {index_path(key)}")
        return Index(con, lambda: _from_toml(location, key, None))
    if key is None:
        return Index(_from_toml(location, key, progress), lambda: _from_toml(location, None, None))
    with _one_builder(key) as waited:  # twenty first runs at once: one builds, the others read its index
        if waited:
            key = key_of(location.path)  # the catalog may have changed while we waited
            if key is not None and (con := open_current(key)) is not None:
                trace(f"index: current {index_path(key)} (built by another invmap)")
                return Index(con, lambda: _from_toml(location, key, None))
        return Index(_from_toml(location, key, progress), lambda: _from_toml(location, None, None))


@contextlib.contextmanager
def _one_builder(key: dict[str, Any]) -> Iterator[bool]:
    """Held while this catalog's index is built: an exclusive lock on `index-....lock` beside the
    index, so that one invmap builds it at a time. Yields whether another invmap held it first (it
    has then probably built the index). No lock to be had (no usable cache folder, a file system
    without locks): yields False and the build goes on unlocked, as before."""
    import fcntl

    if usable_folder(create=True) is None:
        yield False
        return
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(index_path(key)[: -len(".sqlite3")] + ".lock", flags, 0o600)
    except OSError:
        yield False
        return
    try:
        waited = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            trace("index: waiting for another invmap that is building it")
            waited = True
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield waited
    finally:
        os.close(fd)  # closing releases the lock


def _from_toml(location: Location, key: dict[str, Any] | None, progress: Any) -> sqlite3.Connection:
    from invmap import catalog

    try:
        size = os.stat(location.path).st_size if location.path != "-" else 0
    except OSError:
        size = 0
    report = progress(location.path, size) if progress is not None and size >= PROGRESS_FROM else None
    try:
        if report:
            report("reading", None)
        validation, bases = catalog.stream_with_bases(location.path)
        if report:
            report("indexing", validation.total)
        return build(validation, key, (lambda n: report(None, n)) if report else None, bases=bases)
    finally:
        if report:
            report("done", None)


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
