"""Resolving a name to one source: by id, name, Source text, title, arXiv id, DOI or link, then a
unique prefix, then a fuzzy match; never a guess between ties.

rapidfuzz is imported only to resolve a name that matches nothing exactly, so `list` and
`questions` never pay for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invmap.errors import NotFoundError

if TYPE_CHECKING:
    from invmap.index import Index

MATCH_CUTOFF = 80.0  # a fuzzy match below this is only a suggestion
TIE_MARGIN = 5.0  # candidates this close to the best are ambiguous: never guess between them
SHOWN_CANDIDATES = 10  # an ambiguous name lists at most this many candidates


def label(record: dict[str, Any]) -> str:
    return f"{record['name']} ({record['id']})"


def resolve(index: Index, query: str) -> dict[str, Any]:
    """One source by id, name, Source text, title, arXiv id, DOI or link; then a unique prefix of a name
    or id; then a fuzzy match. Never guesses: ties are ambiguous (NotFoundError with the candidates).

    An identifier-like query (an arXiv id, a DOI, a URL) that matches nothing is simply not found.
    """
    from invmap.identifiers import keys_for_query
    from invmap.text import normalize

    def found(positions: list[int]) -> dict[str, Any]:
        records = index.at(positions)
        exact = [r for r in records if r["id"] == query]
        return _one(exact or records, query)

    identifier_keys = keys_for_query(query)
    if identifier_keys is not None:
        positions = index.lookup(identifier_keys)
        if not positions:
            raise NotFoundError(f"no source matches '{query}'", hint="no source has this arXiv id, DOI or link")
        return found(positions)
    wanted = normalize(query)
    if not wanted:
        raise NotFoundError(f"no source matches '{query}'")
    if positions := index.lookup([wanted], ("id", "name", "source", "title")):
        return found(positions)
    if positions := index.prefixed(wanted, ("id", "name")):
        return found(positions)
    if positions := index.prefixed(wanted, ("title", "source")):  # the start of a title, if only one has it
        if len(positions) == 1:
            return found(positions)

    # Typos and words inside a title: rapidfuzz's weighted ratio over names, ids and Source texts.
    from rapidfuzz import fuzz, process, utils

    best: dict[int, float] = {}
    for column in ("name", "id", "source"):
        choices = index.values(column)
        for _, score, i in process.extract(
            query, choices, scorer=fuzz.WRatio, processor=utils.default_process, limit=10, score_cutoff=50
        ):
            best[i] = max(best.get(i, 0.0), score)
    ranked = sorted(best.items(), key=lambda item: -item[1])
    if ranked and ranked[0][1] >= MATCH_CUTOFF:
        top = ranked[0][1]
        return found([i for i, score in ranked if score >= top - TIE_MARGIN])
    if not ranked:
        raise NotFoundError(
            f"no source matches '{query}', and no name is close",
            hint=f"try 'invmap search \"{query}\"' or 'invmap list'",
        )
    near = index.at([i for i, _ in ranked[:3]])
    raise NotFoundError(f"no source matches '{query}'", candidates=[label(r) for r in near], hint="did you mean")


def _one(matches: list[dict[str, Any]], query: str) -> dict[str, Any]:
    if len(matches) == 1:
        return matches[0]
    shown = [label(r) for r in matches[:SHOWN_CANDIDATES]]
    if len(matches) > SHOWN_CANDIDATES:
        shown.append(f"... and {len(matches) - SHOWN_CANDIDATES} more")
    raise NotFoundError(
        f"'{query}' is ambiguous: it matches {len(matches)} sources",
        candidates=shown,
        hint="be more specific, or use an id",
    )


def resolve_all(index: Index, queries: Sequence[str]) -> list[dict[str, Any]]:
    """Every name resolved first; any miss fails the whole command."""
    return [resolve(index, q) for q in queries]
