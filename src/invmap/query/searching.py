"""The results `search` and `related` return, built on `invmap.search`'s retrieval: records with
their score (and for `search`, the fields they matched in and why), best first; and the bare
ranking triage orders a level's sources by."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invmap.errors import UsageError
from invmap.fields import TEXT_FIELDS
from invmap.filters import SEARCHABLE
from invmap.index import CODE_COLUMNS, DEFAULT_CODE_COLUMNS, DEFAULT_COLUMNS, SEARCH_COLUMNS, WEIGHTS
from invmap.query.choices import did_you_mean, split_values
from invmap.query.filtering import Filters
from invmap.query.why import marked_columns, why

if TYPE_CHECKING:
    from invmap.index import Index


def search_fields(within: Sequence[str] | None) -> list[str] | None:
    """`--in` values -> the fields to search, or None for the default (every field with a weight)."""
    from invmap.fields import field_named

    values = [v if v == "all" else field_named(v) for v in split_values(within)]
    if not values:
        return None
    if "all" in values:
        return list(TEXT_FIELDS)
    unknown = [f for f in values if f not in TEXT_FIELDS]
    if unknown:
        close = did_you_mean(unknown[0], TEXT_FIELDS)
        hint = f"; did you mean '{close}'?" if close else ""
        raise UsageError(f"cannot search field '{unknown[0]}'{hint} (searchable: {', '.join(SEARCHABLE)})")
    return list(dict.fromkeys(values))


def search(
    index: Index,
    filters: Filters,
    args: Sequence[str],
    fields: Sequence[str] | None,
    limit: int | None = 10,
    min_score: float = 0.0,
    exact: bool = False,
) -> tuple[list[dict[str, Any]], Any]:
    """(records, each with `score`, `matched` and `why`, best first; the parsed query)."""
    from invmap import search as engine

    if fields is None:
        columns = [*DEFAULT_COLUMNS, *DEFAULT_CODE_COLUMNS]
    else:
        columns = [*fields, *(["level_words"] if "layer" in fields else [])]
    main = [c for c in columns if c not in CODE_COLUMNS]
    code = [c for c in columns if c in CODE_COLUMNS]
    query = engine.build_query(index, args, TEXT_FIELDS, exact=exact, tables=("fts", "code_fts"))
    ranked = _both(index, query, filters, main, code, limit)
    if not ranked and any(g.required for g in query.groups):  # no source holds the phrase: its words, then
        query = engine.build_query(index, args, TEXT_FIELDS, exact=exact, tables=("fts", "code_fts"), phrases=False)
        ranked = _both(index, query, filters, main, code, limit)
    hits = [h for h in ranked if h.score >= min_score]  # scores only fall down the ranking
    records = index.at([h.rowid for h in hits])
    searched = [
        (table, own, " OR ".join(e for g in query.groups if (e := engine.group_expression(g, own, every))))
        for table, own, every in (("fts", main, SEARCH_COLUMNS), ("code_fts", code, CODE_COLUMNS))
        if own
    ]
    corrected = dict(query.corrections())
    marked = marked_columns(index, searched, [h.rowid for h in hits])
    out = []
    for record, hit in zip(records, hits):
        matched, reason = why(marked[hit.rowid], record)
        out.append({**record, "score": hit.score, "matched": matched, "corrected": corrected, "why": reason})
    return out, query


def ranked(index: Index, filters: Filters, args: Sequence[str], among: set[int] | None = None) -> list[Any]:
    """The hits of `search` over every text field (rowid and score, best first), without the records
    or why each matched: what triage needs to order a level's sources, at any size. `among`: the
    positions `filters` selects, when the caller has them already (not read again)."""
    from invmap import search as engine

    last_index, last_args, ranking = _LAST_RANKING
    if last_index is not index or last_args != tuple(args):  # triage asks once per level: ranked once
        query = engine.build_query(index, args, TEXT_FIELDS)
        ranking = engine.Ranking(index, query, list(DEFAULT_COLUMNS), WEIGHTS)
        _LAST_RANKING[:] = [index, tuple(args), ranking]  # the index itself, never its id (ids are reused)
    if not filters.where:
        return ranking.hits()
    return ranking.hits(among if among is not None else set(index.values("pos", filters.where, filters.params)))


_LAST_RANKING: list[Any] = [None, None, None]  # (index, args, ranking) of the last whole ranking made


def _both(
    index: Index, query: Any, filters: Filters, main: Sequence[str], code: Sequence[str], limit: int | None
) -> list[Any]:
    """The sources' own fields ranked first, then the places and settings: after, never above."""
    from invmap import search as engine

    ranked = _ranking(index, query, filters, main, limit) if main else []
    if code and (limit is None or len(ranked) < limit):
        seen = {h.rowid for h in ranked}
        floor = ranked[-1].score if ranked else None
        weights = [WEIGHTS[c] if c in code else 0.0 for c in CODE_COLUMNS]
        for h in engine.rank(
            index, query, "code_fts", code, weights, filters.where, filters.params, limit, table_columns=CODE_COLUMNS
        ):
            if h.rowid not in seen:
                ranked.append(
                    h
                    if floor is None or h.score <= floor
                    else engine.Hit(h.rowid, floor, h.matched, h.phrase, h.relevance)
                )
        ranked = ranked[:limit]
    return ranked


def _ranking(index: Index, query: Any, filters: Filters, columns: Sequence[str], limit: int | None) -> list[Any]:
    from invmap import search as engine

    return engine.weighted(index, query, columns, WEIGHTS, filters.where, filters.params, limit=limit)


def related(index: Index, target: dict[str, Any], limit: int = 5) -> list[dict[str, Any]]:
    """Sources nearest to `target`: 75 points for how well their text answers a search made of the
    target's keywords and mechanism, glossary names included (BM25 relative to the best), 25 for the
    level codes they share (Jaccard overlap); never the source itself."""
    relevance = _about(index, target)
    mine = set(target["layers"])
    rows = [r for r in index.records(columns=("pos", "id", "layer", "layers")) if r["id"] != target["id"]]
    best = max((relevance.get(r["pos"], 0.0) for r in rows), default=0.0) or 1.0
    hits = []
    for r in rows:
        theirs = set(r["layers"])
        union = mine | theirs
        overlap = len(mine & theirs) / len(union) if union else (1.0 if r["layer"] == target["layer"] else 0.0)
        hits.append((round(25 * overlap + 75 * max(relevance.get(r["pos"], 0.0), 0.0) / best, 1), r["pos"]))
    hits.sort(key=lambda h: (-h[0], h[1]))
    top = hits[:limit]
    return [{**record, "score": score} for record, (score, _) in zip(index.at([p for _, p in top]), top)]


def _about(index: Index, target: dict[str, Any]) -> dict[int, float]:
    """rowid -> BM25 of a search made of the target's keywords (each a phrase) and mechanism words. A
    glossary name of several words brings the entry's other names (`iteration-level scheduling` ->
    `continuous batching`); a one-word one (`KV` -> `key value`) would only add noise here."""
    from invmap import search as engine

    keywords = [tuple(w) for k in target.get("keywords", ()) if len(w := engine.words_of(k)) > 1]
    if not (engine.words_of(target["mechanism"]) or keywords):
        return {}
    about = [target["mechanism"], *(k for k in target.get("keywords", ()) if len(engine.words_of(k)) == 1)]
    parsed = engine.build_query(index, [t.replace('"', " ") for t in about], list(DEFAULT_COLUMNS))
    named = [forms for start, end, forms in parsed.spans if end - start > 1]
    alternatives = [*keywords, *((w,) for g in parsed.groups for w in g.words), *(tuple(f) for fs in named for f in fs)]
    expression = engine.expression(list(dict.fromkeys(alternatives)), list(DEFAULT_COLUMNS))
    return index.bm25("fts", expression, [WEIGHTS.get(c, 1.0) for c in SEARCH_COLUMNS])
