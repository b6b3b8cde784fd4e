"""How much a query's word counts in BM25F: its rarity in the catalog (IDF) and how ordinary an
English word it is (`high` and `slow` count less than `prefill`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from invmap.search.terms import Group

COMMON_FROM = 3.5  # Zipf frequency (English) above which a word weighs less: `than` 6.1, `slow` 4.8
COMMONEST = 5.5  # ... down to COMMON_FLOOR at this frequency and above (`high` 5.8, `time` 6.3)
COMMON_FLOOR = 0.05
NUMBER_WEIGHT = 0.5  # a bare number (`1`, `16384`): a version or a size more often than a name


def plainness(g: Group) -> float:
    """How much a word counts for being ordinary English: 1 for a word English rarely uses (`kv`,
    `prefill`, `cache`) or does not know, less the more common it is (`high`, `slow`)."""
    from invmap import english  # the list is read only for a search

    if g.required or len(g.words) != 1:
        return 1.0
    word = g.words[0]
    if word.isdigit():
        return NUMBER_WEIGHT
    frequency = english.zipf(word)
    if frequency is None or frequency <= COMMON_FROM:
        return 1.0
    share = min((frequency - COMMON_FROM) / (COMMONEST - COMMON_FROM), 1.0)
    return 1.0 - share * (1.0 - COMMON_FLOOR)


def idf(total: int, holding: int) -> float:
    """BM25's inverse document frequency of a word `holding` of `total` rows hold."""
    import math

    return math.log(1.0 + (total - holding + 0.5) / (holding + 0.5))
