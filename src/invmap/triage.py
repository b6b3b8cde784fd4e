"""From a symptom to the level whose metric boundary holds it (the map's first step), its sources and
their open questions.

A symptom is text: quotes, `-`, `:` and parentheses are never query syntax here. Its words (typos
corrected only where a word is neither in the map nor ordinary English; glossary names expanded, so
`ttft` also counts as `time to first token`) are matched by FTS5's BM25 against the index's
`evidence` table: every level item (title, scope, question, each metric and each symptom) and every
shipped real report (title and our resolution line), each row speaking for its level. BM25 weighs a
rare word more than a common one and a short row's match more than a long row's. A level's score
adds two shares, each relative to the best level's: its three best items (1, 1/2, 1/4, each times
the share of the symptom's words it holds), and the votes of the 15 nearest reports (a report's
secondary level gets half its vote); then the whole is scaled by how strong the best evidence is,
so a weak match scores low. Words the reporter rules out ("does not appear to be X", "not an X
problem", "ruled out X", "X is fine") are dropped and shown as `excluded`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from invmap import cjk, covering, quoting
from invmap.marks import MARK, unmarked

SHOWN = 3  # the items (symptoms, metrics, ...) `matched` lists per level
WHY = ("symptoms", "metrics")
KIND_WEIGHT = {"title": 1.0, "scope": 1.0, "question": 0.6, "metrics": 1.0, "symptoms": 1.2}
ITEM_DECAY = (1.0, 0.5, 0.25)  # a level's best, second and third item
NEAREST = 15  # reports that vote
EVIDENCE_ROWS = 400  # evidence rows read per symptom (far more than any level has items)
STRENGTH = 12.0  # BM25 of the best evidence row at which a match counts as strong (set from dev.json)
FLOOR = 0.25  # a level scoring below this share of the best is left out unless --all (set from dev.json)
REPORTS_SHOWN = 3
PHRASE_VOTE = 2.0  # a report whose title holds the quoted message votes as twice the best evidence row,
# and its level gets a third part of the score for the quote alone
ITEMS_SHARE = 1.0  # the levels' own definitions weigh half again as much as the reports' votes
KEYS = ("code", "title", "score", "confidence", "matched", "excluded", "corrected", "question", "sources",
        "coverage", "next", "reports", "evidence")  # fmt: skip
"""The one JSON shape of a triage level (words, measurements and settings all fill it)."""

# Cues a reporter uses to rule something out; X is one to three words (up to a word such as
# "problem" where the cue has one).
_X = r"(?P<x>[a-z0-9][\w./+-]*(?: [a-z0-9][\w./+-]*){0,2})"
_SHORT_X = r"(?P<x>[a-z0-9][\w./+-]*(?: [a-z0-9][\w./+-]*)?)"
_TAIL = r" (?:problem|issue|bottleneck|cause|related|bound)\b"
_SEEMS = r"\b(?:does|do|did) ?n[o']?t (?:appear|seem|look) (?:to be |like )?(?:an? |the )?"
_EXCLUSIONS = tuple(
    re.compile(p)
    for p in (
        _SEEMS + _X + _TAIL,
        _SEEMS + _SHORT_X + r"\b",
        rf"\b(?:not|isn't|is not|wasn't|was not|it's not) (?:an? |the )?{_X}{_TAIL}",
        rf"\bnot (?:caused by|related to|due to) (?:an? |the )?{_SHORT_X}\b",
        rf"\bruled? out (?:an? |the )?{_SHORT_X}\b",
        rf"\b{_SHORT_X} (?:is|are|looks?|seems?) (?:fine|ok|okay|normal|healthy)\b",
    )
)
_STOPS_IN_X = frozenset({"and", "but", "so", "because", "while", "when", "or", "then", "since"})


# An error message naming a bad access ("an illegal memory access was encountered") is a crash, not a
# full memory: its `memory` is dropped unless the text also says out of memory (or OOM), so that the
# crash points to the component it names (a kernel or backend, the transfer engine, the scheduler).
_ACCESS = re.compile(
    r"\b((?:illegal|invalid) )memory (access)|\bmemory (access (?:fault|violation|error))", re.IGNORECASE
)
_OUT_OF_MEMORY = re.compile(r"\bout of memory\b|\bout-of-memory\b|\boom\b|outofmemory", re.IGNORECASE)


def crash_sense(text: str) -> str:
    """The symptom with the `memory` of a bad-access error message dropped (none when it says OOM)."""
    if _OUT_OF_MEMORY.search(text):
        return text
    return _ACCESS.sub(lambda m: "".join(g for g in m.groups() if g) if m.group(1) else m.group(3), text)


def exclusions(text: str) -> tuple[str, list[str]]:
    """The symptom with what the reporter rules out removed, and those phrases (`kv cache`)."""
    from invmap import search as engine

    lowered = " ".join(text.casefold().split())
    out: list[str] = []
    taken: list[tuple[int, int]] = []
    for pattern in _EXCLUSIONS:
        for m in pattern.finditer(lowered):
            if any(a <= m.start("x") < b for a, b in taken):
                continue  # a longer cue already took these words
            taken.append(m.span("x"))
            words = m.group("x").split()
            cut = next((i for i, w in enumerate(words) if w in _STOPS_IN_X), len(words))
            phrase = " ".join(words[:cut]).strip(" .,;")
            if phrase and phrase not in out and not all(w in engine.STOP_WORDS for w in phrase.split()):
                out.append(phrase)
    if not out:
        return text, []
    kept = lowered
    for phrase in out:
        kept = re.sub(rf"\b{re.escape(phrase)}\b", " ", kept)
    return kept, out


def as_text(words: Sequence[str]) -> list[str]:
    """Shell words -> plain words: no quote, exclusion, field or grouping syntax survives."""
    if not words:
        return []  # triage --metrics alone: the search engine is not imported
    from invmap import search as engine

    return engine.words_of(" ".join(words))


def triage(
    index: Any, words: Sequence[str], filters: Any, limit: int | None = 3, every: bool = False
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The levels that match the symptom, best first, and what the ranking saw (`notes`: the words
    excluded and corrected, how many levels were left out below the floor). With `every`, every
    level with its score; else at most `limit`, none below FLOOR of the best."""
    from invmap import search as engine

    kept_text, excluded = exclusions(crash_sense(cjk.in_english(" ".join(words))))
    plain = as_text([kept_text])
    notes: dict[str, Any] = {"excluded": excluded, "corrected": {}, "hidden": 0, "unmatched": None}
    if not [w for w in plain if w not in engine.STOP_WORDS]:
        return [], notes
    parsed = engine.build_query(index, plain, (), tables=("fts", "evidence"))
    notes["corrected"] = {typed: used for typed, used in parsed.corrections()}
    quoted = quoting.phrases(" ".join(words))  # none: the reports are not read
    reports = index.reports() if quoted else []
    notes["phrases"] = quoting.matching(reports, quoted)
    phrased = [(r, notes["phrases"][r["id"]] in quoted) for r in reports if r["id"] in notes["phrases"]]
    scored, strength = _ranked(index, parsed, phrased)
    if not scored:
        return [], notes
    if every:
        scored = _with_every_level(index, scored)
    shown = _shown(scored, limit, every, notes)
    details = {d["code"]: d for d in index.level_details()}
    notes["reading"] = covering.read(index, parsed)
    notes["vague"] = covering.vague(notes["reading"], parsed)
    levels = [
        _level(index, details[code], score, votes, parsed, plain, filters, strength, scored, notes)
        for code, score, votes in shown
        if code in details
    ]
    notes["unplaced"] = (
        not notes["vague"]
        and not _OUT_OF_MEMORY.search(kept_text)  # an OOM names what failed: memory
        and covering.unplaced(index, kept_text, notes["reading"], levels)
    )
    for level in levels if notes["unplaced"] else ():
        level["confidence"] = "low"
    return levels, notes


def _with_every_level(index: Any, scored: list[Any]) -> list[Any]:
    """`--all`: the ranked levels, then the levels no evidence points to, at 0."""
    from invmap.vocabulary import TRIAGE_CODES

    present = {code for code, _, _ in scored}
    codes = [d["code"] for d in index.level_details() if d["code"] in TRIAGE_CODES]
    return [*scored, *((code, 0.0, []) for code in codes if code not in present)]


def _shown(scored: list[Any], limit: int | None, every: bool, notes: dict[str, Any]) -> list[Any]:
    """The levels to show: with `every`, all of them; else those scoring at least FLOOR of the best,
    at most `limit`. `notes["hidden"]` counts the others."""
    best = scored[0][1]
    shown = scored if every else [s for s in scored if s[1] >= FLOOR * best]
    notes["hidden"] = len(scored) - len(shown) if every else max(len(scored) - len(shown), 0)
    if limit is not None and not every:
        notes["hidden"] += max(len(shown) - limit, 0)
        shown = shown[:limit]
    return shown


def _expression(parsed: Any) -> str:
    from invmap import search as engine

    return " OR ".join(e for g in parsed.groups if (e := engine.group_expression(g, ("text",))))


def _ranked(
    index: Any, parsed: Any, phrased: Sequence[tuple[dict[str, Any], bool]] = ()
) -> tuple[list[tuple[str, float, list[tuple[str, float]]]], float]:
    """[(level code, score 0-100, [(report id, its vote)])] best first, and the best row's BM25; the
    reports in `phrased` (their titles share a quoted message) vote as PHRASE_VOTE times the best row,
    and those holding the whole message (True) give their level a part of the score of its own."""
    expression = _expression(parsed)
    if not expression:
        return [], 0.0
    rows = index.evidence(expression, EVIDENCE_ROWS)
    if not rows:
        return [], 0.0
    items: dict[str, list[float]] = {}
    votes: dict[str, float] = {}
    voters: dict[str, list[tuple[str, float]]] = {}
    seen = 0
    covered = _coverage(index, parsed, {r[0] for r in rows if not r[2].startswith("report:")})
    for rowid, level, kind, secondary, relevance in rows:
        if kind.startswith("report:"):
            if seen >= NEAREST:
                continue
            seen += 1
            for code, share in ((level, 1.0), (secondary, 0.5)):
                if code:
                    votes[code] = votes.get(code, 0.0) + share * relevance
                    voters.setdefault(code, []).append((kind[7:], share * relevance))
        else:
            items.setdefault(level, []).append(KIND_WEIGHT.get(kind, 1.0) * relevance * covered.get(rowid, 0.0))
    quoted = _phrase_votes(phrased, PHRASE_VOTE * max(r[4] for r in rows), votes, voters)
    combined, parts = _combined(items, votes, quoted)
    strength = max(r[4] for r in rows)
    scale = min(strength / STRENGTH, 1.0)
    ranked = sorted(combined, key=lambda c: (-combined[c], c))
    return [(c, round(100.0 * scale * combined[c] / parts, 1), voters.get(c, [])) for c in ranked], strength


def _combined(
    items: dict[str, list[float]], votes: dict[str, float], quoted: dict[str, float]
) -> tuple[dict[str, float], float]:
    """Each level's parts of the score (its items', its votes', its quote's), each relative to the
    best level's, and how many parts there are."""
    item_score = {
        code: sum(w * v for w, v in zip(ITEM_DECAY, sorted(values, reverse=True))) for code, values in items.items()
    }
    top_items = max(item_score.values(), default=0.0) or 1.0
    top_votes = max(votes.values(), default=0.0) or 1.0
    has_votes = bool(votes)
    combined = {
        code: ITEMS_SHARE * item_score.get(code, 0.0) / top_items
        + (votes.get(code, 0.0) / top_votes if has_votes else 0.0)
        + quoted.get(code, 0.0)
        for code in set(item_score) | set(votes)
    }
    return combined, (ITEMS_SHARE + 1.0 if has_votes else ITEMS_SHARE) + (1.0 if quoted else 0.0)


def _phrase_votes(
    phrased: Sequence[tuple[dict[str, Any], bool]],
    vote: float,
    votes: dict[str, float],
    voters: dict[str, list[tuple[str, float]]],
) -> dict[str, float]:
    """Add each phrased report's vote for its level (half for its secondary), merged with the vote it
    already had as a word match; return each level's own share for the quote (1, or 0.5 as a secondary),
    a part of the score beside the items' and the votes'."""
    shares: dict[str, float] = {}
    for report, whole in phrased:
        for code, share in ((report["primary"], 1.0), (report["secondary"], 0.5)):
            if not code:
                continue
            if whole:  # a title that only a longer paste holds is a shorter, commoner message: a vote alone
                shares[code] = max(shares.get(code, 0.0), share)
            votes[code] = votes.get(code, 0.0) + share * vote
            had = dict(voters.get(code, []))
            had[report["id"]] = had.get(report["id"], 0.0) + share * vote
            voters[code] = list(had.items())
    return shares


def _coverage(index: Any, parsed: Any, rowids: set[int]) -> dict[int, float]:
    """rowid -> the share of the symptom's words each level item holds: an item that says most of
    what was typed is better evidence than one sharing a word or two."""
    from invmap import search as engine

    total = sum(g.weight for g in parsed.groups) or 1
    held: dict[int, int] = {}
    for g in parsed.groups:
        if (e := engine.group_expression(g, ("text",))) is None:
            continue
        for rowid in index.match("evidence", e):
            if rowid in rowids:
                held[rowid] = held.get(rowid, 0) + g.weight
    return {rowid: n / total for rowid, n in held.items()}


def confidence(score: float, runner_up: float | None) -> str:
    """`high`: a strong match well ahead of the next level; `low`: a weak match, or one the next level
    nearly ties; else `medium`."""
    margin = score - (runner_up or 0.0)
    if score >= 55 and margin >= 20:
        return "high"
    if score < 25 or margin < 5:
        return "low"
    return "medium"


def _level(
    index: Any,
    level: dict[str, Any],
    score: float,
    votes: list[tuple[str, float]],
    parsed: Any,
    words: Sequence[str],
    filters: Any,
    strength: float,
    scored: list[Any],
    notes: dict[str, Any],
) -> dict[str, Any]:
    """One level of the answer in the one shape (`KEYS`)."""

    place = next(n for n, s in enumerate(scored) if s[0] == level["code"])
    nearest = scored[place + 1][1] if place + 1 < len(scored) else None
    higher = scored[place - 1][1] if place > 0 else None
    runner = nearest if place == 0 else higher
    matched = _matched(index, level, parsed)
    best_reports = sorted(votes, key=lambda v: -v[1])[:REPORTS_SHOWN]
    by_id = {r["id"]: r for r in index.reports(f"id IN ({', '.join('?' * len(best_reports))})", [v[0] for v in best_reports])} if best_reports else {}  # fmt: skip
    sources, covered, gap = _sources(index, level["code"], words, filters, notes["reading"])
    return {
        "code": level["code"],
        "title": level["title"],
        "score": score,
        "confidence": "low" if notes.get("vague") else confidence(score, runner),
        "matched": [*_phrase_lines(best_reports, notes), *(unmarked(m) for m in matched)],
        "excluded": list(notes["excluded"]),
        "corrected": dict(notes["corrected"]),
        "question": level["question"],
        "sources": sources,
        "coverage": covered,
        "next": covered.pop("_next"),
        "reports": [
            {k: by_id[i][k] for k in ("id", "title", "url", "engine", "primary")} for i, _ in best_reports if i in by_id
        ],
        "evidence": [],
        "_marked": matched,
        "_note": _note(score, runner, scored[place + 1][0] if place == 0 and nearest is not None else None),
        "_filtered": filtered_out(index, level["code"], filters),
        "_gap": gap,
    }


def _phrase_lines(best_reports: Sequence[tuple[str, float]], notes: dict[str, Any]) -> list[str]:
    """A `matched` line for each shown report whose title holds the quoted message."""
    said = notes.get("phrases") or {}
    return [f'"{said[i]}" is in the title of report {i}' for i, _ in best_reports if i in said]


def _sources(
    index: Any, code: str, words: Sequence[str], filters: Any, reading: covering.Reading
) -> tuple[list[dict[str, Any]], dict[str, Any], str | None]:
    """A level's sources (narrowed by the filters), those a search of `words` finds among them first,
    those whose own text holds a specific word of the symptom marked `matched` (`covering`); the
    level's coverage, and the line saying what the map lacks (None when covered)."""
    from invmap import query

    chosen = filters.and_(query.build_filters(index, {"layer": [code]}))
    sources = index.records(chosen.where, chosen.params, ("pos", "id", "name", "question"))
    latin = [w for w in words if not cjk.has_cjk(w)]  # a source's text is English: bigrams find none of it
    hits = query.ranked(index, chosen, latin, {r["pos"] for r in sources}) if sources and latin else []
    first = {hit.rowid: n for n, hit in enumerate(hits)}  # a source's place in that search
    holding, held = covering.matching(index, reading, chosen.where, chosen.params) if sources else (set(), [])
    ordered = sorted(sources, key=lambda r: (r["pos"] not in holding, first.get(r["pos"], len(first)), r["pos"]))
    listed = [
        {"id": r["id"], "name": r["name"], "question": r["question"], "matched": r["pos"] in holding} for r in ordered
    ]
    covered = covering.coverage(reading, any(s["matched"] for s in listed), held)
    covered["_next"] = covering.next_steps(index, reading, code, [r["pos"] for r in ordered if r["pos"] in holding])
    return listed, covered, covering.statement(reading, code, listed, covered["status"])


def level_item(index: Any, code: str, words: Sequence[str], filters: Any) -> dict[str, Any] | None:
    """The level `code` in the one shape (`KEYS`), with its question and sources and nothing matched:
    for a level that other evidence than words points to (`triage --metrics`). None if the catalog
    has no such level."""
    level = next((d for d in index.level_details() if d["code"] == code), None)
    if level is None:
        return None
    plain = as_text(list(words))
    parsed = None
    if plain:  # the search engine imported only for words (triage --metrics alone needs none of it)
        from invmap import search as engine

        parsed = engine.build_query(index, plain, (), tables=("fts", "evidence"))
    reading = covering.read(index, parsed) if parsed is not None else covering.Reading()
    sources, covered, gap = _sources(index, code, words, filters, reading)
    return {
        "code": code,
        "title": level["title"],
        "score": 0.0,
        "confidence": "",
        "matched": [],
        "excluded": [],
        "corrected": {},
        "question": level["question"],
        "sources": sources,
        "coverage": covered,
        "next": covered.pop("_next"),
        "reports": [],
        "evidence": [],
        "_marked": [],
        "_note": None,
        "_filtered": filtered_out(index, code, filters),
        "_gap": gap if words else None,
    }


def filtered_out(index: Any, code: str, filters: Any) -> str | None:
    """What `list`'s filters (`--type`, `--year`, `--has-code`) took from a level's sources, said in
    the answer (`2 of its 6 sources (--year 2024 left out 4)`); None when they took nothing."""
    from invmap import query

    if not getattr(filters, "described", None):
        return None
    level = query.build_filters(index, {"layer": [code]})
    total = len(index.records(level.where, level.params, ("pos",)))
    chosen = filters.and_(level)
    kept = len(index.records(chosen.where, chosen.params, ("pos",)))
    if kept == total:
        return None
    return f"{kept} of its {total} sources ({' '.join(filters.described)} left out {total - kept})"


def _note(score: float, runner: float | None, next_code: str | None) -> str | None:
    """What a terminal says under a level whose confidence is low: why."""
    if score < 25:
        return "a weak match: few of the symptom's words point here"
    if next_code is not None and runner is not None and score - runner < 5:
        return f"nearly tied with {next_code}: read both questions"
    return None


def _matched(index: Any, level: dict[str, Any], parsed: Any) -> list[str]:
    """The level's items the symptom's words match, with marks: its symptoms and metrics first, else
    its scope, title or question; the most words matched first."""
    from invmap import search as engine
    from invmap.index import ITEM_STRIDE

    table = index.level_items()
    items = engine.rank(index, parsed, table, ("text",), (0.0, 1.0))
    mine = [i for i in items if i.rowid // ITEM_STRIDE == level["pos"]]
    texts = index.items([i.rowid for i in mine], _expression(parsed), MARK)
    ranked = [texts[i.rowid] for i in mine if i.rowid in texts]
    return ([t for k, t in ranked if k in WHY] or [t for k, t in ranked if k not in WHY])[:SHOWN]


def public(levels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The JSON contract: each level with exactly `KEYS`, in that order."""
    return [{k: level.get(k) for k in KEYS} for level in levels]
