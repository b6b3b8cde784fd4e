"""Parsing a query: shell words into phrases, words, `field:word`s and exclusions, then into the
groups a ranking matches (expanded against the catalog by `expansion.py` unless `--exact`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from invmap.errors import UsageError
from invmap.fields import field_named
from invmap.search.expansion import expand
from invmap.search.terms import STOP_WORDS, Group, Query, words_of

if TYPE_CHECKING:
    from invmap.index import Index


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
    unquoted = [text for text, _, quoted in parts if quoted] if not phrases else []
    groups, sequence = _groups([(text, column, quoted and phrases) for text, column, quoted in parts])
    meaningful = [g for g in groups if g.required or g.words[0] not in STOP_WORDS]
    if not meaningful and not groups and not excluded:
        raise UsageError("search needs some text to look for")
    # a query of nothing but stop words searches for them
    query = Query(meaningful or groups, excluded, sequence, exact=exact, unquoted=unquoted)
    if not exact:
        expand(index, query, tables)
    return query


def _groups(parts: Sequence[tuple[str, str | None, bool]]) -> tuple[list[Group], list[str]]:
    """One group per quoted phrase (required) and per word (a word said twice counts once), and every
    word of the query in order, stop words included."""
    groups: list[Group] = []
    sequence: list[str] = []
    for text, column, quoted in parts:
        words = words_of(text)
        sequence.extend(words)
        start = len(sequence) - len(words)
        if quoted:
            content = [w for w in words if w not in STOP_WORDS] or words
            groups.append(Group(words, len(content), [words], required=True, position=start))
            continue
        for n, word in enumerate(words):
            if any(g.words == [word] and g.column == column and not g.required for g in groups):
                continue  # a word said twice counts once (`[Performance]: ... poor performance`)
            groups.append(Group([word], 1, [[word]], column=column, position=start + n))
    return groups, sequence
