"""Edits in place (`edit`, `rm`): one `[[sources]]` table rewritten or removed, every other byte of the
file kept (comments, blank lines, the other tables, line endings, a BOM).

The table is found by its header line; what lies between it and the next header is checked to parse
back to exactly the source being changed before anything is written, so text that only looks like a
header (inside a multi-line string or array) can never cut a table short: such a file is scanned
token by token instead. On an overlay (`[catalog] extends`), a change to a source of the base is
written as a change entry (`id` plus the fields given, `unset = [...]`), a removal as `remove = true`.
Each write is locked, validated as `check` validates the whole file, and atomic (`catalog.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from invmap import catalog as catalogs
from invmap import overlay
from invmap.errors import CatalogError, NotFoundError, UsageError
from invmap.fields import KINDS, STORED_FIELDS
from invmap.location import Location


class NoSuchId(NotFoundError):
    """No source has this id (the CLI then resolves the text as a name, as `show` would)."""


_HEADER = re.compile(r"[ \t]*\[")  # a line that may open a table (at the text's start)
_LINE_HEADER = re.compile(r"\n[ \t]*\[")  # after a line break: ~6x faster than `^` with re.M
_SOURCES = re.compile(r"[ \t]*\[\[[ \t]*sources[ \t]*\]\][ \t]*(?:#[^\n]*)?\r?\n?")


def ordered_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A source's keys in the declared field order, then an overlay's `remove` and `unset`."""
    keys = [k for k in (*STORED_FIELDS, *overlay.PATCH_KEYS) if k in entry]
    return {k: entry[k] for k in [*keys, *(k for k in entry if k not in keys)]}


def table_text(entry: dict[str, Any], newline: str) -> str:
    # `[[sources]]` and the entry as a table of its own: tomli_w would write a short array of tables
    # inline (`sources = [{...}]`), which after another table's keys would belong to that table.
    return ("[[sources]]\n" + catalogs.entry_toml(ordered_entry(entry))).replace("\n", newline)


def source_spans(text: str, raw_sources: Sequence[Any]) -> list[tuple[int, int]] | None:
    """(start, end) of each `[[sources]]` table in `text` (its header to the next header), or None
    when the file does not write its sources as that many `[[sources]]` tables. `_trimmed` then
    gives a table's own end."""
    spans = _spans_by_lines(text)
    if len(spans) != len(raw_sources):
        spans = _spans_by_tokens(text)
    return spans if len(spans) == len(raw_sources) else None


def _spans_by_lines(text: str) -> list[tuple[int, int]]:
    starts = ([0] if _HEADER.match(text) else []) + [m.start() + 1 for m in _LINE_HEADER.finditer(text)]
    return _sources_among(text, starts)


def _sources_among(text: str, headers: list[int]) -> list[tuple[int, int]]:
    """The `[[sources]]` ones among these header positions, each to the next header (or the end)."""
    spans = []
    for n, start in enumerate(headers):
        if text.startswith("[[sources]]\n", start) or _SOURCES.match(text, start):
            spans.append((start, headers[n + 1] if n + 1 < len(headers) else len(text)))
    return spans


def _trimmed(text: str, start: int, end: int) -> int:
    """`end` moved back to the end of the table's last value line (before its line break), over the
    blank and comment lines that close the table (they introduce the next)."""
    lines = text[start:end].split("\n")
    while len(lines) > 1 and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        lines.pop()
    kept = start + len("\n".join(lines))
    return kept - 1 if text[kept - 1 : kept] == "\r" else kept


_TOKEN = catalogs.TOML_TOKEN


def _spans_by_tokens(text: str) -> list[tuple[int, int]]:
    """The slow, exact way: strings and comments skipped whole, brackets of values counted, so only a
    `[` that opens a line outside any value starts a table."""
    headers: list[int] = []
    depth = 0
    pos = 0
    while (m := _TOKEN.search(text, pos)) is not None:
        token = m.group()
        pos = m.end()
        if token.endswith("[") and token.strip() == "[" and (m.start() == 0 or text[m.start() - 1] == "\n"):
            if depth == 0:
                headers.append(m.start())
                line_end = text.find("\n", m.start())
                pos = len(text) if line_end < 0 else line_end  # the header's own brackets
                continue
            depth += 1
        elif token in ("[", "{"):
            depth += 1
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)
    return _sources_among(text, headers)


def _holds(text: str, span: tuple[int, int], raw: Any) -> tuple[int, int] | None:
    """The span trimmed of what follows the table, if it parses back to exactly the source `raw`."""
    import tomli

    start, end = span
    end = _trimmed(text, start, end)
    try:
        return (start, end) if tomli.loads(text[start:end]) == {"sources": [raw]} else None
    except tomli.TOMLDecodeError:
        return None


def _span_of(text: str, raw_sources: Sequence[Any], n: int, path: str) -> tuple[int, int]:
    """The span of the `n`th source's table, checked to parse back to exactly that source."""
    first = source_spans(text, raw_sources)
    if first is not None:
        # The line scan first; a multi-line string holding a `[[sources]]` line fools it, not the tokens.
        held = _holds(text, first[n], raw_sources[n])
        if held is not None:
            return held
        spans = _spans_by_tokens(text)
        held = _holds(text, spans[n], raw_sources[n]) if len(spans) == len(raw_sources) else None
        if held is not None:
            return held
    raise UsageError(
        f"cannot edit {path} in place: its sources are not plain [[sources]] tables",
        hint="'invmap fmt' rewrites it in the canonical form, which can be",
    )


def _appended(text: str, block: str, newline: str) -> str:
    body = text if text.endswith("\n") or not text.lstrip(catalogs.BOM) else text + newline
    return body + (newline if body.lstrip(catalogs.BOM) else "") + block


def _replaced(text: str, span: tuple[int, int], block: str) -> str:
    start, end = span
    return text[:start] + block.rstrip("\r\n") + text[end:]


def _removed(text: str, span: tuple[int, int]) -> str:
    """The table gone with the line break that ends it, and the blank line before it if it had one."""
    start, end = span
    after = end
    for ending in ("\r\n", "\n"):
        if text.startswith(ending, after):
            after += len(ending)
            break
    before = start
    for blank in ("\r\n\r\n", "\n\n"):
        if text.endswith(blank, 0, start):
            before = start - len(blank) // 2
            break
    return text[:before] + text[after:]


def _own_index(raw: dict[str, Any], ident: str) -> int | None:
    sources = raw.get("sources")
    for n, entry in enumerate(sources if isinstance(sources, list) else ()):
        if isinstance(entry, dict) and entry.get("id") == ident:
            return n
    return None


def _write(path: Any, text: str, verb: str, before: bytes | None = None) -> Any:
    """Validate the new text as `check` would, then replace the file with it. With `before` (the file
    as it was, not validated yet): a file that was already invalid is reported as such (exit 3)."""
    try:
        updated = catalogs.validate_bytes(text.encode("utf-8"), str(path))
    except CatalogError as exc:
        if before is not None:
            catalogs.validate_bytes(before, str(path))  # raises the file's own problems
        raise UsageError(
            f"cannot {verb} {path}:\n" + "\n".join(f"  {p.split(': ', 1)[-1]}" for p in exc.problems)
        ) from None
    catalogs.write_atomic(path, text, newline="")
    return updated


class ListChange(NamedTuple):
    """What `edit` does to one list field: items to add and to remove, or (`replace`) the whole list."""

    add: Sequence[Any] = ()
    remove: Sequence[Any] = ()
    replace: Sequence[Any] | None = None


class Edit(NamedTuple):
    """What `edit_source` did: the catalog after it, the source's id after it, and the source's stored
    fields before and after (JSON forms, absent ones left out): the CLI says what changed."""

    catalog: Any
    ident: str
    before: dict[str, Any]
    after: dict[str, Any]


class Removed(NotFoundError):
    """The id names a base source that this overlay removes (`rm --undo` brings it back)."""


def stored_values(source: Any) -> dict[str, Any]:
    """A source's stored fields (a raw `[[sources]]` table or a model) in their JSON forms, absent ones
    and empty lists left out."""
    get = source.get if isinstance(source, dict) else lambda name: getattr(source, name, None)
    out = {}
    for name in STORED_FIELDS:
        value = get(name)
        if value is not None and value != [] and value != ():
            out[name] = KINDS[name].json(value)
    return out


def _identifier_keys(get: Callable[[str], Any]) -> set[str]:
    """The keys a source is found by as an identifier (as `index.source_keys` makes them)."""
    from invmap.identifiers import canonical_link

    keys = set()
    if isinstance(arxiv := get("arxiv"), str):
        keys.add("arxiv:" + arxiv.split("v")[0].lower())
    if isinstance(doi := get("doi"), str):
        keys.add("doi:" + doi.lower())
    for link in (get("url"), get("code")):
        if isinstance(link, str):
            keys.add("link:" + canonical_link(link))
    return keys


def target_id(sources: Sequence[Any], target: str, removed: set[str], path: Any) -> str:
    """The id of the one source `target` names exactly: its id, or an arXiv id, DOI or link it holds.
    Never a guess (a writer must not change a source the user did not name): anything else is
    NoSuchId; a base source this overlay removes is `Removed`."""
    from invmap.identifiers import keys_for_query

    def getter(s: Any) -> Callable[[str], Any]:
        return s.get if isinstance(s, dict) else lambda name: getattr(s, name, None)

    ids = [getter(s)("id") for s in sources]
    if target in ids:
        return target
    if target in removed:
        raise Removed(
            f"{target} is removed by this overlay ({path})", hint=f"'invmap rm --undo {target}' brings it back"
        )
    keys = keys_for_query(target)
    if keys:
        found = [i for s, i in zip(sources, ids) if _identifier_keys(getter(s)) & set(keys)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise NotFoundError(
                f"'{target}' is ambiguous: {len(found)} sources hold it", candidates=found, hint="use an id"
            )
    raise NoSuchId(f"no source '{target}' in {path}")


def _removed_ids(raw: dict[str, Any]) -> set[str]:
    """The ids an overlay's own tables remove (`remove = true`)."""
    if overlay.extends_of(raw) is None:
        return set()
    return {
        s["id"]
        for s in raw.get("sources") or ()
        if isinstance(s, dict) and s.get("remove") is True and isinstance(s.get("id"), str)
    }


def _listed(current: list[Any], change: ListChange, flag: str, ident: str) -> list[Any]:
    """A list field's new value: replaced, or the current one with items removed then added (an item
    already there is not added twice); removing an item it does not hold is a usage error."""
    if change.replace is not None:
        return list(dict.fromkeys(change.replace))
    missing = [item for item in change.remove if item not in current]
    if missing:
        held = "; ".join(str(i) for i in current)
        raise UsageError(f"{flag} '{missing[0]}': {ident} does not hold it", hint=f"it holds: {held}" if held else None)
    value = [item for item in current if item not in change.remove]
    return value + [item for item in dict.fromkeys(change.add) if item not in value]


def edit_source(
    location: Location,
    target: str,
    changes: dict[str, Any],
    unset: Sequence[str],
    check_types: Callable[[list[str]], None] | None = None,
    lists: dict[str, ListChange] | None = None,
    flags: dict[str, str] | None = None,
) -> Edit:
    """Change fields of the source `target` names exactly (`target_id`, checked under the lock);
    `unset` names optional fields to clear; `lists` changes list fields item by item (`flags` names
    their options in messages); `check_types` is called with the catalog's types before anything
    changes (it may respell `changes["type"]`). Nothing is written when nothing would change."""
    path = catalogs.require_writable(location)
    with catalogs.locked(path):
        data = catalogs.read_bytes(str(path))
        raw = catalogs.parse(data, str(path))
        if overlay.extends_of(raw) is None:  # the file's own tables say what exists: no second parse
            sources: list[Any] = [s for s in raw.get("sources") or () if isinstance(s, dict)]
        else:  # an overlay: what the merged map holds
            sources = list(catalogs.validate_bytes(data, str(path)).sources)
        types = [s.get("type") if isinstance(s, dict) else s.type for s in sources]
        try:
            ident = target_id(sources, target, _removed_ids(raw), path)
        except NotFoundError:
            catalogs.validate_bytes(data, str(path))  # an invalid catalog is reported as such (exit 3)
            raise
        if check_types is not None:
            check_types(list(dict.fromkeys(sorted((t for t in types if isinstance(t, str)), key=str.casefold))))
        before = stored_values(next(s for s in sources if (s.get("id") if isinstance(s, dict) else s.id) == ident))
        changes, unset = dict(changes), list(unset)
        for name, change in (lists or {}).items():
            value = _listed(list(before.get(name, [])), change, (flags or {}).get(name, name), ident)
            if value:
                changes[name] = value
            elif name in before:
                unset.append(name)
        text = data.decode("utf-8")
        newline = catalogs._newline_of(text)
        n = _own_index(raw, ident)
        in_base = ident in _base_ids(raw, str(path))
        if "id" in changes and changes["id"] != ident and in_base:
            raise UsageError(f"cannot change the id of '{ident}', a source of the catalog {path} extends")
        planned = {k: v for k, v in {**before, **stored_values(changes)}.items() if k not in unset or k in changes}
        if planned == before:  # every value already so: the file stays as it is
            return Edit(catalogs.validate_bytes(data, str(path)), ident, before, before)
        if n is None:  # a base source: a change entry of its own
            entry = _changed({"id": ident}, changes, unset, in_base=True)
            new_text = _appended(text, table_text(entry, newline), newline)
        else:
            entry = _changed(dict(raw["sources"][n]), changes, unset, in_base)
            span = _span_of(text, raw["sources"], n, str(path))
            new_text = _replaced(text, span, table_text(entry, newline))
        updated = _write(path, new_text, f"change '{ident}' in", before=data)
        new_id = changes.get("id", ident)
        after = stored_values(next(s for s in updated.sources if s.id == new_id))
        return Edit(updated, new_id, before, after)


def edit_sources(location: Location, changes: dict[str, dict[str, Any]]) -> Any:
    """Change fields of several sources (id -> changes) in one write: every change is made to the
    text, the result validated as a whole, then written once; any problem writes nothing (`refresh
    --write`). Returns the catalog."""
    path = catalogs.require_writable(location)
    with catalogs.locked(path):
        data = catalogs.read_bytes(str(path))
        raw = catalogs.parse(data, str(path))
        current = catalogs.validate_bytes(data, str(path))  # an invalid catalog is reported as such (exit 3)
        missing = [i for i in changes if i not in {s.id for s in current.sources}]
        if missing:
            raise NoSuchId(f"no source with id {', '.join(repr(m) for m in missing)} in {path}")
        text = data.decode("utf-8")
        newline = catalogs._newline_of(text)
        in_base = _base_ids(raw, str(path))
        for ident, fields in changes.items():
            if "id" in fields and fields["id"] != ident and ident in in_base:
                raise UsageError(f"cannot change the id of '{ident}', a source of the catalog {path} extends")
            raw = catalogs.parse(text.encode("utf-8"), str(path))
            n = _own_index(raw, ident)
            if n is None:
                text = _appended(text, table_text(_changed({"id": ident}, fields, (), in_base=True), newline), newline)
            else:
                entry = _changed(dict(raw["sources"][n]), fields, (), ident in in_base)
                text = _replaced(text, _span_of(text, raw["sources"], n, str(path)), table_text(entry, newline))
        return _write(path, text, "change sources in", before=data)


def _changed(entry: dict[str, Any], changes: dict[str, Any], unset: Sequence[str], in_base: bool) -> dict[str, Any]:
    """An entry with `changes` made and `unset` fields cleared. An entry over a base source (an
    overlay's change) clears a field by naming it in `unset`: the base's value would show through."""
    entry = {**entry, **changes}
    for name in unset:
        entry.pop(name, None)
    if in_base:
        cleared = [u for u in [*entry.pop("unset", []), *unset] if u not in changes]
        if cleared:
            entry["unset"] = list(dict.fromkeys(cleared))
    return entry


def remove_sources(location: Location, targets: Sequence[str]) -> tuple[Any, list[str]]:
    """Remove the sources `targets` name exactly (on an overlay, hide the base's with `remove = true`).
    Returns the catalog and the ids removed."""
    path = catalogs.require_writable(location)
    with catalogs.locked(path):
        data = catalogs.read_bytes(str(path))
        current = catalogs.validate_bytes(data, str(path))
        first = catalogs.parse(data, str(path))
        removed = _removed_ids(first)
        idents = list(dict.fromkeys(target_id(current.sources, t, removed, path) for t in targets))
        known = {s.id for s in current.sources}
        text = data.decode("utf-8")
        newline = catalogs._newline_of(text)
        in_base = _base_ids(first, str(path))
        for ident in idents:
            raw = catalogs.parse(text.encode("utf-8"), str(path))
            n = _own_index(raw, ident)
            if n is None:  # only the base has it
                text = _appended(text, table_text({"id": ident, "remove": True}, newline), newline)
                continue
            span = _span_of(text, raw["sources"], n, str(path))
            if ident in in_base:
                text = _replaced(text, span, table_text({"id": ident, "remove": True}, newline))
            else:
                text = _removed(text, span)
        if len(known - set(idents)) == 0:
            raise UsageError(f"cannot remove every source of {path}: a catalog holds at least one")
        return _write(path, text, "remove from"), idents


def restore_sources(location: Location, idents: Sequence[str]) -> Any:
    """`rm --undo`: the overlay's `remove = true` taken back from each base source named (its table
    goes when it held nothing else), so the base's source shows again. Returns the catalog."""
    path = catalogs.require_writable(location)
    with catalogs.locked(path):
        data = catalogs.read_bytes(str(path))
        catalogs.validate_bytes(data, str(path))
        text = data.decode("utf-8")
        newline = catalogs._newline_of(text)
        for ident in dict.fromkeys(idents):
            raw = catalogs.parse(text.encode("utf-8"), str(path))
            if ident not in _removed_ids(raw):
                if overlay.extends_of(raw) is None:
                    why = "only an overlay's removals can be undone (a removed table is gone from this file)"
                else:
                    why = "this overlay does not remove it"
                raise NotFoundError(f"nothing to undo for '{ident}' in {path}: {why}")
            n = _own_index(raw, ident)
            span = _span_of(text, raw["sources"], n, str(path))
            entry = {k: v for k, v in raw["sources"][n].items() if k != "remove"}
            text = _removed(text, span) if set(entry) == {"id"} else _replaced(text, span, table_text(entry, newline))
        return _write(path, text, "restore in")


def _base_ids(raw: dict[str, Any], path: str) -> set[str]:
    """The ids of the sources an overlay's base holds (empty for a catalog that extends nothing)."""
    if overlay.extends_of(raw) is None:
        return set()
    merged = catalogs.resolve_overlay({"catalog": raw.get("catalog"), "sources": []}, path, [], [])
    return {s["id"] for s in merged.get("sources", []) if isinstance(s, dict) and isinstance(s.get("id"), str)}


_AT = re.compile(r"\bat line (\d+)(?:, column (\d+))?")
_SOURCE_AT = re.compile(r"^(overlay )?sources? (\d+)(?: \(([^)]*)\))?")
_FIELD_NAMED = re.compile(r"field '([A-Za-z_]+)'")


def locate_problems(data: bytes, problems: list[str]) -> list[tuple[int, int] | None]:
    """(line, column) in the file of each problem `check` reports, where it can be told: a TOML error
    where the parser stopped; a source's problem at its field's key (`field 'id'`), else at its
    `[[sources]]` header; None for the rest (a `[layers]` value, a file-wide problem)."""
    text = data.decode("utf-8", "replace").removeprefix(catalogs.BOM)
    tables: list[tuple[int, int]] | None = None
    ids: list[Any] = []
    out: list[tuple[int, int] | None] = []
    for problem in problems:
        if m := _AT.search(problem):
            out.append((int(m.group(1)), int(m.group(2) or 1)))
            continue
        m = _SOURCE_AT.match(problem)
        if m is None:
            out.append(None)
            continue
        if tables is None:
            try:
                raw = catalogs.parse_text(text, "")
            except CatalogError:
                raw = {}
            own = raw.get("sources") if isinstance(raw.get("sources"), list) else []
            tables = _spans_by_tokens(text)
            ids = [s.get("id") if isinstance(s, dict) else None for s in own]
            plain = overlay.extends_of(raw) is None
        n = int(m.group(2)) - 1
        if not (plain or m.group(1)) and m.group(3) in ids:  # an overlay's merged map: found by its id
            n = ids.index(m.group(3))
        if not 0 <= n < len(tables):
            out.append(None)
            continue
        start, end = tables[n]
        offset = start + len(text[start:end]) - len(text[start:end].lstrip())
        if f := _FIELD_NAMED.search(problem):
            key = re.compile(rf"(?m)^[ \t]*{re.escape(f.group(1))}[ \t]*=").search(text, start, end)
            if key is not None:
                offset = key.start() + len(key.group()) - len(key.group().lstrip())
        line_start = text.rfind("\n", 0, offset) + 1
        out.append((text.count("\n", 0, offset) + 1, offset - line_start + 1))
    return out
