"""A source as the index stores it: its row of `sources` (every field in its kind's index form) and
the keys by which `show` finds it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter

from invmap.fields import FIELDS, SOURCE_FIELDS, STORED_FIELDS
from invmap.index.schema import LIST_JOIN
from invmap.text import camel_parts, normalize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_LISTS_AT = tuple(1 + i for i, f in enumerate(FIELDS) if f.kind.name == "list")
_TABLES_AT = tuple((1 + i, f.kind) for i, f in enumerate(FIELDS) if f.kind.name == "tables")
_DATES_AT = tuple(1 + i for i, f in enumerate(FIELDS) if f.kind.name == "date")
_LAYERS_AT = 1 + SOURCE_FIELDS.index("layers")
_URL_AT = 1 + SOURCE_FIELDS.index("url")
_NAME_AT, _TITLE_AT, _KEYWORDS_AT = (1 + SOURCE_FIELDS.index(f) for f in ("name", "title", "keywords"))
# A record's stored values in `SOURCE_FIELDS` order, read from its `__dict__` by one C call (a derived
# field reads `id` in its place, then is set to None or, `layers`, to its codes).
_STORED_VALUES = itemgetter(*(f if f in STORED_FIELDS else "id" for f in SOURCE_FIELDS))
_DERIVED_AT = tuple(1 + i for i, f in enumerate(SOURCE_FIELDS) if f not in STORED_FIELDS)


class Rows:
    """The rows and keys of one build's sources. What repeats across a catalog's sources is worked out
    once a build: each label's codes and level titles, each date's ISO text."""

    def __init__(self, level_titles: dict[str, str], canonical_link: Callable[[str], str]) -> None:
        self.level_titles = level_titles
        self.canonical_link = canonical_link
        self._labels: dict[str, tuple[str, str | None]] = {}
        self._dates: dict[Any, str] = {}

    def _label(self, source: Any) -> tuple[str, str | None]:
        """A label's codes joined with ';' (`layers`), and its levels' titles (`level_words`)."""
        codes = source.layers
        titles = self.level_titles
        words = (" \x1f ".join(titles[code] for code in codes if code in titles) or None) if codes else None
        found = self._labels[source.layer] = (";".join(codes), words)
        return found

    def row(self, source: Any, pos: int) -> list[Any]:
        """A source's row: `pos`, every field in `SOURCE_FIELDS` order (values, not names: SQLite binds
        them ~15% faster) in its kind's index form (lists joined as `fields.List.row` joins them, dates
        as ISO text), then the search-only columns."""
        values = source.__dict__
        row = [pos, *_STORED_VALUES(values), None, None]
        for i in _DERIVED_AT:
            row[i] = None
        row[_LAYERS_AT], words = self._labels.get(values["layer"]) or self._label(source)
        row[_URL_AT] = source.link
        dates = self._dates
        for i in _DATES_AT:
            day = row[i]
            row[i] = dates.get(day) or dates.setdefault(day, day.isoformat())
        keywords = row[_KEYWORDS_AT]
        for i in _LISTS_AT:
            row[i] = LIST_JOIN.join(row[i]) if row[i] else None
        for i, kind in _TABLES_AT:  # in the JSON contract's form: a place's repo filled from `code`
            row[i] = kind.row(kind.json(kind.fill(row[i], values))) if row[i] else None
        row[-2] = words
        row[-1] = camel_parts(row[_NAME_AT], row[_TITLE_AT], *(keywords or ()))
        return row

    def keys(self, source: Any, pos: int) -> list[tuple[str, str, int]]:
        """`source_keys` of a source, each with its position."""
        return [(key, kind, pos) for key, kind in source_keys(source, self.canonical_link)]


def source_keys(source: Any, canonical_link: Callable[[str], str]) -> list[tuple[str, str]]:
    """(key, kind) pairs by which `show` finds a source: texts normalized, identifiers canonical, each
    key once."""
    values = source.__dict__
    out = []
    seen = set()
    for kind in _KEYED_TEXTS:
        value = values[kind]
        if value and (key := normalize(value)) and key not in seen:
            seen.add(key)
            out.append((key, kind))
    if arxiv := values["arxiv"]:
        out.append(("arxiv:" + arxiv.split("v")[0].lower(), "arxiv"))
    if doi := values["doi"]:
        out.append(("doi:" + doi.lower(), "doi"))
    # An arXiv or DOI page derived from those ids is found by them; only explicit links need keys
    # (in the order the fields come: `url`, then `code`).
    url, code = values["url"], values["code"]
    if url or code:
        for link in dict.fromkeys(canonical_link(link) for link in (url, code) if link):
            out.append(("link:" + link, "link"))
    return out


_KEYED_TEXTS = ("id", "name", "source", "title")


def joined(items: Sequence[str]) -> str | None:
    """A list as one column of the index (None when empty)."""
    return LIST_JOIN.join(items) if items else None
