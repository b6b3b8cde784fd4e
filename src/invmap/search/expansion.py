"""Expanding a parsed query against the catalog: each plain word's alternatives are the word itself
(unless the stemmer makes it a stop word), a correction when the catalog holds no such word, the
other names the glossary gives it, and the CamelCase word it forms with its neighbour."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invmap.search.terms import STOP_WORDS, Group, Query, words_of

if TYPE_CHECKING:
    from invmap.index import Index

CORRECTION_CUTOFF = 80.0  # rapidfuzz ratio a catalog stem needs to be taken for a typo
SHORTEST_CORRECTED = 4  # shorter words are too ambiguous to correct


def expand(index: Index, query: Query, tables: Sequence[str]) -> None:
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
