"""What an index holds: its format number, tables, searched columns and their BM25 weights.

One declaration that the builder writes (`fill.py`), the opener checks against (`cached.py`) and
the readers name their columns from: columns are always named from `fields.FIELDS`, never read by
position. No typing at import time: a TAB press reads it.
"""

from __future__ import annotations

import sqlite3

from invmap.fields import DEFAULT_SEARCH, FIELDS, KINDS, TEXT_FIELDS

FORMAT = 6  # PRAGMA user_version: bump when the tables below change
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
    # The stems of the catalog's words that typos are corrected against, by length (see `fill.fill`).
    f"CREATE TABLE words (length INTEGER NOT NULL, term TEXT NOT NULL, docs INTEGER NOT NULL, "
    f"PRIMARY KEY (length, term)) WITHOUT ROWID{_STRICT.replace(' ', ', ')}",
    f"CREATE TABLE codes (code TEXT NOT NULL, pos INTEGER NOT NULL){_STRICT}",
    f"CREATE TABLE keys (key TEXT NOT NULL, kind TEXT NOT NULL, pos INTEGER NOT NULL){_STRICT}",
    "CREATE TABLE levels (pos INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, title TEXT NOT NULL, scope TEXT, "
    f"question TEXT, metrics TEXT, symptoms TEXT, not_covered TEXT){_STRICT}",
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
REPORT_COLUMNS: tuple[str, ...] = (
    "id", "title", "url", "engine", "primary", "secondary", "sources", "resolution", "accessed",
)  # fmt: skip


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
