"""Selecting sources from the index: filters, sorting, name and identifier resolution, and the
search and related-source results built on `search.py`'s retrieval.

rapidfuzz is imported only to resolve a name that matches nothing exactly (and, in `search.py`, to
correct a typo), so `list` and `questions` never pay for it. Records are the JSON-contract dicts the
index returns.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from invmap.errors import NotFoundError, UsageError
from invmap.fields import KINDS, SORT_KEYS, SOURCE_FIELDS, TEXT_FIELDS
from invmap.filters import FILTERS, SEARCHABLE, VALUE_CLAUSES
from invmap.index import CODE_COLUMNS, DEFAULT_CODE_COLUMNS, DEFAULT_COLUMNS, SEARCH_COLUMNS, WEIGHTS
from invmap.vocabulary import LAYER_CODES, LAYER_CODES_TEXT, layer_codes

if TYPE_CHECKING:
    from invmap.index import Index, Records

_LOOKS_LIKE_CODE = re.compile(r"^[LP]\d+$", re.IGNORECASE)
_DIGIT_CODE = re.compile(r"^[1-6]$")
_YEAR_SPAN = re.compile(r"^(\d{4})?(\.\.)?(\d{4})?$")


def split_values(values: Sequence[str] | None) -> list[str]:
    """`--layer L3,L5 --layer L1` -> [L3, L5, L1]: a comma list means the same as repeating the option."""
    return [part.strip() for value in values or () for part in value.split(",") if part.strip()]


def did_you_mean(value: str, choices: Sequence[str]) -> str | None:
    from difflib import get_close_matches

    folded = {c.casefold(): c for c in choices}
    close = get_close_matches(value.casefold(), list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None


# --- filters -----------------------------------------------------------------------------------


class YearSpan(NamedTuple):
    """An inclusive span of years (either end open), or `undated` for n.d."""

    low: int | None
    high: int | None
    undated: bool = False

    def sql(self) -> tuple[str, list[Any]]:
        if self.undated:
            return "year IS NULL", []
        parts, params = [], []
        if self.low is not None:
            parts.append("year >= ?")
            params.append(self.low)
        if self.high is not None:
            parts.append("year <= ?")
            params.append(self.high)
        return "(" + " AND ".join(parts or ["year IS NOT NULL"]) + ")", params


def parse_year(value: str) -> YearSpan:
    """`2024`, `2023..2025`, `2025..`, `..2017` or `n.d.`."""
    text = value.strip()
    if text.casefold() in ("n.d.", "n.d", "nd"):
        return YearSpan(None, None, undated=True)
    m = _YEAR_SPAN.match(text)
    if not text or not m or (m.group(2) is None and m.group(3) is not None) or text == "..":
        raise UsageError(f"malformed year '{value}' (use 2024, 2023..2025, 2025.., ..2017 or n.d.)")
    low = int(m.group(1)) if m.group(1) else None
    high = int(m.group(3)) if m.group(3) else None
    if m.group(2) is None:
        return YearSpan(low, low)
    if low is not None and high is not None and low > high:
        raise UsageError(f"reversed year range '{value}': write {high}..{low}")
    return YearSpan(low, high)


def level_matches(text: str, title: str, scope: str | None) -> bool:
    """Whole words or phrases of a level's title or scope: `disaggregation`, `cache management`."""
    pattern = r"(?<!\w)" + r"\s+".join(map(re.escape, text.split())) + r"(?!\w)"
    return any(re.search(pattern, part or "", re.IGNORECASE) for part in (title, scope))


@dataclass
class Filters:
    """Values of one option are ORed; different options are ANDed. `where` is SQL over the index."""

    clauses: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)
    codes: set[str] | None = None  # the level codes a --layer option selected (None: no --layer)
    described: list[str] = field(default_factory=list)  # `--type survey --layer L1`, for messages

    @property
    def where(self) -> str:
        return " AND ".join(self.clauses)

    def and_(self, other: Filters) -> Filters:
        """The sources both select (`--type survey` within one level, for triage)."""
        return Filters([*self.clauses, *other.clauses], [*self.params, *other.params])

    def add(self, parts: list[tuple[str, list[Any]]]) -> None:
        if parts:
            self.clauses.append(_any([sql for sql, _ in parts]))
            for _, params in parts:
                self.params.extend(params)


def _any(clauses: list[str]) -> str:
    """`(a OR b OR ...)` nested as a balanced tree: a thousand values stay far below SQLite's limit on
    expression depth (a flat chain of ORs is as deep as it is long)."""
    if len(clauses) == 1:
        return f"({clauses[0]})"
    half = len(clauses) // 2
    return f"({_any(clauses[:half])} OR {_any(clauses[half:])})"


def _in(column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    if not values:
        return "0", []
    return f"{column} IN ({', '.join('?' * len(values))})", list(values)


def layer_clause(index: Index, value: str) -> tuple[str, list[Any], list[str]]:
    """A code (L5, l5, or the digit 5), words of a level's title or scope (`disaggregation`), or part
    of a label: (SQL, its parameters, the level codes selected)."""
    text = value.strip()
    if _DIGIT_CODE.match(text):  # a bare digit 1-6 always names its level, never label text holding it
        text = f"L{text}"
    if text.upper() in LAYER_CODES:
        return "pos IN (SELECT pos FROM codes WHERE code = ?)", [text.upper()], [text.upper()]
    if text and not _LOOKS_LIKE_CODE.match(text):
        codes = [code for code, (title, scope) in index.levels().items() if level_matches(text, title, scope)]
        labels = [label for label in index.distinct("layer") if text.casefold() in label.casefold()]
        if codes or labels:
            by_code = _in("code", codes)
            return (
                f"(pos IN (SELECT pos FROM codes WHERE {by_code[0]}) OR {_in('layer', labels)[0]})",
                by_code[1] + labels,
                codes + [c for lab in labels for c in layer_codes(lab)],
            )
    raise _unknown_layer(index, value, text)


def _unknown_layer(index: Index, value: str, text: str) -> UsageError:
    """The usage error for a layer value that names nothing, with the nearest code or words."""
    if _LOOKS_LIKE_CODE.match(text):
        close = did_you_mean(text, LAYER_CODES) or _nearest_code(text)
        hint = f"; did you mean '{close}'?" if close else ""
        return UsageError(f"unknown layer code '{value}'{hint} (valid codes: {LAYER_CODES_TEXT})")
    words = [t for t, _ in index.levels().values()] + [lab for lab in index.distinct("layer") if not layer_codes(lab)]
    close = did_you_mean(text, [*LAYER_CODES, *words])
    hint = f"; did you mean '{close}'?" if close else ""
    free = ", ".join(lab for lab in index.distinct("layer") if not layer_codes(lab))
    return UsageError(
        f"unknown layer '{value}'{hint} (use a code, {LAYER_CODES_TEXT}; words of a level's title or "
        f"scope, see 'invmap layers'; or part of a layer label" + (f" such as {free})" if free else ")")
    )


def _nearest_code(text: str) -> str | None:
    """`L9` -> L6, `L0` -> L1, `P3` -> P0: the nearest code of the same letter."""
    letter, number = text[0].upper(), int(text[1:])
    same = [c for c in LAYER_CODES if c[0] == letter]
    return min(same, key=lambda c: abs(int(c[1:]) - number)) if same else None


def type_values(index: Index, value: str) -> list[str]:
    """The catalog's spelling of a type, matched case-insensitively."""
    types = index.types()
    found = [t for t in types if t.casefold() == value.strip().casefold()]
    if found:
        return found
    close = did_you_mean(value, types)
    hint = f"; did you mean '{close}'?" if close else ""
    raise UsageError(f"unknown type '{value}'{hint} (valid types: {', '.join(types)})")


def _layer_parts(index: Index, values: list[str], filters: Filters) -> list[tuple[str, list[Any]]]:
    parts = [layer_clause(index, v) for v in values]
    filters.codes = {code for _, _, codes in parts for code in codes}
    return [(sql, params) for sql, params, _ in parts]


def _type_parts(index: Index, values: list[str], filters: Filters) -> list[tuple[str, list[Any]]]:
    return [_in("type", list(dict.fromkeys(t for v in values for t in type_values(index, v))))]


def _year_parts(index: Index, values: list[str], filters: Filters) -> list[tuple[str, list[Any]]]:
    return [parse_year(v).sql() for v in values]


# The clause builders a value filter's `clause` names (filters.FILTERS); a flag's clause is its SQL.
CLAUSES = {"layer": _layer_parts, "type": _type_parts, "year": _year_parts}
if VALUE_CLAUSES - CLAUSES.keys():  # a filter declared without its clause fails every command at once
    raise ImportError(f"filters.FILTERS names clauses query.CLAUSES lacks: {sorted(VALUE_CLAUSES - CLAUSES.keys())}")


def build_filters(index: Index, values: dict[str, Any]) -> Filters:
    """The filter bundle's values (`filters.FILTERS`, by dest) -> one Filters. Values of one option are
    ORed (repeated, or a comma list, each value once), different options ANDed."""
    filters = Filters()
    for o in FILTERS:
        given = values.get(o.dest)
        if not given:
            continue
        if o.kind == "flag":
            filters.add([(o.clause, [])])
            filters.described.append(o.flags[0])
            continue
        parts = list(dict.fromkeys(split_values(given)))
        if not parts:
            continue
        filters.add(CLAUSES[o.clause](index, parts, filters))
        filters.described += [f"{o.flags[0]} {v}" for v in parts]
    return filters


def records_matching(index: Index, filters: Filters, columns: Sequence[str] = SOURCE_FIELDS) -> list[dict[str, Any]]:
    """Every record the filters select, whole, in catalog order (for views that count or group them)."""
    return index.records(filters.where, filters.params, columns)


def lazy_selection(
    index: Index,
    filters: Filters,
    columns: Sequence[str] = SOURCE_FIELDS,
    sort: str | None = None,
    reverse: bool = False,
    limit: int | None = None,
) -> Records:
    """The sources `filters` select, sorted by one key and cut to `limit`, as records read from the
    index a batch at a time: only their positions and the sort key are held at once."""
    from invmap.index import Records

    check_sort_key(sort)
    if sort is None:
        positions = [pos for (pos,) in index.columns(filters.where, filters.params, ("pos",))]
        positions = (positions[::-1] if reverse else positions)[:limit]
    else:
        ordered = sort_records(index.records(filters.where, filters.params, ("pos", sort)), sort, reverse)
        positions = [r["pos"] for r in ordered[:limit]]
    return Records(index, positions, columns)


def check_sort_key(key: str | None) -> None:
    if key is not None and key not in SORT_KEYS:
        close = did_you_mean(key, SORT_KEYS)
        hint = f"; did you mean '{close}'?" if close else ""
        raise UsageError(f"unknown sort key '{key}'{hint} (valid keys: {', '.join(SORT_KEYS)})")


def sort_records(records: list[dict[str, Any]], key: str | None, reverse: bool = False) -> list[dict[str, Any]]:
    """Sort by one key, as its field's kind orders it; sources without a value go last either way."""
    if key is None:
        return list(reversed(records)) if reverse else list(records)
    check_sort_key(key)
    kind = KINDS[key]
    keyed = [(kind.sort_key(r[key]), r) for r in records]
    present = sorted(((k, r) for (absent, k), r in keyed if not absent), key=lambda item: item[0], reverse=reverse)
    return [r for _, r in present] + [r for (absent, _), r in keyed if absent]


# --- name and identifier resolution ------------------------------------------------------------

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


# --- search --------------------------------------------------------------------------------------


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
    out = []
    for record, hit in zip(records, hits):
        matched, why = _why(index, searched, hit.rowid, record)
        out.append({**record, "score": hit.score, "matched": matched, "corrected": corrected, "why": why})
    return out, query


def ranked(index: Index, filters: Filters, args: Sequence[str]) -> list[Any]:
    """The hits of `search` over every text field (rowid and score, best first), without the records
    or why each matched: what triage needs to order a level's sources, at any size."""
    from invmap import search as engine

    last_index, last_args, hits = _LAST_RANKING
    if last_index is not index or last_args != tuple(args):  # triage asks once per level: ranked once
        query = engine.build_query(index, args, TEXT_FIELDS)
        hits = _ranking(index, query, Filters(), list(DEFAULT_COLUMNS), None)
        _LAST_RANKING[:] = [index, tuple(args), hits]  # the index itself, never its id (ids are reused)
    if not filters.where:
        return list(hits)
    allowed = set(index.values("pos", filters.where, filters.params))
    return [h for h in hits if h.rowid in allowed]


_LAST_RANKING: list[Any] = [None, None, []]  # (index, args, every hit) of the last whole ranking made


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
                ranked.append(h if floor is None or h.score <= floor else dataclasses.replace(h, score=floor))
        ranked = ranked[:limit]
    return ranked


def _ranking(index: Index, query: Any, filters: Filters, columns: Sequence[str], limit: int | None) -> list[Any]:
    from invmap import search as engine

    return engine.weighted(index, query, columns, WEIGHTS, filters.where, filters.params, limit=limit)


WHY_WIDTH = 70  # characters of context kept around the matched words in `why`


def _why(
    index: Index, searched: Sequence[tuple[str, Sequence[str], str]], rowid: int, record: dict[str, Any]
) -> tuple[list[str], str]:
    """(the fields a result matched in, best first; the best one as `field: …text…` with the matched
    words between search.MARK). The index's own columns count as the fields they come from: a level's
    words as `layer`, a CamelCase word's parts as the field holding the word."""
    from invmap import fields as declared
    from invmap.search import MARK

    marked: dict[str, str] = {}
    for table, columns, expression in searched:  # (table, its columns searched, the query's expression there)
        if expression:
            marked.update(index.highlights(table, expression, rowid, columns, MARK))
    found: dict[str, tuple[int, float, str]] = {}
    for column, text in marked.items():
        if not text or MARK[0] not in text:
            continue
        words = {w.casefold() for w in re.findall(f"{MARK[0]}(.*?){MARK[1]}", text)}
        name = column
        if column == "level_words":
            name, text = "layer", f"{record['layer']} ({MARK[0]}{' '.join(sorted(words))}{MARK[1]} level)"
        elif column in declared.TABLE_FIELDS:  # its searched columns only, as the index holds them
            items = text.partition("\x1d")[0].split("\x1f")
            text = "; ".join(" ".join(part for part in item.split("\x1e") if part) for item in items)
        elif column == "parts":
            holder = next(
                (f for f in ("name", "title", "keywords") if any(w in _flat(record.get(f)).casefold() for w in words)),
                "name",
            )
            name, text = holder, _mark_words(_flat(record.get(holder)), words)
        weight = declared.BY_NAME[name].weight if name in declared.BY_NAME else 0.5
        count, best, _ = found.get(name, (0, 0.0, ""))
        if len(words) > count or (len(words) == count and weight > best):
            found[name] = (len(words), weight, text)
    # a place or a setting is why only when no other field matched (they rank after the others too)
    ranked = sorted(found.items(), key=lambda item: (item[0] in declared.TABLE_FIELDS, -item[1][0], -item[1][1]))
    if not ranked:
        return [], ""
    name, (_, _, text) = ranked[0]
    return [n for n, _ in ranked], f"{name}: {_window(text.replace(chr(0x1F), '; '))}"


def _flat(value: Any) -> str:
    return "; ".join(value) if isinstance(value, list) else (value or "")


def _mark_words(text: str, words: set[str]) -> str:
    """Mark the words of `text` containing any of `words` (a CamelCase word holding a matched part)."""
    from invmap.search import MARK

    return re.sub(
        r"[^\W_]+",
        lambda m: f"{MARK[0]}{m.group()}{MARK[1]}" if any(w in m.group().casefold() for w in words) else m.group(),
        text,
    )


def _window(text: str) -> str:
    """At most about WHY_WIDTH characters around the first matched word, cut at spaces with `…`."""
    from invmap.search import MARK

    if len(text.replace(MARK[0], "").replace(MARK[1], "")) <= WHY_WIDTH:
        return text
    at = text.index(MARK[0])
    start = max(0, at - WHY_WIDTH // 3)
    if start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < at else start
    end = start + WHY_WIDTH + (text[start:].count(MARK[0]) + text[start:].count(MARK[1]))
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > at else end
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")


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


REPORT_KEYS = ("id", "title", "url", "engine", "primary", "secondary", "sources", "resolution", "accessed")
"""A report's JSON contract, in order."""
REPORT_SHOWN = ("id", "engine", "primary", "title", "url")  # a table's and plain's columns


def reports(
    index: Index, levels: Sequence[str] = (), engines: Sequence[str] = (), sources: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The catalog's reports that match every option given (values of one option ORed): `levels` by
    primary or secondary code, `engines` by name (any case), `sources` by id. An unknown level code
    or source id is a usage error naming the valid ones."""
    from invmap.vocabulary import TRIAGE_CODES

    codes = [v.upper() for v in split_values(levels)]
    unknown = [c for c in codes if c not in TRIAGE_CODES]
    if unknown:
        raise UsageError(f"unknown level '{unknown[0]}' (report levels: {', '.join(TRIAGE_CODES)})")
    wanted_sources = split_values(sources)
    if wanted_sources:
        known = {r["id"] for r in index.records(columns=("id",))}
        if missing := [s for s in wanted_sources if s not in known]:
            hint = did_you_mean(missing[0], sorted(known))
            raise UsageError(f"no source '{missing[0]}'" + (f"; did you mean '{hint}'?" if hint else ""))
    folded = {e.casefold() for e in split_values(engines)}
    out = []
    for r in index.reports():
        if codes and r["primary"] not in codes and r["secondary"] not in codes:
            continue
        if folded and r["engine"].casefold() not in folded:
            continue
        if wanted_sources and not set(wanted_sources) & set(r["sources"]):
            continue
        out.append({k: r[k] for k in REPORT_KEYS})
    return out


def reports_by_source(index: Index) -> dict[str, list[str]]:
    """source id -> the ids of the reports that name it, in catalog order."""
    out: dict[str, list[str]] = {}
    for r in index.reports():
        for source in r["sources"]:
            out.setdefault(source, []).append(r["id"])
    return out


SHOWN_REPORTS = 3  # reports `show` names on a terminal or in plain text; JSON lists them all


def reports_in_brief(record: dict[str, Any]) -> dict[str, Any]:
    """A record whose `reports` names at most three, then how many more there are."""
    ids = record.get("reports") or []
    if len(ids) <= SHOWN_REPORTS:
        return record
    more = f"+{len(ids) - SHOWN_REPORTS} more"  # `invmap reports --source ID` lists them
    return {**record, "reports": [*ids[:SHOWN_REPORTS], more]}
