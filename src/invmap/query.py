"""Selecting sources: filters, name resolution, fuzzy search, related sources, sorting.

The only module that imports rapidfuzz, and only inside the functions that score text, so
`list` and `questions` never pay for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from invmap.errors import NotFoundError, UsageError
from invmap.vocabulary import LAYER_CODES, LAYER_CODES_TEXT, layer_codes

if TYPE_CHECKING:
    from invmap.model import Catalog, Source

SEARCH_FIELDS: tuple[str, ...] = ("mechanism", "objective", "question", "name")
SORT_KEYS: tuple[str, ...] = ("year", "name", "id", "layer", "type")
_LOOKS_LIKE_CODE = re.compile(r"^[LP]\d+$", re.IGNORECASE)
_YEAR_SPAN = re.compile(r"^(\d{4})?(\.\.)?(\d{4})?$")


class YearSpan(NamedTuple):
    """An inclusive span of years (either end open), or `undated` for n.d."""

    low: int | None
    high: int | None
    undated: bool = False

    def matches(self, year: int | None) -> bool:
        if self.undated or year is None:
            return self.undated and year is None
        return (self.low is None or year >= self.low) and (self.high is None or year <= self.high)


class LayerFilter(NamedTuple):
    """A layer code (matches every label that covers it) or a fragment of a label."""

    code: str | None
    fragment: str | None

    def matches(self, label: str) -> bool:
        if self.code is not None:
            return self.code in layer_codes(label)
        return self.fragment is not None and self.fragment.casefold() in label.casefold()


@dataclass(frozen=True)
class Filters:
    """Values of one option are ORed; different options are ANDed."""

    layers: tuple[LayerFilter, ...] = ()
    types: tuple[str, ...] = ()
    years: tuple[YearSpan, ...] = ()

    def matches(self, source: Source) -> bool:
        return (
            (not self.layers or _any_layer_matches(self.layers, source.layer))
            and (not self.types or source.type.casefold() in self.types)
            and (not self.years or any(span.matches(source.year) for span in self.years))
        )


@lru_cache(maxsize=4096)
def _any_layer_matches(layers: tuple[LayerFilter, ...], label: str) -> bool:
    """Remembered per label: a catalog has few distinct labels and may have 100,000 sources."""
    return any(f.matches(label) for f in layers)


def free_text_labels(sources: Iterable[Source]) -> list[str]:
    """Layer labels that carry no code, in catalog order (`Transformer anatomy`, `Runtime lever`)."""
    return list(dict.fromkeys(s.layer for s in sources if not s.layers))


def parse_layer(value: str, sources: Sequence[Source]) -> LayerFilter:
    """`L5`/`l5` -> a code; `runtime lever` -> a label fragment; `L9` or a fragment matching nothing -> UsageError."""
    text = value.strip()
    if text.upper() in LAYER_CODES:
        return LayerFilter(text.upper(), None)
    if text and not _LOOKS_LIKE_CODE.match(text):
        if any(text.casefold() in s.layer.casefold() for s in sources):
            return LayerFilter(None, text)
    labels = ", ".join(free_text_labels(sources))
    raise UsageError(
        f"unknown layer '{value}': use a code ({LAYER_CODES_TEXT}) or part of a layer label (such as {labels})"
    )


def parse_type(value: str, sources: Sequence[Source]) -> str:
    """A type, case-insensitively; returns its casefolded form for matching."""
    types = sorted(set(s.type for s in sources), key=str.casefold)
    if value.strip().casefold() in {t.casefold() for t in types}:
        return value.strip().casefold()
    raise UsageError(f"unknown type '{value}' (valid types: {', '.join(types)})")


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


def build_filters(sources: Sequence[Source], layers: Sequence[str] = (), types: Sequence[str] = (),
                  years: Sequence[str] = ()) -> Filters:  # fmt: skip
    return Filters(
        tuple(parse_layer(v, sources) for v in layers),
        tuple(parse_type(v, sources) for v in types),
        tuple(parse_year(v) for v in years),
    )


def select(sources: Iterable[Source], filters: Filters) -> list[Source]:
    return [s for s in sources if filters.matches(s)]


def sort_sources(sources: Sequence[Source], key: str | None, reverse: bool = False) -> list[Source]:
    """Sort by one key; sources without a year go last whichever the direction."""
    if key is None:
        return list(reversed(sources)) if reverse else list(sources)
    if key == "year":
        dated = sorted((s for s in sources if s.year is not None), key=lambda s: s.year or 0, reverse=reverse)
        return dated + [s for s in sources if s.year is None]
    if key == "layer":
        order = {code: i for i, code in enumerate(LAYER_CODES)}

        def layer_key(s: Source) -> tuple[int, str]:
            return (order[s.layers[0]] if s.layers else len(order), s.layer.casefold())

        return sorted(sources, key=layer_key, reverse=reverse)
    return sorted(sources, key=lambda s: str(getattr(s, key)).casefold(), reverse=reverse)


# --- name resolution ---------------------------------------------------------------------------

MATCH_CUTOFF = 80.0  # a fuzzy match below this is only a suggestion
TIE_MARGIN = 5.0  # candidates this close to the best are ambiguous: never guess between them
SHOWN_CANDIDATES = 10  # an ambiguous name lists at most this many candidates


def normalize(text: str) -> str:
    """Case, spacing and punctuation do not matter: `Paged attention` == `pagedattention`."""
    return re.sub(r"[\W_]+", "", text.casefold())


def _exact_keys(source: Source) -> list[str]:
    keys = [source.id, source.name, source.source]
    if source.arxiv:
        keys += [source.arxiv, f"arXiv:{source.arxiv}"]
    if source.doi:
        keys += [source.doi, f"DOI:{source.doi}"]
    return [normalize(k) for k in keys]


def resolve(catalog: Catalog, query: str) -> Source:
    """One source by id, name, Source text, arXiv id or DOI: exact, then unique prefix, then fuzzy.

    Raises NotFoundError with suggestions when nothing matches, or with the candidates when several
    match about equally well.
    """
    sources = catalog.sources
    by_id = [s for s in sources if s.id == query]  # the common case, and cheap at any size
    if by_id:
        return by_id[0]
    wanted = normalize(query)
    if not wanted:
        raise NotFoundError(f"no source matches '{query}'")
    exact = [s for s in sources if wanted in _exact_keys(s)]
    if exact:
        return _one(exact, query)
    prefixed = [s for s in sources if normalize(s.name).startswith(wanted) or s.id.replace("-", "").startswith(wanted)]
    if prefixed:
        return _one(prefixed, query)

    # Typos and words inside a title: rapidfuzz's weighted ratio over names, ids and Source texts.
    from rapidfuzz import fuzz, process, utils

    best: dict[int, float] = {}
    for field in ("name", "id", "source"):
        choices = [getattr(s, field) for s in sources]
        for _, score, index in process.extract(query, choices, scorer=fuzz.WRatio, processor=utils.default_process,
                                               limit=10, score_cutoff=50):  # fmt: skip
            best[index] = max(best.get(index, 0.0), score)
    ranked = sorted(best.items(), key=lambda item: -item[1])
    if ranked and ranked[0][1] >= MATCH_CUTOFF:
        top = ranked[0][1]
        close = [sources[i] for i, score in ranked if score >= top - TIE_MARGIN]
        return _one(close, query)
    suggestions = [f"{sources[i].name} ({sources[i].id})" for i, _ in ranked[:3]]
    if not suggestions:
        raise NotFoundError(f"no source matches '{query}'", hint=f"try 'invmap search \"{query}\" --in name' or 'invmap list'")
    raise NotFoundError(f"no source matches '{query}'", candidates=suggestions, hint="did you mean")


def _one(matches: list[Source], query: str) -> Source:
    if len(matches) == 1:
        return matches[0]
    shown = [f"{s.name} ({s.id})" for s in matches[:SHOWN_CANDIDATES]]
    if len(matches) > SHOWN_CANDIDATES:
        shown.append(f"... and {len(matches) - SHOWN_CANDIDATES} more")
    raise NotFoundError(
        f"'{query}' is ambiguous: it matches {len(matches)} sources",
        candidates=shown,
        hint="be more specific, or use an id",
    )


# --- fuzzy search --------------------------------------------------------------------------------


class Hit(NamedTuple):
    source: Source
    score: float

    def to_dict(self) -> dict[str, Any]:
        """The source's JSON-contract record, plus its `score`."""
        return {**self.source.to_dict(), "score": self.score}


def search(sources: Sequence[Source], text: str, fields: Sequence[str] = ("mechanism",),
           limit: int | None = 10, min_score: float = 60.0) -> list[Hit]:  # fmt: skip
    """Rank sources by how well the words of `text` appear in the chosen fields, typos allowed.

    A field's score is the mean, over the query's words, of each word's best partial match in it
    (rapidfuzz `partial_ratio`), so word order does not matter and `virtaul memroy` still finds
    "virtual-memory-style". A source's score is its best field's; ties go to the closer whole-phrase
    match (`WRatio`), then to catalog order.
    """
    from rapidfuzz import fuzz, utils

    words = list(dict.fromkeys(utils.default_process(text).split()))
    if not words:
        raise UsageError("search needs some text to look for")
    scores = [0.0] * len(sources)
    for field in fields:
        texts = [getattr(s, field) for s in sources]
        scores = [max(a, b) for a, b in zip(scores, _on_both_cores(_word_scores, words, texts))]
    rounded = [round(score, 1) for score in scores]
    kept = sorted((i for i, score in enumerate(rounded) if score >= min_score), key=lambda i: (-rounded[i], i))
    if limit is not None and len(kept) > limit:
        # Only ties across the cut need the tie-break: keep everything scoring the last kept score.
        last = rounded[kept[limit - 1]]
        kept = [i for i in kept if rounded[i] >= last]
    phrase = utils.default_process(text)

    def tie_break(i: int) -> float:
        return max(fuzz.WRatio(phrase, utils.default_process(getattr(sources[i], f))) for f in fields)

    kept.sort(key=lambda i: (-rounded[i], -tie_break(i), i))
    return [Hit(sources[i], rounded[i]) for i in kept[:limit]]


def _word_scores(words: Sequence[str], texts: Sequence[str]) -> list[float]:
    """Per text, the mean over `words` of each word's rapidfuzz partial_ratio against it."""
    from rapidfuzz import fuzz, process, utils

    totals = [0.0] * len(texts)
    for word in words:
        for _, score, index in process.extract_iter(word, texts, scorer=fuzz.partial_ratio,
                                                    processor=utils.default_process):  # fmt: skip
            totals[index] += score
    return [t / len(words) for t in totals]


PARALLEL_FROM = 20_000  # below this, forking costs more than it saves


def _on_both_cores(score: Any, words: Sequence[str], texts: Sequence[str]) -> list[float]:
    """`score(words, texts)`, with a forked child scoring the second half where that pays."""
    from invmap import twocores

    if len(texts) < PARALLEL_FROM:
        return score(words, texts)
    half = len(texts) // 2
    halves = twocores.split(lambda: score(words, texts[:half]), lambda: score(words, texts[half:]))
    if halves is None:
        return score(words, texts)
    return halves[0] + halves[1]


def related(catalog: Catalog, target: Source, limit: int = 5) -> list[Hit]:
    """Sources nearest to `target`: shared layer codes (40%) and similar mechanism and question (60%)."""
    from rapidfuzz import fuzz, utils

    def text(s: Source) -> str:
        return utils.default_process(f"{s.mechanism} {s.question}")

    mine = text(target)
    codes = set(target.layers)
    hits = []
    for s in catalog.sources:
        if s.id == target.id:
            continue
        theirs = set(s.layers)
        union = codes | theirs
        overlap = len(codes & theirs) / len(union) if union else (1.0 if s.layer == target.layer else 0.0)
        similarity = fuzz.token_set_ratio(mine, text(s))
        hits.append(Hit(s, round(40 * overlap + 0.6 * similarity, 1)))
    hits.sort(key=lambda h: -h.score)
    return hits[:limit]
