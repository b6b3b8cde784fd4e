"""The coverage-first ranking (`rank`): more of the query's words matched, then the words held as a
phrase, then FTS5's own BM25. What triage's level items and `search`'s table of places and settings
are ordered by; also which rows a query holds at all (`rows_held`: quoted phrases, exclusions, `--exact`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invmap.search.expressions import expression, group_expression
from invmap.search.terms import STOP_WORDS, Hit, Query, words_of

if TYPE_CHECKING:
    from invmap.index import Index


def rank(
    index: Index,
    query: Query,
    table: str,
    columns: Sequence[str],
    weights: Sequence[float],
    where: str = "",
    params: Sequence[Any] = (),
    limit: int | None = None,
    table_columns: Sequence[str] | None = None,
) -> list[Hit]:
    """Every row matching at least one of the query's words (and every quoted phrase), best first;
    with `limit`, only that many of the best (scores are worked out for those alone). A `field:word`
    naming a column `table` does not hold (not among `table_columns`) matches nothing there."""
    expressions = [group_expression(g, columns, table_columns) for g in query.groups]
    matched = _coverage(index, query, expressions, table, columns, where, params)
    if not matched:
        return []
    content = [w for w in query.words if w not in STOP_WORDS]
    in_phrase: set[int] | None = None
    if len(content) > 1:
        in_phrase = set(index.match(table, expression(query.phrases(), columns), where, params))
    every = " OR ".join(e for e in expressions if e)
    relevance = index.bm25(table, every, weights, where, params)
    return _scored(query, matched, in_phrase, relevance, limit)


def _coverage(
    index: Index,
    query: Query,
    expressions: Sequence[str | None],
    table: str,
    columns: Sequence[str],
    where: str,
    params: Sequence[Any],
) -> dict[int, int]:
    """rowid -> how many of the query's words the row matches: rows holding every quoted phrase and
    no excluded word (with `--exact`, counted in the raw text)."""
    sets = [set(index.match(table, e, where, params)) if e else set() for e in expressions]
    return rows_held(index, query, sets, table, columns, where, params)


def rows_held(
    index: Index,
    query: Query,
    sets: Sequence[set[int]],
    table: str,
    columns: Sequence[str],
    where: str,
    params: Sequence[Any],
) -> dict[int, int]:
    """`_coverage` (and `bm25f.weighted`'s matches) from each group's matching rows."""
    matched: dict[int, int] = {}
    for g, rows in zip(query.groups, sets):
        if not g.required and not matched:  # the first: each row its weight, in the same order
            matched = dict.fromkeys(rows, g.weight)
        elif not g.required:
            for r in rows:
                matched[r] = matched.get(r, 0) + g.weight
    required = [(g, rows) for g, rows in zip(query.groups, sets) if g.required]
    if required:
        held = set.intersection(*(rows for _, rows in required))
        bonus = sum(g.weight for g, _ in required)
        matched = {r: matched.get(r, 0) + bonus for r in held}
    if query.excluded:
        out = set(index.match(table, expression([[w] for w in query.excluded], columns), where, params))
        matched = {r: m for r, m in matched.items() if r not in out}
    if query.exact and matched:
        matched = exact_filter(query, index.texts(table, list(matched), columns))
    return matched


def _scored(
    query: Query,
    matched: dict[int, int],
    in_phrase: set[int] | None,
    relevance: dict[int, float],
    limit: int | None = None,
) -> list[Hit]:
    """score = 100 * (m - 1 + s) / n: n words in the query, m of them matched, s in (0, 1] how well
    the source matches them against the best source matching as many (half of it for holding the words
    as a phrase, the rest by BM25 relative to that best). The score never rises down the ranking, so
    the first `limit` rows are the best scores too."""
    import heapq

    n = query.total or 1
    phrased = in_phrase if in_phrase is not None else set()
    best: dict[tuple[int, bool], float] = {}
    for r, m in matched.items():
        k = (m, r in phrased)
        v = relevance.get(r, 0.0)
        if v > best.get(k, 0.0):
            best[k] = v
    keys = ((-m, r not in phrased, -relevance.get(r, 0.0), r) for r, m in matched.items())
    ranked = heapq.nsmallest(limit, keys) if limit is not None and limit < len(matched) else sorted(keys)
    hits = []
    for negative_m, not_held, negative_relevance, r in ranked:
        m, held, value = -negative_m, not not_held, -negative_relevance
        top = best.get((m, held), 0.0) or 1.0
        share = max(value, 0.0) / top if top > 0 else 1.0
        strength = share if in_phrase is None else (0.5 + 0.5 * share if held else 0.5 * share)
        strength = min(max(strength, 0.001), 1.0)
        hits.append(Hit(r, round(100.0 * (min(m, n) - 1 + strength) / n, 1), m, held, value))
    return hits


def exact_filter(query: Query, texts: dict[int, str]) -> dict[int, int]:
    """`--exact`: the words counted in the raw text, as whole words ignoring case (no stemming)."""
    out = {}
    for rowid, text in texts.items():
        folded = " " + " ".join(words_of(text)) + " "
        m = sum(g.weight for g in query.groups if f" {' '.join(g.words)} " in folded)
        if m and all(f" {' '.join(g.words)} " in folded for g in query.groups if g.required):
            if not any(f" {w} " in folded for w in query.excluded):
                out[rowid] = m
    return out
