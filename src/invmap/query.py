"""Selecting sources from the index: filters, name and identifier resolution, search, related sources.

The only module that imports rapidfuzz, and only inside the functions that score text, so `list`
and `questions` never pay for it. Records are the JSON-contract dicts the index returns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from invmap.errors import NotFoundError, UsageError
from invmap.fields import SEARCHED_FIELDS, SOURCE_FIELDS, TEXT_FIELDS
from invmap.vocabulary import LAYER_CODES, LAYER_CODES_TEXT, layer_codes

if TYPE_CHECKING:
    from invmap.index import Index, Records

SORT_KEYS: tuple[str, ...] = ("year", "name", "id", "layer", "type")
SEARCH_FIELDS: tuple[str, ...] = (*TEXT_FIELDS, "all")
_LOOKS_LIKE_CODE = re.compile(r"^[LP]\d+$", re.IGNORECASE)
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

    def add(self, parts: list[tuple[str, list[Any]]]) -> None:
        if parts:
            self.clauses.append("(" + " OR ".join(sql for sql, _ in parts) + ")")
            for _, params in parts:
                self.params.extend(params)


def _in(column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    if not values:
        return "0", []
    return f"{column} IN ({', '.join('?' * len(values))})", list(values)


def layer_clause(index: Index, value: str) -> tuple[str, list[Any], list[str]]:
    """A code (L5, l5), words of a level's title or scope (`disaggregation`), or part of a label:
    (SQL, its parameters, the level codes selected)."""
    text = value.strip()
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
    words = [t for t, _ in index.levels().values()] + [lab for lab in index.distinct("layer") if not layer_codes(lab)]
    close = did_you_mean(text, [*LAYER_CODES, *words])
    hint = f"; did you mean '{close}'?" if close else ""
    free = ", ".join(lab for lab in index.distinct("layer") if not layer_codes(lab))
    raise UsageError(
        f"unknown layer '{value}'{hint} (use a code, {LAYER_CODES_TEXT}; words of a level's title or "
        f"scope, see 'invmap layers'; or part of a layer label" + (f" such as {free})" if free else ")")
    )


def type_values(index: Index, value: str) -> list[str]:
    """The catalog's spelling of a type, matched case-insensitively."""
    types = index.types()
    found = [t for t in types if t.casefold() == value.strip().casefold()]
    if found:
        return found
    close = did_you_mean(value, types)
    hint = f"; did you mean '{close}'?" if close else ""
    raise UsageError(f"unknown type '{value}'{hint} (valid types: {', '.join(types)})")


def build_filters(
    index: Index, layers: Sequence[str] | None = (), types: Sequence[str] | None = (), years: Sequence[str] | None = ()
) -> Filters:
    filters = Filters()
    layer_values, type_list, year_values = split_values(layers), split_values(types), split_values(years)
    layer_parts = [layer_clause(index, v) for v in layer_values]
    filters.add([(sql, params) for sql, params, _ in layer_parts])
    if layer_parts:
        filters.codes = {code for _, _, codes in layer_parts for code in codes}
    filters.add([_in("type", [t for v in type_list for t in type_values(index, v)])] if type_list else [])
    filters.add([parse_year(v).sql() for v in year_values])
    for option, values in (("--layer", layer_values), ("--type", type_list), ("--year", year_values)):
        filters.described += [f"{option} {v}" for v in values]
    return filters


def select(index: Index, filters: Filters, columns: Sequence[str] = SOURCE_FIELDS) -> list[dict[str, Any]]:
    return index.records(filters.where, filters.params, columns)


def selection(
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
        raise UsageError(f"unknown sort key '{key}' (valid keys: {', '.join(SORT_KEYS)})")


def sort_records(records: list[dict[str, Any]], key: str | None, reverse: bool = False) -> list[dict[str, Any]]:
    """Sort by one key; sources without a year go last whichever the direction."""
    if key is None:
        return list(reversed(records)) if reverse else list(records)
    check_sort_key(key)
    if key == "year":
        dated = sorted((r for r in records if r["year"] is not None), key=lambda r: r["year"], reverse=reverse)
        return dated + [r for r in records if r["year"] is None]
    if key == "layer":
        order = {code: i for i, code in enumerate(LAYER_CODES)}

        def layer_key(r: dict[str, Any]) -> tuple[int, str]:
            codes = layer_codes(r["layer"])
            return (order[codes[0]] if codes else len(order), r["layer"].casefold())

        return sorted(records, key=layer_key, reverse=reverse)
    return sorted(records, key=lambda r: str(r[key]).casefold(), reverse=reverse)


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
    from invmap.index import normalize

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

# Tiers: a match on the name, id or Source text ranks above one in the title, above one in a sentence.
NAME_TIER = ("id", "name", "source")
TITLE_TIER = ("title",)
WORD_MATCH = 80.0  # in the name and title tiers every word of the query must match this well


def search_fields(within: Sequence[str] | None) -> list[str]:
    values = split_values(within)
    if not values:
        return list(SEARCHED_FIELDS)
    if "all" in values:
        return list(TEXT_FIELDS)
    unknown = [f for f in values if f not in TEXT_FIELDS]
    if unknown:
        close = did_you_mean(unknown[0], TEXT_FIELDS)
        hint = f"; did you mean '{close}'?" if close else ""
        raise UsageError(f"cannot search field '{unknown[0]}'{hint} (searchable: {', '.join(SEARCH_FIELDS)})")
    fields = list(dict.fromkeys(values))
    return ["id", *fields] if "name" in fields and "id" not in fields else fields


def search(
    index: Index, filters: Filters, text: str, fields: Sequence[str], limit: int | None = 10, min_score: float = 60.0
) -> list[dict[str, Any]]:
    """Records with a `score` (0-100), best first.

    A field's score is the mean, over the query's words, of each word's best partial match in it
    (rapidfuzz `partial_ratio`, case ignored), so word order, case and small typos do not matter. A
    source ranks in the best tier where it matches: the name/id/Source tier and the title tier need
    every word to match (>= 80), the sentence tier needs the mean to reach `min_score`. Within a tier,
    the better score first, then catalog order. Lower tiers are scored only for the places the higher
    ones left in the top `limit`.
    """
    from rapidfuzz import utils

    words = sorted(dict.fromkeys(utils.default_process(text).split()), key=len, reverse=True)
    if not words:
        raise UsageError("search needs some text to look for")
    fields = list(dict.fromkeys(fields))
    tiers = [
        (tier, [f for f in fields if (f in tier_fields if tier_fields else f not in (*NAME_TIER, *TITLE_TIER))])
        for tier, tier_fields in ((3, NAME_TIER), (2, TITLE_TIER), (1, None))
    ]
    # The name and title columns are read together; the sentence columns (the long texts) only when
    # the upper tiers leave room, and then each is held in lower case alone.
    upper = [f for tier, chosen in tiers if tier > 1 for f in chosen]
    texts_of = _lowered_columns(index, filters, upper)
    best: dict[int, tuple[int, float]] = {}  # row number -> (tier, score)
    for tier, chosen in tiers:
        room = None if limit is None else limit - len(best)
        if room is not None and room <= 0:
            break  # every lower-tier match would rank below the `limit` already found
        if tier == 1 and chosen:
            texts_of = _lowered_columns(index, filters, chosen)
        found: dict[int, float] = {}
        scored: list[Sequence[str]] = []  # this tier's columns scored so far
        for f in chosen:
            texts = texts_of.pop(f)
            # A source's text equal to one of its texts this tier already scored (a name that reads
            # as its id) would score the same: it is left out ("" scores 0).
            unscored = texts
            for earlier in scored:
                unscored = ["" if t == e else t for t, e in zip(unscored, earlier)]
            scored.append(texts)
            scores = _all_words(words, unscored) if tier > 1 else _best_means(words, unscored, min_score, room)
            for k, score in scores.items():
                if k not in best and score >= min_score and score > found.get(k, -1.0):
                    found[k] = score
        best.update({k: (tier, score) for k, score in found.items()})
    positions = texts_of["pos"]
    ranked = sorted(best, key=lambda k: (-best[k][0], -round(best[k][1], 1), k))[:limit]
    full = index.at([positions[k] for k in ranked])
    return [{**record, "score": round(best[k][1], 1)} for record, k in zip(full, ranked)]


def _lowered_columns(index: Index, filters: Filters, fields: Sequence[str]) -> dict[str, Any]:
    """`pos` and each of `fields` as a list in lower case, of the sources `filters` select."""
    if set(fields) <= set(SEARCHED_FIELDS):  # kept in lower case by the index
        rows = index.folded(filters.where, filters.params, fields)
        out: dict[str, Any] = {f: [row[c] for row in rows] for c, f in enumerate(fields, start=1)}
    else:
        rows = index.columns(filters.where, filters.params, ["pos", *fields])
        out = {f: [(row[c] or "").lower() for row in rows] for c, f in enumerate(fields, start=1)}
    out["pos"] = [row[0] for row in rows]
    return out


def _scores(word: str, texts: Sequence[str], cutoff: float) -> dict[int, float]:
    """{k: partial_ratio(word, texts[k])} for the texts scoring `cutoff` or more, as rapidfuzz's
    `extract_iter` gives them.

    A text at least as long as the word that does not contain it scores at most 100 (2m-2)/(2m-1)
    for a word of m characters (its best window misses one character): above that cutoff only the
    texts containing the word can score, and they score 100, so a substring test (C speed, ~30x
    faster than fuzzy scoring) finds them; texts shorter than the word are still scored by rapidfuzz.
    tests/test_properties.py checks this against rapidfuzz for any word, text and cutoff."""
    from rapidfuzz import fuzz, process

    m = len(word)
    if m and cutoff > 100.0 * (2 * m - 2) / (2 * m - 1) + 1e-6:
        found = {k: 100.0 for k, text in enumerate(texts) if word in text and len(text) >= m}
        short = [k for k, text in enumerate(texts) if len(text) < m]
        if short:
            subset = [texts[k] for k in short]
            for _, s, j in process.extract_iter(word, subset, scorer=fuzz.partial_ratio, score_cutoff=cutoff):
                found[short[j]] = s
        return found
    return {k: s for _, s, k in process.extract_iter(word, texts, scorer=fuzz.partial_ratio, score_cutoff=cutoff)}


def _all_words(words: Sequence[str], texts: Sequence[str]) -> dict[int, float]:
    """The name and title tiers: texts that every word matches (>= WORD_MATCH), with the mean score.
    Each later word is scored only against the texts all earlier words matched."""
    alive: dict[int, float] = {i: 0.0 for i in range(len(texts))}
    for word in words:
        positions = list(alive)
        subset = texts if len(positions) == len(texts) else [texts[i] for i in positions]
        alive = {positions[k]: alive[positions[k]] + s for k, s in _scores(word, subset, WORD_MATCH).items()}
        if not alive:
            return {}
    return {i: total / len(words) for i, total in alive.items()}


def _best_means(words: Sequence[str], texts: Sequence[str], min_score: float, room: int | None) -> dict[int, float]:
    """The sentence tier: texts whose mean word score reaches `min_score` — all of them (no `room`,
    or one word), or at least every text that can be among the best `room` (`_top_means`)."""
    if room is not None and len(words) > 1:
        return _top_means(words, texts, min_score, room)
    return _all_means(words, texts, min_score)


def _all_means(words: Sequence[str], texts: Sequence[str], min_score: float) -> dict[int, float]:
    """Every text whose mean word score reaches `min_score`, scored by rapidfuzz alone (the reference
    `_top_means` is tested against): a text whose total so far plus 100 for each word still to score
    cannot reach `n * min_score` is dropped before the next word."""
    from rapidfuzz import fuzz, process

    n = len(words)
    need = n * min_score
    cutoff = max(0.0, need - 100.0 * (n - 1))  # below this on one word, no text can reach min_score
    totals = {i: s for _, s, i in process.extract_iter(words[0], texts, scorer=fuzz.partial_ratio, score_cutoff=cutoff)}
    for done, word in enumerate(words[1:], start=2):
        left = 100.0 * (n - done)
        totals = {i: t for i, t in totals.items() if t + 100.0 + left >= need}
        if not totals:
            return {}
        positions = list(totals)
        least = max(0.0, need - max(totals.values()) - left)
        subset = [texts[i] for i in positions]
        scored = {k: s for _, s, k in process.extract_iter(word, subset, scorer=fuzz.partial_ratio, score_cutoff=least)}
        totals = {i: totals[i] + scored.get(k, 0.0) for k, i in enumerate(positions)}
    return {i: t / n for i, t in totals.items() if t >= need}


SEEDS = 200  # texts scored in full to find the bound a text must reach to be among the best


def _top_means(words: Sequence[str], texts: Sequence[str], min_score: float, room: int) -> dict[int, float]:
    """`_best_means` with `room`: at least every text whose total over the words can be among the best
    `room`, without scoring every word against every text.

    The texts best on the first word (of those matching it at `min_score` or better), scored in
    full, give `bound`, a total the best `room` all reach. A text reaching `bound` matches some word at
    `bound / n` or better, so each word is scored with that cutoff (rapidfuzz skips hopeless texts
    quickly) and a text no word finds is out. The missing scores of the rest are then filled in a
    word at a time, dropping each text whose total so far plus `bound / n` for each word still
    missing falls short."""
    import heapq

    from rapidfuzz import fuzz, process

    def scan(word: str, cutoff: float) -> dict[int, float]:
        return _scores(word, texts, cutoff)

    n = len(words)
    bound = n * min_score
    first = scan(words[0], min_score)  # every later cutoff is at least min_score: this pass serves them all
    seeds = heapq.nlargest(SEEDS, first, key=first.__getitem__) if len(first) > SEEDS else list(first)
    if len(seeds) >= room:
        full = sorted((first[i] + sum(fuzz.partial_ratio(w, texts[i]) for w in words[1:]) for i in seeds), reverse=True)
        bound = max(bound, full[room - 1] - 0.5 * n)  # a margin for scores that round to the same tenth
    cutoff = min(100.0, max(min_score, bound / n - 1e-9))  # bound >= n * min_score
    known: dict[int, dict[int, float]] = {}  # text -> {word: score}, for scores >= cutoff
    for w, word in enumerate(words):
        hits = {i: s for i, s in first.items() if s >= cutoff} if w == 0 else scan(word, cutoff)
        for i, score in hits.items():
            known.setdefault(i, {})[w] = score
    totals = {i: sum(scores.values()) for i, scores in known.items()}
    unknown = {i: n - len(scores) for i, scores in known.items()}
    for w, word in enumerate(words):
        alive = [i for i in totals if totals[i] + cutoff * unknown[i] >= bound]
        totals = {i: totals[i] for i in alive}
        missing = [i for i in alive if w not in known[i]]
        if missing:
            for _, score, k in process.extract_iter(word, [texts[i] for i in missing], scorer=fuzz.partial_ratio):
                totals[missing[k]] += score
                unknown[missing[k]] -= 1
    return {i: t / n for i, t in totals.items() if t >= bound}


def related(index: Index, target: dict[str, Any], limit: int = 5) -> list[dict[str, Any]]:
    """Sources nearest to `target`: shared layer codes (40%) and similar mechanism and question (60%)."""
    from rapidfuzz import fuzz, utils

    def text(r: dict[str, Any]) -> str:
        return utils.default_process(f"{r['mechanism']} {r['question']}")

    mine = text(target)
    codes = set(target["layers"])
    hits = []
    for r in index.records(columns=("pos", "id", "layer", "layers", "mechanism", "question")):
        if r["id"] == target["id"]:
            continue
        theirs = set(r["layers"])
        union = codes | theirs
        overlap = len(codes & theirs) / len(union) if union else (1.0 if r["layer"] == target["layer"] else 0.0)
        hits.append((round(40 * overlap + 0.6 * fuzz.token_set_ratio(mine, text(r)), 1), r["pos"]))
    hits.sort(key=lambda h: -h[0])
    top = hits[:limit]
    return [{**record, "score": score} for record, (score, _) in zip(index.at([p for _, p in top]), top)]
