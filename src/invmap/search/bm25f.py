"""`search`'s ranking, BM25F: each of the query's words counts its rarity times how strongly a
source holds it, field by field, computed in Python over the tokens of the best candidate rows."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import invmap.search.tiers as tiering
from invmap.search.coverage import rows_held
from invmap.search.expressions import expression, group_expression
from invmap.search.rarity import idf, plainness
from invmap.search.terms import STOP_WORDS, Hit, Query, words_of

if TYPE_CHECKING:
    from invmap.index import Index

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
    allowed = set(index.values("pos", where, params)) if where else None
    if allowed is not None and not allowed:
        return []
    return Ranking(index, query, columns, weights, limit if allowed is None else None).hits(allowed, limit)


class Ranking:
    """One query's BM25F ranking of the whole catalog, made once and read for any filter (triage
    orders each level's sources by it). The rows weighed field by field are the RERANKED first in
    the cheap order (the rarity of the words a row covers, then holding the phrase, then FTS5's own
    BM25, then the rowid); the others follow in that order. The first two parts of that key split
    the candidates into tiers, worked out in Python from the rows each word matches; FTS5's BM25 is
    asked only for the rows of the tiers an answer reaches into (a row of a later tier cannot come
    before one of an earlier tier, whatever its BM25), never for every candidate of a common word."""

    def __init__(
        self, index: Index, query: Query, columns: Sequence[str], weights: dict[str, float], shown: int | None = None
    ) -> None:
        """`shown`: the most hits that will be asked for, unfiltered (`search --limit`); None for any."""
        from invmap.index import SEARCH_COLUMNS  # a `field:word` naming another table's column counts for nothing here

        self.index, self.query = index, query
        expressions = [group_expression(g, columns, SEARCH_COLUMNS) for g in query.groups]
        if shown is not None and 0 < shown <= RERANKED and self._counted(expressions, columns, weights, shown):
            return
        sets = [set(index.match("fts", e)) if e else set() for e in expressions]
        self.matched = rows_held(index, query, sets, "fts", columns, "", ())
        self.top: list[Hit] = []
        self.cheap: dict[int, float] = {}  # rowid -> FTS5's BM25 (higher is better), asked for as needed
        self.tiers: list[tuple[tuple[float, bool], list[int]]] = []  # after the weighed rows, best first
        self.phrased: set[int] = set()
        if not self.matched:
            return
        total = index.count()
        rarity = [idf(total, len(rows)) * g.weight * plainness(g) for g, rows in zip(query.groups, sets)]
        content = [w for w in query.words if w not in STOP_WORDS]
        forms = query.phrases() if len(content) > 1 else []
        self.phrased = set(index.match("fts", expression(forms, columns))) if forms else set()
        self.every = " OR ".join(e for e in expressions if e)
        self.order = [weights.get(c, 0.0) if c in columns else 0.0 for c in SEARCH_COLUMNS]
        weighed = list(self.matched)
        if len(weighed) > RERANKED:  # only the best by rarity covered, then FTS5's own BM25, are weighed
            weighed = self._weighed(list(zip(rarity, sets)))
        phrase_rarity = idf(total, len(self.phrased)) * max(len(content) - 1, 1) if forms else 0.0
        self.top = self._scored(forms, weighed, columns, weights, [*rarity, phrase_rarity])

    def _counted(
        self, expressions: list[str | None], columns: Sequence[str], weights: dict[str, float], shown: int
    ) -> bool:
        """The ranking worked out without a word's rows ever leaving SQLite, for a query `tiers.plain`
        accepts whose answer the weighed rows fill: the tiers (`tiers.tier_parts`) are counted in
        SQLite in the cheap order until the RERANKED rows are reached, and only the rows of those
        tiers come back (the last one ordered and cut by `index.bm25_best`). The same rows, rarities
        and order as the sets give. False (nothing kept) where it does not apply: the caller ranks
        from the sets."""
        from invmap.index import SEARCH_COLUMNS
        from invmap.index.fulltext import JSON_EACH

        index, query = self.index, self.query
        own = tiering.plain(query, expressions)
        every = " OR ".join(e for e in expressions if e)
        if own is None or not JSON_EACH or index.count_matching("fts", every) <= RERANKED:
            return False  # few candidates, or a query tiers cannot rank: from the sets, as ever
        total = index.count()
        sizes = [index.count_matching("fts", e) if e else 0 for e in expressions]
        rarity = [idf(total, n) * g.weight * plainness(g) for g, n in zip(query.groups, sizes)]
        content = [w for w in query.words if w not in STOP_WORDS]
        forms = query.phrases() if len(content) > 1 else []
        phrase = expression(forms, columns) if forms else None
        self.every = every
        self.order = [weights.get(c, 0.0) if c in columns else 0.0 for c in SEARCH_COLUMNS]
        self.cheap, self.tiers, self.phrased, self.matched = {}, [], set(), {}
        weighed = self._reached(tiering.tier_parts(expressions, own, rarity, phrase))
        if weighed is None:
            return False
        phrase_rarity = idf(total, index.count_matching("fts", phrase)) * max(len(content) - 1, 1) if phrase else 0.0
        self.top = self._scored(forms, weighed, columns, weights, [*rarity, phrase_rarity])
        return len(self.top) >= shown

    def _reached(self, parts: dict[tiering.Tier, list[tuple[str, int]]]) -> list[int] | None:
        """The RERANKED rows first in the cheap order, read tier by tier (best first) until they are
        reached, as `_weighed` finds them among the sets; each row read kept in `matched` (and
        `phrased`). None where `bm25_best` cannot cut the last tier."""
        earlier: list[tuple[tiering.Tier, int]] = []
        for tier, tier_parts in sorted(parts.items()):
            left = RERANKED - len(earlier)
            if left <= 0:
                break
            found = [(r, bits) for e, bits in tier_parts for r in self.index.match("fts", e)]
            for r, bits in found:
                self.matched[r] = tiering.weight(self.query.groups, bits)
            if not tier[1]:
                self.phrased.update(r for r, _ in found)
            if len(found) <= 2 * left:  # a tier before the last, or a last one keyed whole, as `_best` does
                earlier.extend((tier, r) for r, _ in found)
                continue
            best = self.index.bm25_best("fts", self.every, self.order, [r for r, _ in found], left)
            if best is None or len(best) < left:
                return None
            self.cheap.update(best)
            return [*(k[-1] for k in sorted(self._among(earlier))), *(r for r, _ in best)]
        return [k[-1] for k in heapq.nsmallest(RERANKED, self._among(earlier))]

    def _among(self, rows: Sequence[tuple[tiering.Tier, int]]) -> list[tuple[float, bool, float, int]]:
        """`_keys` of these rows, their BM25 asked for them alone (`matched` holds only rows read)."""
        missing = [r for _, r in rows if r not in self.cheap]
        if missing:
            self.cheap.update(self.index.bm25_among("fts", self.every, self.order, missing))
        return [(t[0], t[1], -self.cheap.get(r, 0.0), r) for t, r in rows]

    def hits(self, allowed: set[int] | None = None, limit: int | None = None) -> list[Hit]:
        """The weighed rows best first, each scored 0.1-100 against the best possible, then those of
        the rest that `allowed` holds (every one, or the first `limit`: no more can be shown) in the
        cheap order at the last weighed row's score; with `allowed`, only the rows it holds."""
        floor = self.top[-1].score if self.top else 100.0
        hits = self.top if allowed is None else [h for h in self.top if h.rowid in allowed]
        if limit is not None and len(hits) >= limit:  # the weighed rows fill the answer: none of the rest shows
            return hits[:limit]
        rest = [Hit(r, floor, self.matched[r], r in self.phrased, 0.0) for r in self._rest(allowed, limit)]
        return [*hits, *rest][:limit] if limit is not None else [*hits, *rest]

    def _weighed(self, rarities: Sequence[tuple[float, set[int]]]) -> list[int]:
        """The RERANKED rows first in the cheap order. Each row's covered rarity is added group by
        group, in the same order as ever (the same sum, to the last bit)."""
        by_cover = self._by_cover(rarities)  # first by the rarity covered, then split by the phrase
        phrased = self.phrased
        by_tier: dict[tuple[float, bool], list[int]] = {}
        for c, rows in by_cover.items():
            held = [r for r in rows if r in phrased] if phrased else []
            for tier, part in (
                ((-c, False), held),
                ((-c, True), [r for r in rows if r not in phrased] if held else rows),
            ):
                if part:
                    by_tier[tier] = part
        tiers = sorted(by_tier.items())
        reached, taken = 0, 0
        while taken < RERANKED:  # the tiers the weighed rows come from: every row of them is keyed
            taken += len(tiers[reached][1])
            reached += 1
        last_tier, last_rows = tiers[reached - 1]
        earlier = sorted(self._keys([(t, r) for t, rows in tiers[: reached - 1] for r in rows]))
        best = self._best(last_rows, RERANKED - len(earlier))  # the last tier's best, ordered in SQLite
        if best is not None:
            weighed = [*(k[-1] for k in earlier), *best]
        else:
            keys = self._keys([(t, r) for t, rows in tiers[:reached] for r in rows])
            weighed = [k[-1] for k in heapq.nsmallest(RERANKED, keys)]
        chosen = set(weighed)
        self.tiers = [(last_tier, [r for r in last_rows if r not in chosen]), *tiers[reached:]]
        return weighed

    def _by_cover(self, rarities: Sequence[tuple[float, set[int]]]) -> dict[float, list[int]]:
        """Each rarity a row covers -> the matched rows covering it (in no set order). A row's is its
        groups' rarities added in the groups' order from 0, to the last bit the same whichever way
        it is found: for a few groups, by set algebra on the rows that hold exactly those groups (no
        Python step per row), else row by row."""
        sets = [rows for _, rows in rarities]
        by_cover: dict[float, list[int]] = {}
        if len(sets) > tiering.PATTERNS:
            covered = dict.fromkeys(self.matched, 0)
            for i, rows in rarities:
                for r in rows:
                    if r in covered:
                        covered[r] += i
            for r, c in covered.items():
                by_cover.setdefault(c, []).append(r)
            return by_cover
        union = set().union(*sets)
        keep = None if len(union) == len(self.matched) else self.matched.keys()  # else every row matched
        for mask in range(1, 1 << len(sets)):
            inside = [k for k in range(len(sets)) if mask >> k & 1]
            rows = set.intersection(*(sets[k] for k in inside))
            for k in range(len(sets)):
                if not mask >> k & 1 and rows:
                    rows.difference_update(sets[k])
            if keep is not None and rows:
                rows.intersection_update(keep)
            if rows:  # added one by one from 0, as row by row: sum() of floats compensates from Python 3.12
                c = 0
                for k in inside:
                    c += rarities[k][0]
                by_cover.setdefault(c, []).extend(rows)
        return by_cover

    def _rest(self, allowed: set[int] | None, limit: int | None) -> list[int]:
        """The rows after the weighed ones that `allowed` holds, in the cheap order: every one, or
        the first `limit` (the tiers up to the one holding the limit-th such row are keyed)."""
        wanted: list[tuple[tuple[float, bool], int]] = []
        for tier, rows in self.tiers:
            if limit is not None and len(wanted) >= limit:
                break
            wanted.extend((tier, r) for r in rows if allowed is None or r in allowed)
        keys = self._keys(wanted)
        return [k[-1] for k in (sorted(keys) if limit is None else heapq.nsmallest(limit, keys))]

    def _best(self, rows: Sequence[int], most: int) -> list[int] | None:
        """The first `most` of `rows` (one tier) in the cheap order, FTS5's BM25 then the rowid, sorted
        and cut inside SQLite (the rest of a common word's tier never comes back); their BM25 kept.
        None where SQLite cannot (before 3.38) or the tier is small enough to key in Python."""
        if len(rows) <= 2 * most:
            return None
        found = self.index.bm25_best("fts", self.every, self.order, rows, most)
        if found is None or len(found) < most:  # a row FTS5 does not match: the keys, as ever
            return None
        self.cheap.update(found)
        return [r for r, _ in found]

    def _keys(self, rows: Sequence[tuple[tuple[float, bool], int]]) -> list[tuple[float, bool, float, int]]:
        """Each row's cheap-order key, FTS5's BM25 (with the fields' weights) asked for the rows not
        yet asked about: for them alone, or for every candidate when they are most of them."""
        missing = [r for _, r in rows if r not in self.cheap]
        if len(missing) * 2 > len(self.matched):
            self.cheap = self.index.bm25("fts", self.every, self.order)
        elif missing:
            self.cheap.update(self.index.bm25_among("fts", self.every, self.order, missing))
        cheap = self.cheap
        return [(tier[0], tier[1], -cheap.get(r, 0.0), r) for tier, r in rows]

    def _scored(
        self,
        forms: list[list[str]],
        weighed: list[int],
        columns: Sequence[str],
        weights: dict[str, float],
        rarity: list[float],
    ) -> list[Hit]:
        """The weighed rows by BM25F, best first, each scored 0.1-100 against the best possible."""
        index, query = self.index, self.query
        strength = _bm25f(index, query, forms, weighed, columns, weights)
        whole = _whole(index, query, weighed, columns)
        weighed = [r for r in weighed if r in strength]  # text that could not be read (a damaged index) is left out
        scored, best = _summed(weighed, strength, rarity, whole)
        if LINK:
            scored = _lent(index, scored, weighed)
        ceiling = max(sum(best), max(scored.values(), default=0.0)) or 1.0
        order = sorted(scored, key=lambda r: (-scored[r], r))
        return [
            Hit(
                r, round(100.0 * min(scored[r] / ceiling, 1.0), 1) or 0.1, self.matched[r], r in self.phrased, scored[r]
            )
            for r in order
        ]


def _summed(
    rowids: Sequence[int],
    strength: dict[int, tuple[list[float], float]],
    rarity: Sequence[float],
    whole: set[int],
) -> tuple[dict[int, float], list[float]]:
    """rowid -> its score (each term's rarity times its strength, summed; a whole-name match times
    1 + WHOLE), and each term's best value over the rows (their sum is the score ceiling)."""
    scored = {}
    best = [0.0] * len(rarity)
    for r in rowids:
        per_group, per_phrase = strength[r]
        terms = [i * s for i, s in zip(rarity, [*per_group, per_phrase])]
        best = [max(b, t) for b, t in zip(best, terms)]
        scored[r] = sum(terms) * (1.0 + WHOLE if r in whole else 1.0)
    return scored, best


def _lent(index: Index, scored: dict[int, float], rowids: Sequence[int]) -> dict[int, float]:
    """Each score raised LINK of the way to the best score among the sources it is linked to (a
    keyword naming another, or named by another's keyword); never lowered."""
    own = dict(scored)
    for r, others in _links(index, rowids).items():
        if r not in own:  # not scored: its text could not be read
            continue
        lent = max((own.get(o, 0.0) for o in others), default=0.0)
        scored[r] = max(own[r], own[r] + LINK * (lent - own[r])) if lent > own[r] else own[r]
    return scored


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
    wanted, phrase_forms = _stemmed(index, query, forms)
    every = _fields_of(index, order, cells, columns, [*(a for alts in wanted for a in alts), *phrase_forms])
    # At LEVEL_WEIGHT 0 a level adds 0.0 to every tf, which leaves it as it is: not worked out then.
    levels = _level_strengths(index, query, wanted) if LEVEL_WEIGHT and "level_words" in columns else {}
    out: dict[int, tuple[list[float], float]] = {}
    for r in order:
        fields = every[r]
        norms = _norms(columns, fields, averages, weights)
        codes = [code for code in (cells[r][width] or "").split(";") if code in levels]
        per_group = []
        for k, (g, alternatives) in enumerate(zip(query.groups, wanted)):
            tf = _frequency(alternatives, columns, fields, norms, g.column)
            if codes and g.column is None:
                tf += max(levels[code][k] for code in codes)
            per_group.append(tf / (K1 + tf))
        tf = _frequency(phrase_forms, columns, fields, norms)
        out[r] = (per_group, tf / (K1 + tf))
    return out


def _fields_of(
    index: Index,
    rowids: Sequence[int],
    cells: dict[int, list[str]],
    columns: Sequence[str],
    forms: Sequence[Sequence[str]],
) -> dict[int, list[Any]]:
    """rowid -> its fields, each something `_norms` and `_count` read: as FTS5 holds them (`_held`),
    or, for a row without a length record (a damaged index), its text stemmed again."""
    held: dict[int, list[Any]] = dict(_held(index, rowids, columns, forms))
    unread = [r for r in rowids if r not in held]
    width = len(columns)
    streams = index.stems([text for r in unread for text in cells[r][:width]])
    for n, r in enumerate(unread):
        held[r] = streams[n * width : (n + 1) * width]
    return held


class _Held:
    """One field of one row as the index holds it: its length in tokens and where each stem asked
    about stands (token offsets), read from FTS5's own records instead of stemming the text again."""

    __slots__ = ("length", "at")

    def __init__(self, length: int, at: dict[str, set[int]]) -> None:
        self.length, self.at = length, at

    def __len__(self) -> int:
        return self.length

    def count(self, form: Sequence[str]) -> int:
        """How often `form` (stems) occurs as a run, as `_count` counts it in the tokens."""
        if not form or len(form) > self.length or not (first := self.at.get(form[0])):
            return 0
        rest = [self.at.get(stem) or set() for stem in form[1:]]
        return sum(1 for o in first if all(o + 1 + i in after for i, after in enumerate(rest)))


def _held(
    index: Index, rowids: Sequence[int], columns: Sequence[str], forms: Sequence[Sequence[str]]
) -> dict[int, list[_Held]]:
    """rowid -> each of `columns` as `_Held`: lengths from FTS5's record of each row, the places of
    the stems of `forms` from its postings (read in SQLite for these rows only)."""
    from invmap.index import SEARCH_COLUMNS

    lengths = index.field_lengths(rowids)
    places = index.places(sorted({stem for form in forms for stem in form}), list(lengths))
    at: dict[tuple[int, str], dict[str, set[int]]] = {}
    for (doc, column, term), offsets in places.items():
        at.setdefault((doc, column), {})[term] = set(offsets)
    where = [SEARCH_COLUMNS.index(c) for c in columns]
    return {r: [_Held(sizes[n], at.get((r, c), {})) for n, c in zip(where, columns)] for r, sizes in lengths.items()}


def _norms(
    columns: Sequence[str], fields: Sequence[Sequence[str]], averages: dict[str, float], weights: dict[str, float]
) -> list[float]:
    """Each field's weight divided by its length against the field's average length (BM25's B): what
    one occurrence in it counts. 0 for an empty field."""
    out = []
    for c, tokens in zip(columns, fields):
        average = averages.get(c) or max(len(tokens), 1)
        out.append(weights.get(c, 0.0) / (1.0 - B + B * len(tokens) / average) if tokens else 0.0)
    return out


def _frequency(
    forms: Sequence[Sequence[str]],
    columns: Sequence[str],
    fields: Sequence[Sequence[str]],
    norms: Sequence[float],
    column: str | None = None,
) -> float:
    """How often a row's fields hold any of `forms` (stems), each field's occurrences counted at its
    norm; only `column`'s when one is named (`field:word`)."""
    tf = 0.0
    for c, tokens, norm in zip(columns, fields, norms):
        # a field the index holds none of the asked stems in adds norm * 0, which leaves tf as it is
        if norm and (column is None or column == c) and (type(tokens) is not _Held or tokens.at):
            tf += norm * sum(_count(tokens, form) for form in forms)
    return tf


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


def _stemmed(index: Index, query: Query, forms: list[list[str]]) -> tuple[list[list[list[str]]], list[list[str]]]:
    """Each group's alternatives and each phrase form as stems, all of them in one statement."""
    stems = iter(index.stems([" ".join(a) for a in [*(a for g in query.groups for a in g.alternatives), *forms]]))
    return [[next(stems) for _ in g.alternatives] for g in query.groups], [next(stems) for _ in forms]


def _count(tokens: Sequence[str] | _Held, form: Sequence[str]) -> int:
    """How often `form` (stems) occurs in `tokens` as a run."""
    if isinstance(tokens, _Held):
        return tokens.count(form)
    n = len(form)
    if not n or n > len(tokens):
        return 0
    if n == 1:
        return tokens.count(form[0])
    first = form[0]
    return sum(1 for i in range(len(tokens) - n + 1) if tokens[i] == first and list(tokens[i : i + n]) == list(form))
