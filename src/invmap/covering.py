"""Whether a level's sources speak of a symptom, and what the map lacks for it.

A source counts as matching a symptom only when its own text (name, title, keywords, mechanism,
objective, question, the parts of its CamelCase names, its places and settings; never the words of
its level, which every source of the level shares) holds one of the symptom's *specific* words. A
word is specific when all three hold, each measured, none listed by hand:
- it has two characters or more, and English uses it rarely enough (`rarity.plainness` above PLAIN: `across`, `model`, `running` are
  ordinary English; `prefill`, `kv`, `parallel` are not);
- at most SOURCE_SHARE of the catalog's sources hold it in their own text (`kv` alone does not
  tell one cache paper from another);
- at most LEVEL_SHARE of the levels use it in their definitions (`gpu` is in nearly all of them).

Topics no source in the map is about are declared per level (`[layers.X] not_covered`: a topic and
the cues that name it). A symptom holding a cue (all of its words, stemmed) has that gap: the cue's
words no longer make any source match, and the topic heads the level's `uncovered` terms. Then each
level item's coverage is `covered` (a source matches and every specific word the catalog knows is
held by one of the level's matching sources), `partial` (a source matches, something is not held)
or `none` (no source of the level matches).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PLAIN = 0.5  # `rarity.plainness` at or below this: an ordinary English word (Zipf ~4.55 and up), or a bare number
SOURCE_SHARE = 0.5  # a word more than half the sources hold says nothing about any one of them
LEVEL_SHARE = 0.5  # a word more than half the levels' definitions use is the map's common vocabulary
OWN_COLUMNS = ("name", "title", "keywords", "mechanism", "objective", "question", "parts")
CODE_OWN = ("places", "settings")
STATUSES = ("covered", "partial", "none")
ACRONYM = 4  # a one-word cue this short is an acronym, matched only whole
SETTINGS_SHOWN = 3  # engine settings a level's `next` lists
# What recreates a level's mechanism on invmap itself: (kind, command, what it shows); the commands are
# those `invmap simulate --help` and `invmap estimate --help` give as examples.
COMMANDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "L2": (("simulate", "invmap simulate batching", "static, continuous and chunked batching side by side"),),
    "L3": (
        ("estimate", "invmap estimate kv --model llama-3.1-8b --tokens 8192 --concurrency 16", "KV bytes per token, per sequence and in total"),
        ("simulate", "invmap simulate kv --allocation paged", "paged and contiguous KV block allocation side by side"),
    ),
}  # fmt: skip
VAGUE = "say what you measured: TTFT, TPOT or throughput, at what load; or pass --metrics or --bench"
# A failure (issue 46 §2: a hang, crash, failed assertion, bad access, NaN or garbage output) points to
# the component it names; when the first level's own symptoms name no failure, no component was named
# that the map knows, and the answer says so at low confidence rather than guess from other words.
FAILURE = re.compile(
    r"\b(?:hangs?|hung|hanging|deadlock(?:s|ed)?|crash(?:es|ed|ing)?|segfaults?|segmentation fault|core dumped"
    r"|assert(?:ion)?s?|assertionerror|illegal memory access|nan|garbage|gibberish)\b",
    re.IGNORECASE,
)
PRODUCTS = frozenset(
    {"output", "outputs", "response", "responses", "result", "results", "token", "tokens"}
)  # what failed to come, not where
UNPLACED = (
    "say which part fails (a kernel or attention backend: L1; the scheduler: L2; a KV transfer engine: L5), "
    "or paste the error's last lines"
)


@dataclass
class Word:
    """One specific word of the symptom: as typed, its FTS5 expressions over a source's own columns
    (`own`, in `fts`; `code`, in `code_fts`), and its stems (with those of its alternatives)."""

    text: str
    own: str
    code: str
    stems: set[str]
    known: bool  # some source's text in the map holds it (else it is the reporter's own word: a model, a GPU)


@dataclass
class Reading:
    """What coverage reads from one symptom, once for every level."""

    words: list[Word] = field(default_factory=list)
    gaps: list[dict[str, Any]] = field(default_factory=list)  # [{topic, code}] the symptom names
    stems: set[str] = field(default_factory=set)  # every stem of the symptom's words and their alternatives


def read(index: Any, parsed: Any) -> Reading:
    """The symptom's specific words and the declared gaps it names."""
    from invmap.search.expressions import expression
    from invmap.search.rarity import plainness

    groups = [g for g in parsed.groups if g.alternatives and not g.column]
    stems = index.stems([" ".join(a) for g in groups for a in [g.words, *g.alternatives]])
    typed: list[set[str]] = []  # each group's own words, stemmed
    held: list[set[str]] = []  # and with its alternatives' (corrections, glossary names)
    at = 0
    for g in groups:
        typed.append(set(stems[at]))
        held.append({s for part in stems[at : at + 1 + len(g.alternatives)] for s in part})
        at += 1 + len(g.alternatives)
    every = set().union(*typed, *held) if held else set()
    reading = Reading(gaps=_named(index, groups, typed), stems=every)
    gap_stems = {s for gap in reading.gaps for s in gap["stems"]}
    sources = max(index.count(), 1)
    levels = max(len(index.level_details()), 1)
    for g, own_stems, mine in zip(groups, typed, held):
        if len(" ".join(g.words)) < 2 or plainness(g) <= PLAIN or (own_stems and own_stems <= gap_stems):
            continue
        own = expression(g.alternatives, OWN_COLUMNS)
        if index.matches_more("fts", own, SOURCE_SHARE * sources):
            continue
        if index.matches_more("levels_fts", expression(g.alternatives, None), LEVEL_SHARE * levels):
            continue
        known = bool(index.known(sorted(mine), ("fts",)))
        reading.words.append(Word(" ".join(g.words), own, expression(g.alternatives, CODE_OWN), mine, known))
    return reading


def _named(index: Any, groups: Sequence[Any], typed: Sequence[set[str]]) -> list[dict[str, Any]]:
    """The gaps the symptom names: by its own words (stemmed: `quantized` names quantization), a typo's
    correction, or a glossary name of a word it holds taken whole (`EP` is expert parallelism), never by
    a glossary name's stem: throughput's alias `TPS` stems to `tp`, which is not the reporter saying TP."""
    fixed = index.stems([g.read_as for g in groups if g.read_as])
    named = {w.casefold() for g in groups for a in g.alternatives for w in a}
    return _gaps(index, set().union(*typed, *fixed), named)


def _gaps(index: Any, stems: set[str], named: set[str]) -> list[dict[str, Any]]:
    """[{topic, code, stems}] of each declared topic one of whose cues the symptom's stems hold, or
    whose words (unstemmed) the glossary names of the symptom's words hold."""
    from invmap.search.terms import words_of

    out: list[dict[str, Any]] = []
    declared = [(level["code"], gap) for level in index.level_details() for gap in level.get("not_covered") or ()]
    every = index.stems([cue for _, gap in declared for cue in gap["cues"]])  # one stemming for all cues
    at = 0
    for code, gap in declared:
        cues, at = every[at : at + len(gap["cues"])], at + len(gap["cues"])
        hit = [set(c) for c, cue in zip(cues, gap["cues"]) if c and _holds(set(words_of(cue)), set(c), stems, named)]
        if hit:
            out.append({"topic": gap["topic"], "code": code, "stems": set().union(*hit)})
    return out


def _holds(words: set[str], stems: set[str], symptom_stems: set[str], named: set[str]) -> bool:
    """Whether the symptom names a cue: its words whole among the symptom's words and their glossary
    names, or its stems among the symptom's own; an acronym (one word of at most ACRONYM letters)
    only whole, since the stemmer makes `TPS` the `tp` of TP."""
    if words <= named:
        return True
    return not (len(words) == 1 and len(next(iter(words))) <= ACRONYM) and stems <= symptom_stems


def matching(index: Any, reading: Reading, where: str, params: Sequence[Any]) -> tuple[set[int], list[str]]:
    """The positions of the sources `where` selects that hold a specific word of the symptom, and
    the words (as typed) they hold."""
    found: set[int] = set()
    held: list[str] = []
    for word in reading.words:
        rows = set(index.match("fts", word.own, where, params)) | set(index.match("code_fts", word.code, where, params))
        if rows:
            found |= rows
            held.append(word.text)
    return found, held


def coverage(reading: Reading, matched: bool, held: Sequence[str]) -> dict[str, Any]:
    """A level item's `coverage`: its status and the terms none of its matching sources holds (the
    gaps' topics first, then the specific words the catalog knows)."""
    uncovered = [g["topic"] for g in reading.gaps]
    uncovered += [w.text for w in reading.words if w.known and w.text not in held and w.text not in uncovered]
    status = "none" if not matched else ("partial" if uncovered else "covered")
    return {"status": status, "uncovered": uncovered}


def statement(reading: Reading, code: str, sources: Sequence[dict[str, Any]], status: str) -> str | None:
    """The one line a person reads about what the map lacks for this symptom at level `code`, or
    None when its sources cover it."""
    names = _names([s["name"] for s in sources])
    about = f"{code}'s sources are about {names}" if names else f"{code} has no sources"
    if reading.gaps:
        topics = _names(list(dict.fromkeys(g["topic"] for g in reading.gaps)))
        return f"no source in the map is about {topics}; {about}"
    words = _names([w.text for w in reading.words if w.known])
    if status == "none" and words:  # (a symptom of no specific word at all is vague, not a gap)
        return f"no source at {code} speaks of {words}; {about}"
    return None


def next_steps(index: Any, reading: Reading, code: str, positions: Sequence[int]) -> list[dict[str, Any]]:
    """A level's `next`: up to SETTINGS_SHOWN engine settings of its matching sources (at `positions`,
    best first), those whose flag and note share the most of the symptom's words first (deprecated
    ones left out), then the invmap command that recreates the level's mechanism (COMMANDS)."""
    rows = index.at(list(positions), ("id", "settings")) if positions else []
    settings = [s for r in rows for s in r.get("settings") or () if not s.get("deprecated")]
    said = [f"{s['flag']} {s.get('note') or ''}".replace("-", " ").replace("_", " ") for s in settings]
    stems = index.stems(said) if said else []
    shared = [len(set(st) & reading.stems) for st in stems]
    order = sorted(range(len(settings)), key=lambda n: -shared[n])
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for n in order:
        s = settings[n]
        key = (str(s["engine"]), str(s["flag"]))
        if key in seen:
            continue
        seen.add(key)
        text = f"{s['flag']}: {s['note']}" if s.get("note") else str(s["flag"])
        engine = " ".join(str(p) for p in (s["engine"], s.get("version")) if p)
        out.append({"kind": "setting", "text": text, "engine": engine})
        if len(out) == SETTINGS_SHOWN:
            break
    out += [
        {"kind": kind, "text": f"{command} ({what})", "engine": "invmap"}
        for kind, command, what in COMMANDS.get(code, ())
    ]
    return out


def vague(reading: Reading, parsed: Any) -> bool:
    """A symptom with nothing specific or measurable (`slow`, `bad performance`, `not working`): no
    specific word, no gap, no glossary term (a metric such as TTFT) and no number."""
    if reading.words or reading.gaps or parsed.spans:
        return False
    return not any(ch.isdigit() for g in parsed.groups for w in g.words for ch in w)


def unplaced(index: Any, text: str, reading: Reading, levels: Sequence[dict[str, Any]]) -> bool:
    """A failure whose component the first level does not place: none of its matched symptoms holds a
    specific word of the symptom other than the failure's own and what it produced (`sglang crashes`
    matched only by `crashes`; `engine hangs with no output`, ranked by `output`). `PD disaggregation
    hangs with nixl` is placed by `PD-disaggregated serving`, `AssertionError in scheduler` by its scheduler."""
    if not levels or not FAILURE.search(text):
        return False
    lines = levels[0]["matched"]
    held = {s for stem in index.stems(list(lines)) for s in stem} if lines else set()
    named = [w for w in reading.words if not FAILURE.fullmatch(w.text) and w.text not in PRODUCTS]
    return not any(w.stems & held for w in named)


def _names(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def named_gaps(index: Any, text: str) -> list[str]:
    """For `list --layer WORDS`: a line for each declared topic the words name (`quantization`), with
    what the sources of the level that declares it are about."""
    from invmap.search.terms import words_of

    words = words_of(text)
    if not words:
        return []
    reading = Reading(gaps=_gaps(index, {s for part in index.stems(words) for s in part}, set(words)))
    lines = []
    for code in dict.fromkeys(g["code"] for g in reading.gaps):
        here = Reading(gaps=[g for g in reading.gaps if g["code"] == code])
        sources = index.records("pos IN (SELECT pos FROM codes WHERE code = ?)", [code], ("name",))
        lines.append(statement(here, code, sources, "none") or "")
    return [line for line in lines if line]
