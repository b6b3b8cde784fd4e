"""Why a search result matched: the fields it matched in, best first, and the best one's text with
the matched words marked, cut to a window around them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from invmap.index import Index

WHY_WIDTH = 70  # characters of context kept around the matched words in `why`


def marked_columns(
    index: Index, searched: Sequence[tuple[str, Sequence[str], str]], rowids: Sequence[int]
) -> dict[int, dict[str, str]]:
    """rowid -> each searched column's text with the words the query matched between marks.MARK, for
    `why`: one statement per table (`searched`: table, its columns searched, the query's expression
    there) for every result."""
    from invmap.marks import MARK

    marked: dict[int, dict[str, str]] = {r: {} for r in rowids}
    for table, columns, expression in searched:
        if expression:
            for r, texts in index.highlights(table, expression, rowids, columns, MARK).items():
                marked[r].update(texts)
    return marked


def why(marked: dict[str, str], record: dict[str, Any]) -> tuple[list[str], str]:
    """(the fields a result matched in, best first; the best one as `field: …text…` with the matched
    words between marks.MARK), from its `marked_columns`. The index's own columns count as the fields
    they come from: a level's words as `layer`, a CamelCase word's parts as the field holding the word."""
    from invmap import fields as declared
    from invmap.marks import MARK

    found: dict[str, tuple[int, float, str]] = {}
    for column, text in marked.items():
        if not text or MARK[0] not in text:
            continue
        words = {w.casefold() for w in re.findall(f"{MARK[0]}(.*?){MARK[1]}", text)}
        name, text = _as_field(column, text, words, record)
        weight = declared.BY_NAME[name].weight if name in declared.BY_NAME else 0.5
        count, best, _ = found.get(name, (0, 0.0, ""))
        if len(words) > count or (len(words) == count and weight > best):
            found[name] = (len(words), weight, text)
    # a place or a setting is why only when no other field matched (they rank after the others too)
    ranked = sorted(found.items(), key=lambda item: (item[0] in declared.TABLE_FIELDS, -item[1][0], -item[1][1]))
    if not ranked:
        return [], ""
    name, (_, _, text) = ranked[0]
    return [n for n, _ in ranked], f"{name}: {_window(text.replace(chr(0x1F), '; '))}"


def _as_field(column: str, text: str, words: set[str], record: dict[str, Any]) -> tuple[str, str]:
    """(field, marked text) of a highlighted column of the index: a level's words as `layer`, a
    list of tables as its searched columns only, a CamelCase word's parts as the field holding it."""
    from invmap import fields as declared
    from invmap.marks import MARK

    if column == "level_words":
        return "layer", f"{record['layer']} ({MARK[0]}{' '.join(sorted(words))}{MARK[1]} level)"
    if column in declared.TABLE_FIELDS:  # its searched columns only, as the index holds them
        items = text.partition("\x1d")[0].split("\x1f")
        return column, "; ".join(" ".join(part for part in item.split("\x1e") if part) for item in items)
    if column == "parts":
        holder = next(
            (f for f in ("name", "title", "keywords") if any(w in _flat(record.get(f)).casefold() for w in words)),
            "name",
        )
        return holder, _mark_words(_flat(record.get(holder)), words)
    return column, text


def _flat(value: Any) -> str:
    return "; ".join(value) if isinstance(value, list) else (value or "")


def _mark_words(text: str, words: set[str]) -> str:
    """Mark the words of `text` containing any of `words` (a CamelCase word holding a matched part)."""
    from invmap.marks import MARK

    return re.sub(
        r"[^\W_]+",
        lambda m: f"{MARK[0]}{m.group()}{MARK[1]}" if any(w in m.group().casefold() for w in words) else m.group(),
        text,
    )


def _window(text: str) -> str:
    """At most about WHY_WIDTH characters around the first matched word, cut at spaces with `…`."""
    from invmap.marks import MARK, unmarked

    if len(unmarked(text)) <= WHY_WIDTH:
        return text
    at = text.index(MARK[0])
    start = max(0, at - WHY_WIDTH // 3)
    if start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < at else start
    end = start + WHY_WIDTH + (text[start:].count(MARK[0]) + text[start:].count(MARK[1]))
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > at else end
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")
