"""The writes a catalog's persisted index settles (`add`, `edit`, `rm` on a large catalog): under the
file's lock, when the index is current for exactly the bytes read and the file is plain `[[sources]]`
tables extending nothing, only the table written is validated and the rest (ids, identifiers,
types, citations) is asked of the index (`index.writing`, reached through the caller's `index`
argument: this module stands below the index). Each function answers None for whatever the index
cannot settle, and edits.py then goes the full way, whose refusals keep their words. The text
changes are edits.py's own, so the bytes written are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from invmap import edits, overlay
from invmap.errors import CatalogError
from invmap.reading import BOM, parse_text
from invmap.spans import source_starts, table_at
from invmap.writers import write_atomic


class Indexed(NamedTuple):
    """A file's current index (`index.writing.Current`) and where each of its sources' tables starts."""

    index: Any
    starts: list[int]


def indexed(file: Any) -> Indexed | None:
    """An `edits._Opened` file's persisted index when it is current for exactly the bytes read and
    the file extends nothing, with its sources' tables found by lines (`spans.source_starts`); else None."""
    if file.index is None or file.key is None or file.data.startswith(BOM.encode("utf-8")):
        return None
    current = file.index(file.key)
    if current is None:
        return None
    starts = source_starts(file.text, current.count)
    if starts is None or not _extends_nothing(file.text[: starts[0]], file.name):
        current.close()
        return None
    return Indexed(current, starts)


def _extends_nothing(head: str, path: str) -> bool:
    """Whether the text before the first `[[sources]]` table is a head that extends nothing (the
    index's own record of its bases is empty for a base it could not key, such as a FIFO)."""
    try:
        raw = parse_text(head, path)
    except CatalogError:
        return False
    return overlay.extends_of(raw) is None and "sources" not in raw


def _one_source(text: str, path: str) -> dict[str, Any] | None:
    """The entry of a text that is exactly one `[[sources]]` table, else None."""
    try:
        raw = parse_text(text, path)
    except CatalogError:
        return None
    sources = raw.get("sources")
    if list(raw) != ["sources"] or not isinstance(sources, list) or len(sources) != 1:
        return None
    return sources[0] if isinstance(sources[0], dict) else None


def valid_alone(block: str, path: str) -> Any:
    """The source one `[[sources]]` table's text holds, validated as `check` validates each source
    (its fields strictly, a place's repo), or None for any problem (the full path then words it)."""
    from pydantic import TypeAdapter, ValidationError

    from invmap.model import Source
    from invmap.validation import place_problems

    entry = _one_source(block, path)
    if entry is None or place_problems({"sources": [entry]}):
        return None
    try:
        return TypeAdapter(list[Source]).validate_python([entry], strict=True)[0]
    except (ValidationError, RecursionError):
        return None


def added(file: Any, block: str, entry: dict[str, Any], allow_duplicate: bool) -> Any:
    """The source `block` holds when adding it needs no more than the index says: the file is a valid
    catalog of plain `[[sources]]` tables extending nothing (its index current for these bytes), so the
    appended table is one more source, and the catalog stays valid when that source is valid alone and
    its id is free; unless `allow_duplicate`, no source may hold its arXiv id, DOI or link. None when
    any of that is not so: the full path then answers, with its own words for a refusal."""
    found = file.indexed()
    if found is None:
        return None
    record = valid_alone(block, file.name)
    if record is None or found.index.pos_of_id(record.id) is not None:
        return None
    if not allow_duplicate:
        from invmap.validation import _identifier_keys as identifier_keys

        held: dict[str, list[str]] = {"arxiv": [], "doi": [], "url": []}
        for key in identifier_keys(entry.get):
            kind, _, value = key.partition(":")
            held[kind].append(value)
        if found.index.may_share(held["arxiv"], held["doi"], held["url"]):
            return None
    return record


def _target(index: Any, target: str) -> int | None:
    """The position of the one source `target` names exactly, as `target_id` finds it (its id, else
    the one source holding that arXiv id, DOI or link), from the index; None for none or several."""
    from invmap.identifiers import keys_for_query

    n = index.pos_of_id(target)
    if n is not None:
        return n
    found = index.positions_holding(keys_for_query(target) or ())
    return found[0] if len(found) == 1 else None


def _table_in(text: str, starts: list[int], n: int, ident: str, path: str) -> tuple[tuple[int, int], dict] | None:
    """The span of the `n`th source's table and its entry, if its text parses to one source of id `ident`."""
    span = table_at(text, starts, n)
    entry = _one_source(text[span[0] : span[1]], path)
    return (span, entry) if entry is not None and entry.get("id") == ident else None


def edited(
    file: Any,
    target: str,
    changes: dict[str, Any],
    unset: Sequence[str],
    check_types: Callable[[list[str]], None] | None,
    lists: dict[str, Any],
    flags: dict[str, str],
) -> edits.Edit | None:
    """`edit_source` with the index current for the file (`edits._Opened.indexed`): the source found through
    it, its table alone changed and validated (a valid catalog with one source changed, its id kept,
    stays valid). None when the index cannot say, the id would change (reports may cite it) or the new
    table has a problem: the full path then answers, in its own words."""
    found = file.indexed()
    if found is None:
        return None
    n = _target(found.index, target)
    ident = found.index.id_at(n) if n is not None else None
    held = _table_in(file.text, found.starts, n, ident, file.name) if ident is not None else None
    if held is None:
        return None
    span, entry = held
    if check_types is not None:
        check_types(edits.distinct_types(found.index.types()))
    before = edits.stored_values(entry)
    fields, cleared = edits._with_lists(before, changes, unset, lists, flags, ident)
    change = edits._Change(fields, cleared, False)
    if change.fields.get("id", ident) != ident:
        return None
    if edits._planned(before, change) == before:
        source = valid_alone(file.text[span[0] : span[1]], file.name)
        return None if source is None else edits.Edit(source, ident, before, before)
    block = edits.table_text(edits._changed(dict(entry), change.fields, change.unset, False), file.newline)
    source = valid_alone(block, file.name)
    if source is None:
        return None
    write_atomic(file.path, edits._replaced(file.text, span, block), newline="")
    return edits.Edit(source, ident, before, edits.stored_values(source))


def removed(file: Any, targets: Sequence[str]) -> list[str] | None:
    """`remove_sources` with the index current for the file (`edits._Opened.indexed`): the sources found
    through it and their tables taken out one by one, each found again by lines in the text as it
    then is. A valid catalog keeps valid when sources no report cites go and one stays, so nothing
    is validated. None when the index cannot say, a report cites one or every source would go: the
    full path then answers, in its own words."""
    found = file.indexed()
    if found is None:
        return None
    index = found.index
    positions = [_target(index, t) for t in targets]
    if None in positions:
        return None
    at = list(dict.fromkeys(positions))
    idents = [index.id_at(n) for n in at]
    if index.count <= len(at) or None in idents or index.cited(idents):
        return None
    text, starts, count = file.text, found.starts, index.count
    for k, ident in enumerate(idents):
        starts = starts if k == 0 else source_starts(text, count)
        held = _table_in(text, starts, at[k], ident, file.name) if starts is not None else None
        if held is None:
            return None
        text = edits._removed(text, held[0])
        count -= 1
        at = [n - 1 if n > at[k] else n for n in at]
    write_atomic(file.path, text, newline="")
    return idents


class Way:
    """The index's way for edits.py's writers, given to them by authoring (above both; edits.py
    stands below this module and never imports it): `way(key)` is the index current for a file's
    key (`index.writing.Current.of`), and `indexed`, `added`, `edited` and `removed` are this
    module's."""

    def __init__(self, current: Callable[[dict[str, Any]], Any]) -> None:
        self.current = current

    def __call__(self, key: dict[str, Any]) -> Any:
        return self.current(key)

    indexed = staticmethod(indexed)
    added = staticmethod(added)
    edited = staticmethod(edited)
    removed = staticmethod(removed)
