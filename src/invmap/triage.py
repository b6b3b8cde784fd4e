"""From a symptom to the level whose metric boundary holds it (the map's first step), its sources and
their open questions.

The levels' symptoms, metrics, scope, question and title (catalog.toml's `[layers]`) are ranked
against the symptom's words by the retrieval that `search` uses (stemming, typo correction, the
glossary: `ttft` = `time to first token`), in the index's `levels_fts` table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from invmap import search as engine

COLUMNS = ("title", "scope", "question", "metrics", "symptoms")
WEIGHTS = (1.5, 1.5, 1.0, 2.0, 3.0)  # what an engineer sees weighs most, then what is measured
WHY = ("symptoms", "metrics")
SHOWN = 3  # the items (symptoms, metrics, ...) `matched` lists per level


def triage(index: Any, words: Sequence[str], filters: Any, limit: int = 3) -> list[dict[str, Any]]:
    """The levels that match the symptom best (at most `limit`, none below half the best score), each
    with what matched, its question, and its sources (those that also match the symptom first)."""
    parsed = engine.build_query(index, words, (), tables=("fts", "levels_fts"))
    items = engine.rank(index, parsed, index.level_items(), ("text",), (0.0, 1.0))
    scored = _ranked(index, parsed, items)
    if not scored:
        return []
    best = scored[0][0]
    every = " OR ".join(e for g in parsed.groups if (e := engine.group_expression(g, ("text",))))
    details = {d["pos"]: d for d in index.level_details()}
    kept = [(score, pos) for score, pos in scored if score >= best / 2][:limit]
    return [_level(index, details[pos], score, items, every, words, filters) for score, pos in kept]


def _ranked(index: Any, parsed: Any, items: list[Any]) -> list[tuple[float, int]]:
    """(score, level position), best first. A level ranks by the query words its best single item
    holds (one symptom, metric, or its scope, question or title), then by the words the whole level
    holds, then by BM25 over the level: a symptom that says most of what was typed is better
    evidence than the same words scattered over a level."""
    from invmap.index import ITEM_STRIDE

    levels = engine.rank(index, parsed, "levels_fts", COLUMNS, WEIGHTS)
    if not levels:
        return []
    best_item: dict[int, int] = {}
    for item in items:
        level = item.rowid // ITEM_STRIDE
        best_item[level] = max(best_item.get(level, 0), item.matched)
    n = parsed.total or 1
    top = max(h.relevance for h in levels) or 1.0
    scored = []
    for h in levels:
        m_item = best_item.get(h.rowid, 1)
        share = max(h.relevance, 0.0) / top if top > 0 else 1.0
        strength = (min(h.matched, n) - m_item + min(max(share, 0.001), 1.0)) / (n - m_item + 1)
        scored.append((min(round(100.0 * (m_item - 1 + strength) / n, 1), 100.0), m_item, h))
    scored.sort(key=lambda s: (-s[1], -s[2].matched, -s[2].relevance, s[2].rowid))
    return [(score, h.rowid) for score, _, h in scored]


def _level(
    index: Any, level: dict[str, Any], score: float, items: list[Any], every: str, words: Sequence[str], filters: Any
) -> dict[str, Any]:
    """One level of the answer: what matched (its symptoms and metrics, else its scope, title or
    question), its question, and its sources, those a search of the symptom finds among them first."""
    from invmap import query
    from invmap.index import ITEM_STRIDE

    mine = [i for i in items if i.rowid // ITEM_STRIDE == level["pos"]]
    texts = index.items([i.rowid for i in mine], every, engine.MARK)
    ranked = [texts[i.rowid] for i in mine if i.rowid in texts]
    matched = ([t for k, t in ranked if k in WHY] or [t for k, t in ranked if k not in WHY])[:SHOWN]
    chosen = filters.and_(query.build_filters(index, {"layer": [level["code"]]}))
    sources = index.records(chosen.where, chosen.params, ("pos", "id", "name", "question"))
    hits = query.ranked(index, chosen, list(words)) if sources else []
    first = {hit.rowid: n for n, hit in enumerate(hits)}  # a source's place in that search
    ordered = sorted(sources, key=lambda r: (first.get(r["pos"], len(first)), r["pos"]))
    return {
        "code": level["code"],
        "title": level["title"],
        "score": score,
        "matched": [unmarked(m) for m in matched],
        "question": level["question"],
        "sources": [{"id": r["id"], "name": r["name"], "question": r["question"]} for r in ordered],
        "_marked": matched,
    }


def unmarked(text: str) -> str:
    return re.sub(f"[{engine.MARK[0]}{engine.MARK[1]}]", "", text)


def public(levels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The JSON contract: `[{code, title, score, matched, question, sources}]`."""
    return [{k: v for k, v in level.items() if not k.startswith("_")} for level in levels]


def drawing(levels: list[dict[str, Any]], width: int, color: bool) -> Any:
    """The terminal view: each level with why it matched, its question and its sources' questions."""
    import textwrap

    from rich.console import Group
    from rich.text import Text

    from invmap.render import marked_text
    from invmap.safe import escape

    room = max(width - 7, 20)  # after the 7-column `  why  ` / `  ask  ` margin
    parts: list[Any] = []
    for n, level in enumerate(levels):
        if n:
            parts.append(Text(""))
        head = Text(f"{level['code']}  {escape(level['title'])}", style="bold cyan" if color else "")
        head.append(f"  {level['score']:.1f}")
        parts.append(head)
        for item in level["_marked"]:
            line = Text("  why  ")
            line.append_text(marked_text(item if len(unmarked(item)) <= room else _cut(item, room)))
            parts.append(line)
        if level["question"]:
            wrapped = textwrap.wrap(escape(level["question"]), room, break_long_words=False, break_on_hyphens=False)
            parts += [Text(("  ask  " if i == 0 else "       ") + line) for i, line in enumerate(wrapped)]
        for s in level["sources"]:
            parts.append(Text(f"    {escape(s['name'])} ({escape(s['id'])})", style="bold" if color else ""))
            for line in textwrap.wrap(escape(s["question"]), room + 1, break_long_words=False, break_on_hyphens=False):
                parts.append(Text("      " + line))
    return Group(*parts)


def _cut(text: str, room: int) -> str:
    """`text` (with marks) cut at a space to at most `room` visible characters, ending in `…`; the
    marks kept, and closed if the cut falls inside a marked run."""
    visible, out, open_mark, last_space = 0, [], False, None
    for ch in text:
        if ch in engine.MARK:
            open_mark = ch == engine.MARK[0]
            out.append(ch)
            continue
        if visible == room - 1:
            break
        if ch == " ":
            last_space = (len(out), open_mark)
        out.append(ch)
        visible += 1
    if last_space is not None:
        out, open_mark = out[: last_space[0]], last_space[1]
    return "".join(out) + (engine.MARK[1] if open_mark else "") + "…"
