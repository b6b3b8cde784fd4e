"""Writing an index's tables from a catalog: sources, keys and words a chunk at a time (the
full-text tokenizing in a second thread), then levels, reports, evidence, glossary and meta."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from invmap.cjk import bigrams
from invmap.fields import SOURCE_FIELDS
from invmap.index.cached import key_text
from invmap.index.fulltext import JSON_EACH
from invmap.index.rows import Rows, joined
from invmap.index.schema import CODE_COLUMNS, EXTRA_COLUMNS, FORMAT, REPORT_COLUMNS, SEARCH_COLUMNS, TABLES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from invmap.model import Catalog

WORDS_ALL = 10_000  # a catalog smaller than this corrects typos against every word it holds


def gaps(info: Any) -> str | None:
    """A level's `not_covered` topics as JSON text (`[{"topic": ..., "cues": [...]}]`), None for none."""
    import json

    return json.dumps([g.model_dump() for g in info.not_covered]) if info.not_covered else None


class _Tokenizer:
    """The thread that writes one chunk's keys and tokenizes its rows into the full-text index while
    the next chunk of the catalog is validated. Each statement binds at most one value and runs in C
    with the GIL let go, so on two cores it costs no time of the building thread's: the keys arrive as
    one JSON array, read by `json_each` (SQLite 3.38+; before it the building thread binds them a row
    at a time), and the full-text rows are one `INSERT ... SELECT`. Statements that bind Python values
    row by row (which take the GIL for every row) stay in the building thread, which waits for the
    chunk before it uses the connection again. A failure is raised again in the building thread."""

    def __init__(self, con: sqlite3.Connection) -> None:
        import threading

        self.con = con
        self.failed: list[BaseException] = []
        self.thread: threading.Thread | None = None

    def start(self, first: int, end: int, keys: str | None = None) -> None:
        import threading

        self.wait()
        self.thread = threading.Thread(target=self._run, args=(first, end, keys), daemon=True)
        self.thread.start()

    def _run(self, first: int, end: int, keys: str | None) -> None:
        try:
            if keys is not None:
                self.con.execute(_KEYS_FROM_JSON, (keys,))
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
_INSERT_KEYS = "INSERT INTO keys VALUES (?, ?, ?)"
# The same rows from one JSON array of [key, kind, pos] (materialized once: `value` referenced three
# times would be rendered again for each); `->>` gives a JSON string as TEXT and a number as INTEGER,
# as binding the Python str and int does.
_KEYS_FROM_JSON = (
    "WITH chunk(item) AS MATERIALIZED (SELECT value FROM json_each(?)) "
    "INSERT INTO keys SELECT item ->> 0, item ->> 1, item ->> 2 FROM chunk"
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


def fill(
    con: sqlite3.Connection,
    catalog: Any,
    key: dict[str, Any] | None,
    progress: Callable[[int], None] | None = None,
    bases: Sequence[dict[str, Any]] = (),
) -> Catalog:
    """Write the index of `catalog` (a Catalog, or a `validation.Validation` not yet read: its chunks
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
        "INSERT INTO levels VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (n, code, info.title, info.scope, info.question, joined(info.metrics), joined(info.symptoms), gaps(info))
            for n, (code, info) in enumerate(whole.layers.items())
        ],
    )
    con.execute("INSERT INTO levels_fts (levels_fts) VALUES ('rebuild')")
    _fill_reports(con, whole)
    con.executemany(
        "INSERT INTO glossary VALUES (?, ?, ?, ?)",
        [(term, t.expansion, joined(t.aliases), t.definition) for term, t in whole.glossary.items()],
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


def _fill_reports(con: sqlite3.Connection, whole: Catalog) -> None:
    """The reports' rows, and the evidence triage ranks with: every level item, then every report."""
    con.executemany(
        f"INSERT INTO reports VALUES (?, {', '.join('?' * len(REPORT_COLUMNS))})",
        [
            (n, r.id, r.title, r.url, r.engine, r.primary, r.secondary, joined(r.sources), r.resolution,
             r.accessed.isoformat())
            for n, r in enumerate(whole.reports)
        ],
    )  # fmt: skip
    rows = []
    for code, info in whole.layers.items():
        texts = [("title", info.title), ("scope", info.scope), ("question", info.question)]
        texts += [("metrics", m) for m in info.metrics] + [("symptoms", t) for t in info.symptoms]
        rows += [(code, kind, None, text) for kind, text in texts if text]
    # a report's CJK runs as bigrams, as a symptom's are (invmap.cjk)
    rows += [(r.primary, f"report:{r.id}", r.secondary, bigrams(f"{r.title} {r.resolution}")) for r in whole.reports]
    con.executemany("INSERT INTO evidence (level, kind, secondary, text) VALUES (?, ?, ?, ?)", rows)


def _fill_sources(con: sqlite3.Connection, catalog: Any, progress: Callable[[int], None] | None) -> Catalog:
    """The sources' rows, keys and words, 10,000 rows at a time; the whole catalog, validated."""
    import json

    from invmap.identifiers import canonical_link  # building only: a warm run never needs it
    from invmap.validation import Validation

    streamed = isinstance(catalog, Validation)
    chunks = catalog.chunks() if streamed else [catalog.sources]
    titles = catalog.level_titles() if streamed else {code: info.title for code, info in catalog.layers.items()}
    encode = json.JSONEncoder(ensure_ascii=False, check_circular=False, separators=(",", ":")).encode
    making = Rows(titles, canonical_link)
    row, keys_of = making.row, making.keys
    tokenizer = _Tokenizer(con)
    start = 0
    try:
        for chunk in chunks:  # validated while the chunk before is tokenized
            for at in range(0, len(chunk), 10_000):  # the rows of a chunk are never all in memory at once
                part = chunk[at : at + 10_000]
                rows = [row(s, pos) for pos, s in enumerate(part, start)]
                keys = [key for pos, s in enumerate(part, start) for key in keys_of(s, pos)]
                keys_json = encode(keys) if JSON_EACH else None
                tokenizer.wait()
                con.executemany(_INSERT_SOURCES, rows)
                if keys_json is not None:
                    tokenizer.start(start, start + len(rows), keys_json)
                else:
                    con.executemany(_INSERT_KEYS, keys)
                    tokenizer.start(start, start + len(rows))
                start += len(part)
                del rows, keys, keys_json
                if progress:
                    progress(len(part))
        return catalog.catalog() if streamed else catalog  # every problem, at once, if there are any
    finally:
        tokenizer.wait()
