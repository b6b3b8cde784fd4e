"""Ranked retrieval: what `search`, `related` and `triage` share.

A query is parsed into words (`"a phrase"` is one required phrase, `-word` excludes, `field:word`
looks in one field). Each word becomes a group of alternatives, any of which counts as the word: the
word itself (stemmed by the index's own Porter tokenizer, so `eviction` matches `evicted` and never
`deflection`), a correction when the word is nowhere in the catalog (`specualtive` -> `speculative`,
picked by rapidfuzz among the catalog's own stems), the other names the glossary gives it (`ttft` <->
`time to first token`), and the CamelCase word it forms with its neighbour (`flash attention` ->
`FlashAttention`). SQLite's FTS5 finds the rows of each group; the ranking rule is, in this order:
more of the query's words matched, then the words held as a phrase, then BM25 with the fields'
weights. No second search path exists; `--exact` only turns the expansions off and filters the raw text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from invmap.errors import UsageError
from invmap.fields import field_named

if TYPE_CHECKING:
    from invmap.index import Index

# Words that say nothing about what a source is about: not counted, not scored (unless a query is
# nothing but them). Short on purpose: "not", "without", "per" and "first" carry meaning here.
STOP_WORDS = frozenset(
    "a an and are as at be been by can do does for from has have how i if in into is it its my of on or our so "
    "that the their then there these this those to too was we were what when where which while why will with "
    "you your".split()
)
MARK = ("\x02", "\x03")  # around matched words in `highlights`; catalog text never holds control characters
CORRECTION_CUTOFF = 80.0  # rapidfuzz ratio a catalog stem needs to be taken for a typo
SHORTEST_CORRECTED = 4  # shorter words are too ambiguous to correct
_WORD = re.compile(r"[^\W_]+")


@dataclass
class Group:
    """One word of the query (or a required quoted phrase) and everything that counts as it."""

    words: list[str]  # as typed, lower case (a phrase: several)
    weight: int  # how many of the query's words it stands for
    alternatives: list[list[str]] = field(default_factory=list)  # phrases (lists of words) that count
    column: str | None = None  # `field:word`
    required: bool = False  # a quoted phrase must be held
    read_as: str | None = None  # a typo's correction, for saying so
    position: int = 0  # where its first word is in `Query.words`


@dataclass
class Query:
    groups: list[Group]
    excluded: list[str]
    words: list[str]  # every word of the query in order (for the phrase rule), stop words included
    exact: bool = False
    # Runs of `words` that name a glossary entry: (start, end, the entry's names as lists of words).
    spans: list[tuple[int, int, list[list[str]]]] = field(default_factory=list)
    unquoted: list[str] = field(default_factory=list)  # quoted phrases read as their words (none held them)

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


@dataclass
class Hit:
    rowid: int
    score: float
    matched: int  # query words matched (weighted)
    phrase: bool
    relevance: float  # BM25, higher is better


def words_of(text: str) -> list[str]:
    """Words as the index's tokenizer splits them (`multi-model` -> multi, model), lower case."""
    return [w.casefold() for w in _WORD.findall(text)]


def parse(args: Sequence[str], fields: Sequence[str]) -> tuple[list[tuple[str, str | None, bool]], list[str]]:
    """Shell words -> ([(text, field or None, quoted)], excluded words). `"..."` (with the quote marks
    in the words, however the shell split them) is one phrase; `-word` excludes; `field:word` names a
    field (any of `fields`)."""
    text = " ".join(args)
    if text.count('"') % 2:
        raise UsageError('a quoted phrase has no closing " (write \'"kv cache"\' in quotes for the shell)')
    parts: list[tuple[str, str | None, bool]] = []
    excluded: list[str] = []
    seen: set[tuple[str, str | None, bool]] = set()  # a word or phrase said again adds nothing: kept once
    for n, chunk in enumerate(text.split('"')):
        if n % 2:  # inside quotes
            if words_of(chunk) and (phrase := (" ".join(words_of(chunk)), None, True)) not in seen:
                seen.add(phrase)
                parts.append((chunk, None, True))
            continue
        for token in chunk.split():
            folded = (token.casefold(), None, False)
            if folded in seen:
                continue
            seen.add(folded)
            if token.startswith("-") and len(token) > 1:
                excluded.extend(w for w in words_of(token[1:]) if w not in excluded)
                continue
            name, colon, rest = token.partition(":")
            if rest.startswith("//"):  # a URL (`http://...`) is text to look for, not a field
                parts.append((token, None, False))
            elif colon and rest and field_named(name) in fields:
                parts.append((rest, field_named(name), False))
            elif colon and rest and re.fullmatch(r"[a-z_]+", name.casefold()):
                raise UsageError(f"cannot search field '{name}' (searchable: {', '.join(fields)})")
            else:
                parts.append((token, None, False))
    return parts, excluded


def build_query(
    index: Index,
    args: Sequence[str],
    fields: Sequence[str],
    exact: bool = False,
    tables: Sequence[str] = ("fts",),
    phrases: bool = True,
) -> Query:
    """Parse `args` and expand each word (corrections, glossary, compounds) against the catalog; a word
    any of `tables` holds is never corrected. `phrases=False` reads a quoted phrase as its words
    (`Query.unquoted` names it)."""
    parts, excluded = parse(args, fields)
    groups: list[Group] = []
    sequence: list[str] = []
    unquoted = [text for text, _, quoted in parts if quoted] if not phrases else []
    parts = [(text, column, quoted and phrases) for text, column, quoted in parts]
    for text, column, quoted in parts:
        words = words_of(text)
        sequence.extend(words)
        if quoted:
            content = [w for w in words if w not in STOP_WORDS] or words
            groups.append(Group(words, len(content), [words], required=True, position=len(sequence) - len(words)))
            continue
        for n, word in enumerate(words):
            if any(g.words == [word] and g.column == column and not g.required for g in groups):
                continue  # a word said twice counts once (`[Performance]: ... poor performance`)
            groups.append(Group([word], 1, [[word]], column=column, position=len(sequence) - len(words) + n))
    meaningful = [g for g in groups if g.required or g.words[0] not in STOP_WORDS]
    if not meaningful and not groups and not excluded:
        raise UsageError("search needs some text to look for")
    groups = meaningful or groups  # a query of nothing but stop words searches for them
    query = Query(groups, excluded, sequence, exact=exact, unquoted=unquoted)
    if not exact:
        _expand(index, query, tables)
    return query


def _expand(index: Index, query: Query, tables: Sequence[str]) -> None:
    """Each plain word's alternatives: itself, a correction, the glossary's other names, a compound."""
    plain = [g for g in query.groups if not g.required]
    names = _glossary_names(index.glossary())
    plain, stems = _without_hollow_words(index, query, plain)
    for g, stem in zip(plain, stems):
        g.alternatives = [[g.words[0]]] if stem else []
    _corrected(index, plain, stems, {w for forms in names for form in forms for w in form}, tables)
    _glossary(query, plain, names)
    _compounds(index, plain)


def _without_hollow_words(index: Index, query: Query, plain: list[Group]) -> tuple[list[Group], list[list[str]]]:
    """The plain groups and their stems, less the words the stemmer turns into stop words (`one` ->
    `on`), which would match that stop word everywhere (kept when nothing else is left)."""
    stems = index.stems([g.words[0] for g in plain])
    hollow = [g for g, stem in zip(plain, stems) if stem and all(s in STOP_WORDS for s in stem)]
    if not hollow or len(hollow) >= len(query.groups):
        return plain, stems
    query.groups = [g for g in query.groups if g not in hollow]
    kept = [(g, stem) for g, stem in zip(plain, stems) if g not in hollow]
    return [g for g, _ in kept], [stem for _, stem in kept]


def _corrected(
    index: Index, plain: list[Group], stems: list[list[str]], glossary_words: set[str], tables: Sequence[str]
) -> None:
    """A word the catalog (and the glossary) does not hold, nor English, read as the nearest one it does."""
    from invmap.text import is_english  # only when a word is unknown to the catalog

    known = index.known([s for stem in stems for s in stem], tables)
    for g, stem in zip(plain, stems):
        word = g.words[0]
        if not stem or all(s in known for s in stem) or word in glossary_words:
            continue
        if len(word) < SHORTEST_CORRECTED or word.isdigit() or is_english(word):
            continue  # a real word the catalog lacks is not a typo of one it holds (`climbs` is no `claim`)
        fixed = _correct(index, word, stem, glossary_words)
        if fixed is not None and fixed != word:
            g.read_as = fixed
            g.alternatives = [[fixed]]


def _glossary_names(glossary: list[dict[str, Any]]) -> list[list[list[str]]]:
    """Each glossary entry's names (term, expansion, aliases) as lists of words."""
    out = []
    for entry in glossary:
        forms = [words_of(entry["term"])]
        if entry["expansion"]:
            forms.append(words_of(entry["expansion"]))
        forms += [words_of(alias) for alias in entry["aliases"]]
        out.append([f for f in forms if f])
    return out


def _correct(index: Index, word: str, stem: list[str], glossary_words: set[str]) -> str | None:
    """The catalog word a typo most likely means (rapidfuzz's ratio on stems, at least 80), else None."""
    from rapidfuzz import fuzz, process  # only when a word is in neither the catalog nor the glossary

    target = "".join(stem)
    choices = {term: docs for term, docs in index.vocabulary(len(target) - 2, len(target) + 2)}
    best = process.extract(target, list(choices), scorer=fuzz.ratio, score_cutoff=CORRECTION_CUTOFF, limit=5)
    by_glossary = process.extractOne(word, sorted(glossary_words), scorer=fuzz.ratio, score_cutoff=CORRECTION_CUTOFF)
    ranked = sorted(best, key=lambda hit: (-hit[1], -choices[hit[0]]))
    if by_glossary and (not ranked or by_glossary[1] >= ranked[0][1]):
        return by_glossary[0]
    for term, _, _ in ranked:
        surface = index.surface(term)
        if surface and index.stems([surface])[0] == [term]:
            return surface
    return None


def _glossary(query: Query, plain: list[Group], names: list[list[list[str]]]) -> None:
    """Where a run of the query's words (stop words included: `time to first token`) is one name of a
    glossary entry, each word of the run also counts when a source holds any other name of the entry
    (`ttft` <-> `time to first token`). The longest names are taken first, and runs never overlap."""
    words = query.read()
    at = {g.position: g for g in plain}
    free = [i in at or words[i] in STOP_WORDS for i in range(len(words))]  # not inside a quoted phrase
    spans = []
    for forms in names:
        for form in forms:
            n = len(form)
            for i in range(len(words) - n + 1):
                if words[i : i + n] == form and all(free[i : i + n]) and any(k in at for k in range(i, i + n)):
                    spans.append((n, i, forms))
    for n, i, forms in sorted(spans, key=lambda s: (-s[0], s[1])):  # the longest names first
        if not all(free[i : i + n]):
            continue
        for k in range(i, i + n):
            free[k] = False
            if k in at:
                at[k].alternatives += [f for f in forms if f not in at[k].alternatives]
        query.spans.append((i, i + n, forms))


def _compounds(index: Index, plain: list[Group]) -> None:
    """Two neighbouring words that the catalog also holds as one (`flash attention` -> FlashAttention,
    `kv cache` -> KVCache): the joined word counts as each of them."""
    pairs = [(a, b) for a, b in zip(plain, plain[1:]) if a.column == b.column]
    if not pairs:
        return
    joined = [
        a.alternatives[0][0] + b.alternatives[0][0] if a.alternatives and b.alternatives else "" for a, b in pairs
    ]
    stems = index.stems([j or "x" for j in joined])
    known = index.known([s[0] for s, j in zip(stems, joined) if j and len(s) == 1])
    for (a, b), j, s in zip(pairs, joined, stems):
        if j and len(s) == 1 and s[0] in known:
            for g in (a, b):
                if [j] not in g.alternatives:
                    g.alternatives.append([j])


# --- FTS5 expressions ----------------------------------------------------------------------------


def phrase(words: Sequence[str]) -> str:
    return '"' + " ".join(words) + '"'  # words are letters and digits only: nothing to escape


def expression(alternatives: Sequence[Sequence[str]], columns: Sequence[str] | None) -> str:
    body = " OR ".join(phrase(a) for a in alternatives)
    if columns is None:
        return f"({body})"
    return "{" + " ".join(columns) + "} : (" + body + ")"


def group_expression(g: Group, columns: Sequence[str], table_columns: Sequence[str] | None = None) -> str | None:
    """The FTS5 expression of one word's alternatives in `columns` (its own `field:` column if it names
    one); None when that column is not one of `table_columns` (the table searched holds no such column)."""
    if not g.alternatives:
        return None
    if g.column and table_columns is not None and g.column not in table_columns:
        return None
    return expression(g.alternatives, [g.column] if g.column else columns)


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
    return _held(index, query, sets, table, columns, where, params)


def _held(
    index: Index,
    query: Query,
    sets: Sequence[set[int]],
    table: str,
    columns: Sequence[str],
    where: str,
    params: Sequence[Any],
) -> dict[int, int]:
    """`_coverage` from each group's matching rows."""
    matched: dict[int, int] = {}
    for g, rows in zip(query.groups, sets):
        if not g.required:
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


# --- weighted ranking (search) --------------------------------------------------------------------

K1 = 1.2  # BM25's term-frequency saturation
B = 0.75  # BM25's length normalisation, applied to each field against that field's own average length
RERANKED = 300  # rows weighed field by field; a larger catalog's rest keep the cheap order behind them


def weighted(
    index: Index,
    query: Query,
    columns: Sequence[str],
    weights: dict[str, float],
    where: str = "",
    params: Sequence[Any] = (),
    limit: int | None = None,
) -> list[Hit]:
    """Every source matching at least one of the query's words (and every quoted phrase, and no
    excluded word), ranked by BM25F: each word counts its rarity (IDF) times how strongly a source
    holds it, where a hit in a field counts that field's weight divided by the field's length against
    its average (a long cell weighs no more than a short one), saturating with repeats; the query's
    words as a phrase count as one more term. Best first; `limit` cuts the list.

    A filter (`where`) keeps the rows it selects from the whole catalog's ranking: the same order and
    scores as unfiltered, with the catalog's own word statistics (one ranking, filtered afterwards,
    never a match per selected row)."""
    hits = _weighted(index, query, columns, weights)
    if where and hits:
        allowed = set(index.values("pos", where, params))
        hits = [h for h in hits if h.rowid in allowed]
    return hits[:limit] if limit is not None else hits


def _weighted(index: Index, query: Query, columns: Sequence[str], weights: dict[str, float]) -> list[Hit]:
    """`weighted` over the whole catalog, every hit."""
    from invmap.index import SEARCH_COLUMNS  # a `field:word` naming another table's column counts for nothing here

    where, params = "", ()
    expressions = [group_expression(g, columns, SEARCH_COLUMNS) for g in query.groups]
    sets = [set(index.match("fts", e, where, params)) if e else set() for e in expressions]
    matched = _held(index, query, sets, "fts", columns, where, params)
    if not matched:
        return []
    total = index.count(where, params)
    idf = [_idf(total, len(rows)) * g.weight * _plainness(g) for g, rows in zip(query.groups, sets)]
    content = [w for w in query.words if w not in STOP_WORDS]
    phrased: set[int] = set()
    forms: list[list[str]] = []
    if len(content) > 1:
        forms = query.phrases()
        phrased = set(index.match("fts", expression(forms, columns), where, params))
    candidates = list(matched)
    if len(candidates) > RERANKED:  # only the best by rarity covered, then FTS5's own BM25, are weighed
        every = " OR ".join(e for e in expressions if e)
        order = [weights.get(c, 0.0) if c in columns else 0.0 for c in SEARCH_COLUMNS]
        cheap = index.bm25("fts", every, order, where, params)
        covered = {r: sum(i for i, rows in zip(idf, sets) if r in rows) for r in candidates}
        candidates.sort(key=lambda r: (-covered[r], r not in phrased, -cheap.get(r, 0.0), r))
    weighed, rest = candidates[:RERANKED], candidates[RERANKED:]
    strength = _bm25f(index, query, forms, weighed, columns, weights)
    phrase_idf = _idf(total, len(phrased)) * max(len(content) - 1, 1) if forms else 0.0
    whole = _whole(index, query, weighed, columns)
    scored = {}
    best = [0.0] * (len(query.groups) + 1)
    weighed = [r for r in weighed if r in strength]  # text that could not be read (a damaged index) is left out
    for r in weighed:
        per_group, per_phrase = strength[r]
        terms = [i * s for i, s in zip(idf, per_group)] + [phrase_idf * per_phrase]
        best = [max(b, t) for b, t in zip(best, terms)]
        scored[r] = sum(terms) * (1.0 + WHOLE if r in whole else 1.0)
    if LINK:
        own = dict(scored)
        for r, others in _links(index, weighed).items():
            if r not in own:  # not scored: its text could not be read
                continue
            lent = max((own.get(o, 0.0) for o in others), default=0.0)
            scored[r] = max(own[r], own[r] + LINK * (lent - own[r])) if lent > own[r] else own[r]
    ceiling = max(sum(best), max(scored.values(), default=0.0)) or 1.0
    order = sorted(scored, key=lambda r: (-scored[r], r))  # a row whose text could not be read is left out
    hits = [
        Hit(r, round(100.0 * min(scored[r] / ceiling, 1.0), 1) or 0.1, matched[r], r in phrased, scored[r])
        for r in order
    ]
    floor = hits[-1].score if hits else 100.0
    for r in rest:  # beyond the weighed rows (a large catalog): in the cheap order, never above them
        hits.append(Hit(r, floor, matched[r], r in phrased, 0.0))
    return hits


WHOLE = 0.3  # a name, id, title or keyword that is the query itself: its score times 1 + this
LINK = 0.5  # a source a keyword links (vLLM's `PagedAttention`) closes this share of the gap to it


def _whole(index: Index, query: Query, rowids: Sequence[int], columns: Sequence[str]) -> set[int]:
    """The rows whose name, id, title or first keyword is the query's words (or a glossary form of
    them) and nothing more, as words (a plural's `s` aside), never stems: `KV cache` is
    PagedAttention's first keyword, and `kvcached` (a project's name) is no `KVCache`."""
    from invmap.index import LIST_JOIN

    own = [c for c in ("name", "id", "title", "keywords") if c in columns]
    if not own or not rowids:
        return set()
    wanted = set()
    for form in query.phrases():
        content = [w for w in form if w not in STOP_WORDS]
        wanted |= {_plain_words(form), _plain_words(content), _plain_words(["".join(content)])}  # PagedAttention
    cells = index.cells("fts", rowids, own)
    return {  # of the keywords, the first: the one the source is known for above all
        r
        for r, texts in cells.items()
        if any(_plain_words(words_of(text.split(LIST_JOIN)[0])) in wanted for text in texts if text)
    }


def _plain_words(words: Sequence[str]) -> tuple[str, ...]:
    return tuple(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words)


def _links(index: Index, rowids: Sequence[int]) -> dict[int, set[int]]:
    """rowid -> the rows among `rowids` whose name one of its keywords is, or which name it in theirs."""
    from invmap.index import LIST_JOIN
    from invmap.text import normalize

    cells = index.cells("fts", rowids, ("name", "keywords"))
    by_name = {normalize(c[0]): r for r, c in cells.items() if c[0]}
    out: dict[int, set[int]] = {}
    for r, (_, keywords) in cells.items():
        for k in keywords.split(LIST_JOIN) if keywords else ():
            other = by_name.get(normalize(k))
            if other is not None and other != r:
                out.setdefault(r, set()).add(other)
                out.setdefault(other, set()).add(r)
    return out


COMMON_FROM = 3.5  # Zipf frequency (English) above which a word weighs less: `than` 6.1, `slow` 4.8
COMMONEST = 5.5  # ... down to COMMON_FLOOR at this frequency and above (`high` 5.8, `time` 6.3)
COMMON_FLOOR = 0.05
NUMBER_WEIGHT = 0.5  # a bare number (`1`, `16384`): a version or a size more often than a name


def _plainness(g: Group) -> float:
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


def _idf(total: int, holding: int) -> float:
    import math

    return math.log(1.0 + (total - holding + 0.5) / (holding + 0.5))


LEVEL_WEIGHT = 0.0  # a word of a source's level (its scope, question, metrics, symptoms) counts as a sentence does


def _bm25f(
    index: Index,
    query: Query,
    forms: list[list[str]],
    rowids: Sequence[int],
    columns: Sequence[str],
    weights: dict[str, float],
) -> dict[int, tuple[list[float], float]]:
    """rowid -> (each group's saturated strength, the phrase's), by BM25F over the fields' tokens. A
    source's levels count as one more field (the words of the level its label covers that holds the
    word best): what the map says a level is about speaks for every source of that level."""
    averages = index.lengths("fts") or {}
    cells = index.cells("fts", rowids, [*columns, "layers"])
    order = [r for r in rowids if r in cells]
    width = len(columns)
    streams = index.stems([text for r in order for text in cells[r][:width]])
    wanted = [[_stemmed(index, a) for a in g.alternatives] for g in query.groups]
    phrase_forms = [_stemmed(index, f) for f in forms]
    levels = _level_strengths(index, query, wanted) if "level_words" in columns else {}
    out: dict[int, tuple[list[float], float]] = {}
    for n, r in enumerate(order):
        fields = streams[n * width : (n + 1) * width]
        norms = []
        for c, tokens in zip(columns, fields):
            average = averages.get(c) or max(len(tokens), 1)
            norms.append(weights.get(c, 0.0) / (1.0 - B + B * len(tokens) / average) if tokens else 0.0)
        codes = [code for code in (cells[r][width] or "").split(";") if code in levels]
        per_group = []
        for k, (g, alternatives) in enumerate(zip(query.groups, wanted)):
            tf = 0.0
            for c, tokens, norm in zip(columns, fields, norms):
                if norm and (g.column is None or g.column == c):
                    tf += norm * sum(_count(tokens, a) for a in alternatives)
            if codes and g.column is None:
                tf += max(levels[code][k] for code in codes)
            per_group.append(tf / (K1 + tf))
        tf = sum(norm * sum(_count(tokens, f) for f in phrase_forms) for tokens, norm in zip(fields, norms))
        out[r] = (per_group, tf / (K1 + tf))
    return out


def _level_strengths(index: Index, query: Query, wanted: list[list[list[str]]]) -> dict[str, list[float]]:
    """level code -> each group's weighted, length-normalised frequency in that level's own words."""
    details = index.level_details()
    texts = [
        " ".join([d["title"], d["scope"] or "", d["question"] or "", *d["metrics"], *d["symptoms"]]) for d in details
    ]
    streams = index.stems(texts) if texts else []
    average = (sum(map(len, streams)) / len(streams)) if streams else 1.0
    out = {}
    for d, tokens in zip(details, streams):
        norm = LEVEL_WEIGHT / (1.0 - B + B * len(tokens) / (average or 1.0)) if tokens else 0.0
        out[d["code"]] = [norm * sum(_count(tokens, a) for a in alternatives) for alternatives in wanted]
    return out


def _stemmed(index: Index, words: Sequence[str]) -> list[str]:
    stems = index.stems([" ".join(words)])
    return stems[0] if stems else []


def _count(tokens: Sequence[str], form: Sequence[str]) -> int:
    """How often `form` (stems) occurs in `tokens` as a run."""
    n = len(form)
    if not n or n > len(tokens):
        return 0
    if n == 1:
        return tokens.count(form[0])
    first = form[0]
    return sum(1 for i in range(len(tokens) - n + 1) if tokens[i] == first and list(tokens[i : i + n]) == list(form))


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
