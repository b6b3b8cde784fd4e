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

    @property
    def total(self) -> int:
        return sum(g.weight for g in self.groups)

    def corrections(self) -> list[tuple[str, str]]:
        return [(" ".join(g.words), g.read_as) for g in self.groups if g.read_as]

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
            if colon and rest and name.casefold() in fields:
                parts.append((rest, name.casefold(), False))
            elif colon and rest and re.fullmatch(r"[a-z_]+", name.casefold()):
                raise UsageError(f"cannot search field '{name}' (searchable: {', '.join(fields)})")
            else:
                parts.append((token, None, False))
    return parts, excluded


def build_query(
    index: Index, args: Sequence[str], fields: Sequence[str], exact: bool = False, tables: Sequence[str] = ("fts",)
) -> Query:
    """Parse `args` and expand each word (corrections, glossary, compounds) against the catalog; a word
    any of `tables` holds is never corrected."""
    parts, excluded = parse(args, fields)
    groups: list[Group] = []
    sequence: list[str] = []
    for text, column, quoted in parts:
        words = words_of(text)
        sequence.extend(words)
        if quoted:
            content = [w for w in words if w not in STOP_WORDS] or words
            groups.append(Group(words, len(content), [words], required=True, position=len(sequence) - len(words)))
            continue
        for n, word in enumerate(words):
            groups.append(Group([word], 1, [[word]], column=column, position=len(sequence) - len(words) + n))
    meaningful = [g for g in groups if g.required or g.words[0] not in STOP_WORDS]
    if not meaningful and not groups and not excluded:
        raise UsageError("search needs some text to look for")
    groups = meaningful or groups  # a query of nothing but stop words searches for them
    query = Query(groups, excluded, sequence, exact=exact)
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
    """A word the catalog (and the glossary) does not hold, read as the nearest one it does."""
    known = index.known([s for stem in stems for s in stem], tables)
    for g, stem in zip(plain, stems):
        word = g.words[0]
        if not stem or all(s in known for s in stem) or word in glossary_words:
            continue
        if len(word) < SHORTEST_CORRECTED or word.isdigit():
            continue
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


def group_expression(g: Group, columns: Sequence[str]) -> str | None:
    if not g.alternatives:
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
) -> list[Hit]:
    """Every row matching at least one of the query's words (and every quoted phrase), best first;
    with `limit`, only that many of the best (scores are worked out for those alone)."""
    expressions = [group_expression(g, columns) for g in query.groups]
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
