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
WHY = ("symptoms", "metrics")  # what `matched` lists: the symptoms or metrics that matched


def triage(index: Any, words: Sequence[str], filters: Any, limit: int = 3) -> list[dict[str, Any]]:
    """The levels that match the symptom best (at most `limit`, none below half the best score), each
    with what matched, its question, and its sources (those that also match the symptom first)."""
    from invmap import query

    parsed = engine.build_query(index, words, (), tables=("fts", "levels_fts"))
    hits = engine.rank(index, parsed, "levels_fts", COLUMNS, WEIGHTS)
    if not hits:
        return []
    best = hits[0].score
    hits = [h for h in hits if h.score >= best / 2][:limit]
    details = {d["pos"]: d for d in index.level_details()}
    every = " OR ".join(e for g in parsed.groups if (e := engine.group_expression(g, COLUMNS)))
    out = []
    for hit in hits:
        level = details[hit.rowid]
        marked = index.highlights("levels_fts", every, hit.rowid, COLUMNS, engine.MARK)
        matched = []
        for column in WHY:
            for item in (marked.get(column) or "").split("\x1f"):
                if engine.MARK[0] in item:
                    matched.append(item.strip())
        if not matched:  # the title, scope or question matched: say which words
            for column in ("scope", "title", "question"):
                text = marked.get(column) or ""
                if engine.MARK[0] in text:
                    matched.append(text)
                    break
        members = query.build_filters(index, {"layer": [level["code"]]})
        chosen = _both(filters, members)
        sources = index.records(chosen.where, chosen.params, ("pos", "id", "name", "question"))
        matching, _ = query.search(index, chosen, list(words), None, limit=None) if sources else ([], None)
        first = [r["id"] for r in matching]
        ordered = sorted(sources, key=lambda r: (first.index(r["id"]) if r["id"] in first else len(first), r["pos"]))
        out.append(
            {
                "code": level["code"],
                "title": level["title"],
                "score": hit.score,
                "matched": [unmarked(m) for m in matched],
                "question": level["question"],
                "sources": [{"id": r["id"], "name": r["name"], "question": r["question"]} for r in ordered],
                "_marked": matched,
            }
        )
    for level in out:
        level["_marked"] = level.pop("_marked")
    return out


def _both(a: Any, b: Any) -> Any:
    from invmap.query import Filters

    both = Filters()
    both.clauses = [*a.clauses, *b.clauses]
    both.params = [*a.params, *b.params]
    return both


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

    room = max(width - 6, 20)
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
            for line in textwrap.wrap(escape(s["question"]), room - 2, break_long_words=False, break_on_hyphens=False):
                parts.append(Text("      " + line))
    return Group(*parts)


def _cut(text: str, room: int) -> str:
    plain = unmarked(text)
    return plain[: room - 1].rsplit(" ", 1)[0] + "…"
