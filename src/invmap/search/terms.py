"""What a parsed query is: its words, its groups of alternatives, and the hits a ranking returns.

No I/O and no index: the shapes parsing fills (`parsing.py`, `expansion.py`) and the rankings read.
"""

from __future__ import annotations

import re
from typing import Any

# Words that say nothing about what a source is about: not counted, not scored (unless a query is
# nothing but them). Short on purpose: "not", "without", "per" and "first" carry meaning here.
STOP_WORDS = frozenset(
    "a an and are as at be been by can do does for from has have how i if in into is it its my of on or our so "
    "that the their then there these this those to too was we were what when where which while why will with "
    "you your".split()
)
_WORD = re.compile(r"[^\W_]+")


class _Shape:
    """What `@dataclass` gave these three shapes (== field by field, unhashable, a repr of the fields),
    written out: a search imports them, and the decorator's generated methods cost ~1.4 ms at import."""

    _fields: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self._values()))
        return f"{type(self).__qualname__}({shown})"


class Group(_Shape):
    """One word of the query (or a required quoted phrase) and everything that counts as it."""

    _fields = ("words", "weight", "alternatives", "column", "required", "read_as", "position")

    def __init__(
        self,
        words: list[str],  # as typed, lower case (a phrase: several)
        weight: int,  # how many of the query's words it stands for
        alternatives: list[list[str]] | None = None,  # phrases (lists of words) that count; none: []
        column: str | None = None,  # `field:word`
        required: bool = False,  # a quoted phrase must be held
        read_as: str | None = None,  # a typo's correction, for saying so
        position: int = 0,  # where its first word is in `Query.words`
    ) -> None:
        self.words = words
        self.weight = weight
        self.alternatives: list[list[str]] = [] if alternatives is None else alternatives
        self.column = column
        self.required = required
        self.read_as = read_as
        self.position = position


class Query(_Shape):
    _fields = ("groups", "excluded", "words", "exact", "spans", "unquoted")

    def __init__(
        self,
        groups: list[Group],
        excluded: list[str],
        words: list[str],  # every word of the query in order (for the phrase rule), stop words included
        exact: bool = False,
        # Runs of `words` that name a glossary entry: (start, end, the entry's names as lists of words).
        spans: list[tuple[int, int, list[list[str]]]] | None = None,
        unquoted: list[str] | None = None,  # quoted phrases read as their words (none held them)
    ) -> None:
        self.groups = groups
        self.excluded = excluded
        self.words = words
        self.exact = exact
        self.spans: list[tuple[int, int, list[list[str]]]] = [] if spans is None else spans
        self.unquoted: list[str] = [] if unquoted is None else unquoted

    @property
    def total(self) -> int:
        return sum(g.weight for g in self.groups)

    def corrections(self) -> list[tuple[str, str]]:
        """(as typed, as searched) for each word read as another, and each quoted phrase read as its
        words (`'"kv cachee"'` -> `kv cachee`)."""
        phrases = [(f'"{text.strip()}"', " ".join(words_of(text))) for text in self.unquoted]
        return phrases + [(" ".join(g.words), g.read_as) for g in self.groups if g.read_as]

    def read(self) -> list[str]:
        """The query's words with typos corrected."""
        words = list(self.words)
        for g in self.groups:
            if g.read_as and not g.required:
                words[g.position] = g.read_as
        return words

    def phrases(self, most: int = 12) -> list[list[str]]:
        """The query's words as a phrase, and as that phrase with each glossary name in it replaced by
        the entry's other names (`continuous batching` -> `iteration level scheduling`)."""
        out = [self.read()]
        for start, end, forms in sorted(self.spans, reverse=True):  # from the right: earlier spans keep place
            out = [p[:start] + f + p[end:] for p in out for f in forms][:most]
        return out or [self.read()]


class Hit(_Shape):
    _fields = ("rowid", "score", "matched", "phrase", "relevance")

    def __init__(
        self,
        rowid: int,
        score: float,
        matched: int,  # query words matched (weighted)
        phrase: bool,
        relevance: float,  # BM25, higher is better
    ) -> None:
        self.rowid = rowid
        self.score = score
        self.matched = matched
        self.phrase = phrase
        self.relevance = relevance


def words_of(text: str) -> list[str]:
    """Words as the index's tokenizer splits them (`multi-model` -> multi, model), lower case."""
    return [w.casefold() for w in _WORD.findall(text)]
