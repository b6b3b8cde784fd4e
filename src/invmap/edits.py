"""Changing a catalog file (`add`, `edit`, `rm`, `rm --undo`, `fmt`, `init`): one `[[sources]]` table
added, rewritten or removed, every other byte of the file kept (comments, blank lines, the other
tables, line endings, a BOM); or the whole file rewritten in its canonical form.

Each change is made under the file's lock to the file as it is then (`_Opened`), to the span of
its table found in spans.py; the new text is validated as `check` validates the whole file, and
written atomically (writers.py). With an index current for the bytes read (`_Opened.indexed`),
`add`, `edit` and `rm` validate only the table they write and ask the index for the rest (ids,
identifiers, types, citations); anything it cannot settle, and every refusal, goes the full way. On an overlay (`[catalog] extends`), a change to a source of the
base is written as a change entry (`id` plus the fields given, `unset = [...]`), a removal as
`remove = true`.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from invmap import overlay
from invmap.canonical import dumps, dumps_overlay, entry_toml
from invmap.catalog import parse_bytes, resolve_overlay, validate_bytes
from invmap.errors import CatalogError, NotFoundError, UsageError
from invmap.fields import KINDS, STORED_FIELDS
from invmap.location import Location, shipped_path
from invmap.reading import BOM, read_bytes
from invmap.spans import comment_lines, plain_tables, span_of
from invmap.validation import identifier_clashes
from invmap.writers import locked, newline_of, require_writable, write_atomic, write_output


class NoSuchId(NotFoundError):
    """No source has this id (the CLI then resolves the text as a name, as `show` would)."""


class Removed(NotFoundError):
    """The id names a base source that this overlay removes (`rm --undo` brings it back)."""


def ordered_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A source's keys in the declared field order, then an overlay's `remove` and `unset`."""
    keys = [k for k in (*STORED_FIELDS, *overlay.PATCH_KEYS) if k in entry]
    return {k: entry[k] for k in [*keys, *(k for k in entry if k not in keys)]}


def table_text(entry: dict[str, Any], newline: str) -> str:
    # `[[sources]]` and the entry as a table of its own: tomli_w would write a short array of tables
    # inline (`sources = [{...}]`), which after another table's keys would belong to that table.
    return ("[[sources]]\n" + entry_toml(ordered_entry(entry))).replace("\n", newline)


class _Opened:
    """A catalog file as read under its lock: its bytes, parsed or validated on demand, its text and
    its own line ending (taken once the bytes have parsed: a file that is not UTF-8 is refused first).
    Its index key is taken before the read and checked after it: `indexed()` asks `index` (a higher
    layer's `fastwrite.Way`, given by the caller; None: never asked) for the index of exactly the
    bytes read."""

    def __init__(self, path: str | Path, index: Any = None) -> None:
        from invmap.cache import enabled, key_of

        self.path, self.name, self.index = path, str(path), index
        self.key = key_of(self.name) if enabled() and index is not None else None
        self.data = read_bytes(self.name)
        if self.key is not None and key_of(self.name) != self.key:
            self.key = None  # changed while read (by something that does not take the lock)

    def indexed(self) -> Any:
        """The file's current index and its sources' tables (`fastwrite.Indexed`), or None."""
        return None if self.index is None else self.index.indexed(self)

    def table(self) -> dict[str, Any]:
        return parse_bytes(self.data, self.name)

    def catalog(self) -> Any:
        """The file validated as `check` validates it (an overlay merged first)."""
        return validate_bytes(self.data, self.name)

    @cached_property
    def text(self) -> str:
        return self.data.decode("utf-8")  # a leading BOM stays, as does every line's own ending

    @property
    def newline(self) -> str:
        return newline_of(self.text)

    def write(self, text: str, verb: str, *, was_valid: bool = True) -> Any:
        """Validate the new text as `check` would, then replace the file with it (written as built: no
        line ending translated). With `was_valid` False (the file not validated yet): a file that was
        already invalid is reported as such (exit 3). Returns the new catalog."""
        try:
            updated = validate_bytes(text.encode("utf-8"), self.name)
        except CatalogError as exc:
            if not was_valid:
                self.catalog()  # raises the file's own problems
            raise UsageError(
                f"cannot {verb} {self.path}:\n" + "\n".join(f"  {p.split(': ', 1)[-1]}" for p in exc.problems)
            ) from None
        write_atomic(self.path, text, newline="")
        return updated


def _appended(text: str, block: str, newline: str) -> str:
    body = text if text.endswith("\n") or not text.lstrip(BOM) else text + newline
    return body + (newline if body.lstrip(BOM) else "") + block


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


def _with_change(text: str, raw: dict[str, Any], ident: str, change: _Change, newline: str, path: str) -> str:
    """The text with the source `ident`'s table changed, or (a base source) a change entry appended."""
    n = _own_index(raw, ident)
    if n is None:
        entry = _changed({"id": ident}, change.fields, change.unset, in_base=True)
        return _appended(text, table_text(entry, newline), newline)
    entry = _changed(dict(raw["sources"][n]), change.fields, change.unset, change.in_base)
    return _replaced(text, span_of(text, raw["sources"], n, path), table_text(entry, newline))


class _Change(NamedTuple):
    """What is done to one source: fields set, fields cleared, and whether the base holds it."""

    fields: dict[str, Any]
    unset: Sequence[str]
    in_base: bool


class ListChange(NamedTuple):
    """What `edit` does to one list field: items to add and to remove, or (`replace`) the whole list."""

    add: Sequence[Any] = ()
    remove: Sequence[Any] = ()
    replace: Sequence[Any] | None = None


class Edit(NamedTuple):
    """What `edit_source` did: the source after it, its id after it, and its stored fields before and
    after (JSON forms, absent ones left out): the CLI says what changed."""

    source: Any
    ident: str
    before: dict[str, Any]
    after: dict[str, Any]


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
    """The keys a source is found by as an identifier (as `index.rows.source_keys` makes them)."""
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


def _base_ids(raw: dict[str, Any], path: str) -> set[str]:
    """The ids of the sources an overlay's base holds (empty for a catalog that extends nothing)."""
    if overlay.extends_of(raw) is None:
        return set()
    merged = resolve_overlay({"catalog": raw.get("catalog"), "sources": []}, path, [], [])
    return {s["id"] for s in merged.get("sources", []) if isinstance(s, dict) and isinstance(s.get("id"), str)}


def _id_of(source: Any) -> Any:
    return source.get("id") if isinstance(source, dict) else source.id


# --- add ---------------------------------------------------------------------------------------


def add_source(location: Location, entry: dict[str, Any], allow_duplicate: bool = False, index: Any = None) -> Any:
    """Append one `[[sources]]` table to the file, keeping everything already in it byte for byte.
    Returns the source as added.

    Under the file's lock: the catalog is re-read, must be valid (else CatalogError, exit 3), and the
    new source is checked exactly as `check` checks a file, against the others too (a duplicate id is
    refused); a rejected add is a UsageError (exit 2) and the file is not touched. The file's line
    ending (LF or CRLF) is kept. With a current index (`index`, see `_Opened`; `fastwrite.added`),
    the new table alone is validated and the index says the id and identifiers are free.
    """
    path = require_writable(location)
    with locked(path):
        file = _Opened(path, index)
        block = ("[[sources]]\n" + entry_toml(entry)).replace("\n", file.newline)  # never an inline array
        text = _appended(file.text, block, file.newline)
        added = None if index is None else index.added(file, block, entry, allow_duplicate)
        if added is not None:
            write_atomic(file.path, text, newline="")
            return added
        if plain_tables(file.text.removeprefix(BOM), file.name) is not None:  # extends nothing: validated once
            updated = _valid_after_add(file, text, entry, allow_duplicate)
            write_atomic(file.path, text, newline="")
            return updated.sources[-1]
        _refused_add(file.catalog(), entry, allow_duplicate)  # an invalid catalog is refused before anything else
        updated = file.write(text, "add this source to")
        return next(s for s in reversed(updated.sources) if s.id == entry["id"])


def _refused_add(current: Any, entry: dict[str, Any], allow_duplicate: bool) -> None:
    """Why `add` refuses `entry` beside the catalog's sources: its id taken (the file's own, or a
    base's, which an overlay's table would patch), or (unless `allow_duplicate`) an identifier held."""
    ident = entry.get("id")
    if any(s.id == ident for s in current.sources):
        raise UsageError(f"id '{ident}' already exists; use `invmap edit {ident}`, or --id for a new one")
    if not allow_duplicate:
        for other, what in identifier_clashes(entry, current.sources):
            raise UsageError(
                f"{what} is already in the map, as {other}: one source, added twice?",
                hint="pass --allow-duplicate to add it anyway",
            )


def _valid_after_add(file: _Opened, text: str, entry: dict[str, Any], allow_duplicate: bool) -> Any:
    """A file that extends nothing, with `entry` appended, validated once (not before and after): a valid
    result holds unique ids, and the appended source is its last. Only when the result is invalid is
    the file as it was validated too, so each refusal is worded as before (exit 3 for a file that was
    already invalid, the taken id or identifier, else the new source's problems)."""
    try:
        updated = validate_bytes(text.encode("utf-8"), file.name)
    except CatalogError:
        _refused_add(file.catalog(), entry, allow_duplicate)
        return file.write(text, "add this source to")  # raises the new text's problems (exit 2)
    if not allow_duplicate:
        _refused_add(_Sources(updated.sources[:-1]), entry, allow_duplicate)
    return updated


class _Sources(NamedTuple):
    sources: Sequence[Any]


# --- edit --------------------------------------------------------------------------------------


def edit_source(
    location: Location,
    target: str,
    changes: dict[str, Any],
    unset: Sequence[str],
    check_types: Callable[[list[str]], None] | None = None,
    lists: dict[str, ListChange] | None = None,
    flags: dict[str, str] | None = None,
    index: Any = None,
) -> Edit:
    """Change fields of the source `target` names exactly (`target_id`, checked under the lock);
    `unset` names optional fields to clear; `lists` changes list fields item by item (`flags` names
    their options in messages); `check_types` is called with the catalog's types before anything
    changes (it may respell `changes["type"]`). Nothing is written when nothing would change.
    `index`: as `add_source`'s."""
    path = require_writable(location)
    with locked(path):
        file = _Opened(path, index)
        done = (
            None if index is None else index.edited(file, target, changes, unset, check_types, lists or {}, flags or {})
        )
        if done is not None:
            return done
        raw = file.table()
        sources = _sources_held(file, raw)
        ident = _target_in(file, raw, sources, target)
        if check_types is not None:
            check_types(_types_of(sources))
        before = stored_values(next(s for s in sources if _id_of(s) == ident))
        fields, cleared = _with_lists(before, changes, unset, lists or {}, flags or {}, ident)
        change = _Change(fields, cleared, ident in _base_ids(raw, file.name))
        if "id" in change.fields and change.fields["id"] != ident and change.in_base:
            raise UsageError(f"cannot change the id of '{ident}', a source of the catalog {path} extends")
        if _planned(before, change) == before:  # every value already so: the file stays as it is
            return Edit(next(s for s in file.catalog().sources if s.id == ident), ident, before, before)
        new_text = _with_change(file.text, raw, ident, change, file.newline, file.name)
        updated = file.write(new_text, f"change '{ident}' in", was_valid=False)
        new_id = change.fields.get("id", ident)
        source = next(s for s in updated.sources if s.id == new_id)
        return Edit(source, new_id, before, stored_values(source))


def _sources_held(file: _Opened, raw: dict[str, Any]) -> list[Any]:
    """The sources an edit may name: the file's own tables (no second parse), or an overlay's merged map."""
    if overlay.extends_of(raw) is None:
        return [s for s in raw.get("sources") or () if isinstance(s, dict)]
    return list(file.catalog().sources)


def _target_in(file: _Opened, raw: dict[str, Any], sources: list[Any], target: str) -> str:
    """`target_id` among `sources`; when it names none, an invalid catalog is reported as such (exit 3)."""
    try:
        return target_id(sources, target, _removed_ids(raw), file.path)
    except NotFoundError:
        file.catalog()
        raise


def _types_of(sources: list[Any]) -> list[str]:
    """The catalog's types, each once, in case-blind order (what `check_types` compares against)."""
    return distinct_types([s.get("type") if isinstance(s, dict) else s.type for s in sources])


def distinct_types(types: list[Any]) -> list[str]:
    """Each type once, in case-blind order."""
    return list(dict.fromkeys(sorted((t for t in types if isinstance(t, str)), key=str.casefold)))


def _with_lists(
    before: dict[str, Any],
    changes: dict[str, Any],
    unset: Sequence[str],
    lists: dict[str, ListChange],
    flags: dict[str, str],
    ident: str,
) -> tuple[dict[str, Any], list[str]]:
    """`changes` and `unset` with each list change applied to the list as the file holds it now: an
    emptied list is unset."""
    changes, unset = dict(changes), list(unset)
    for name, change in lists.items():
        value = _listed(list(before.get(name, [])), change, flags.get(name, name), ident)
        if value:
            changes[name] = value
        elif name in before:
            unset.append(name)
    return changes, unset


def _planned(before: dict[str, Any], change: _Change) -> dict[str, Any]:
    """The source's stored values as the change would leave them."""
    after = {**before, **stored_values(change.fields)}
    return {k: v for k, v in after.items() if k not in change.unset or k in change.fields}


def edit_sources(location: Location, changes: dict[str, dict[str, Any]]) -> Any:
    """Change fields of several sources (id -> changes) in one write: every change is made to the
    text, the result validated as a whole, then written once; any problem writes nothing (`refresh
    --write`). Returns the catalog."""
    path = require_writable(location)
    with locked(path):
        file = _Opened(path)
        raw = file.table()
        current = file.catalog()  # an invalid catalog is reported as such (exit 3)
        missing = [i for i in changes if i not in {s.id for s in current.sources}]
        if missing:
            raise NoSuchId(f"no source with id {', '.join(repr(m) for m in missing)} in {path}")
        text, newline = file.text, file.newline
        in_base = _base_ids(raw, file.name)
        for ident, fields in changes.items():
            if "id" in fields and fields["id"] != ident and ident in in_base:
                raise UsageError(f"cannot change the id of '{ident}', a source of the catalog {path} extends")
            raw = parse_bytes(text.encode("utf-8"), file.name)
            text = _with_change(text, raw, ident, _Change(fields, (), ident in in_base), newline, file.name)
        return file.write(text, "change sources in", was_valid=False)


# --- rm, rm --undo -----------------------------------------------------------------------------


class Citing(NamedTuple):
    """A report of the file that cites sources being removed: its place among the file's reports,
    its id, and its `sources` without them."""

    n: int
    ident: str
    kept: list[Any]


def citing_reports(raw: dict[str, Any], idents: Sequence[str]) -> list[Citing]:
    """The file's own reports that cite any of `idents` (a base's are dropped by the merge itself)."""
    gone = set(idents)
    reports = raw.get("reports")
    out = []
    for n, r in enumerate(reports if isinstance(reports, list) else ()):
        cited = r.get("sources") if isinstance(r, dict) else None
        if isinstance(cited, list) and gone.intersection(s for s in cited if isinstance(s, str)):
            out.append(Citing(n, str(r.get("id")), [s for s in cited if s not in gone]))
    return out


_REPORTS_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*reports[ \t]*\]\][ \t]*(?:#[^\n]*)?\r?$", re.M)
_SOURCES_KEY = re.compile(r"^([ \t]*)sources[ \t]*=[ \t]*\[[^\]]*\]", re.M)


def _without_citations(text: str, citing: list[Citing], newline: str, path: str) -> str:
    """Each citing report's `sources = [...]` rewritten without the removed ids, every other byte
    kept; checked to parse back to exactly those lists (else refused, as an edit in place is)."""
    starts = [m.start() for m in _REPORTS_HEADER.finditer(text)]
    ends = [*starts[1:], len(text)]
    pieces, at = [], 0
    for c in sorted(citing, key=lambda c: c.n):
        if c.n >= len(starts):
            break
        table = text[starts[c.n] : ends[c.n]]
        match = _SOURCES_KEY.search(table)
        if match is None:
            break
        items = "".join(f"{match.group(1)}    {json.dumps(s)},{newline}" for s in c.kept)
        value = f"{match.group(1)}sources = [{newline}{items}{match.group(1)}]" if c.kept else "sources = []"
        pieces += [text[at : starts[c.n]], table[: match.start()], value, table[match.end() :]]
        at = ends[c.n]
    out = "".join(pieces) + text[at:]
    reports = parse_bytes(out.encode("utf-8"), path).get("reports") or []
    if len(pieces) != 4 * len(citing) or any(reports[c.n].get("sources") != c.kept for c in citing):
        raise UsageError(
            f"cannot drop citations in {path} in place: its reports are not plain [[reports]] tables",
            hint="'invmap fmt' rewrites it in the canonical form, which can be",
        )
    return out


def remove_sources(
    location: Location, targets: Sequence[str], drop_citations: bool = False, index: Any = None
) -> tuple[list[str], int]:
    """Remove the sources `targets` name exactly (on an overlay, hide the base's with `remove = true`).
    Reports of the file that cite one block the removal, said once with their count, unless
    `drop_citations` (their citation of it goes, as an overlay's removal drops it from the base's).
    Returns the ids removed and how many reports lost a citation. `index`: as `add_source`'s."""
    path = require_writable(location)
    with locked(path):
        file = _Opened(path, index)
        removed = None if index is None else index.removed(file, targets)
        if removed is not None:
            return removed, 0
        first = file.table()
        plain = overlay.extends_of(first) is None  # its own tables are its sources: validated once, after
        sources = _sources_held(file, first)
        idents = list(dict.fromkeys(_target_in(file, first, sources, t) for t in targets))
        known = {_id_of(s) for s in sources}
        text, newline = file.text, file.newline
        in_base = _base_ids(first, file.name)
        for ident in idents:
            raw = first if text is file.text else parse_bytes(text.encode("utf-8"), file.name)
            n = _own_index(raw, ident)
            if n is None:  # only the base has it
                text = _appended(text, table_text({"id": ident, "remove": True}, newline), newline)
                continue
            span = span_of(text, raw["sources"], n, file.name)
            if ident in in_base:
                text = _replaced(text, span, table_text({"id": ident, "remove": True}, newline))
            else:
                text = _removed(text, span)
        citing = citing_reports(first, idents)
        _refuse_removal(file, plain, known, idents, citing, drop_citations)
        if citing:
            text = _without_citations(text, citing, newline, file.name)
        file.write(text, "remove from", was_valid=not plain)
        return idents, len(citing)


def _refuse_removal(
    file: _Opened, plain: bool, known: set[Any], idents: list[str], citing: list[Citing], drop_citations: bool
) -> None:
    """`rm` refused: every source would go, or reports cite one (without `drop_citations`). A file not
    validated yet (`plain`) that was already invalid is reported as such first (exit 3)."""
    path = file.path
    if plain and (not known - set(idents) or (citing and not drop_citations)):
        file.catalog()
    if len(known - set(idents)) == 0:
        raise UsageError(f"cannot remove every source of {path}: a catalog holds at least one")
    if citing and not drop_citations:
        named = ", ".join(f"'{i}'" for i in idents)
        few = ", ".join(c.ident for c in citing[:3]) + (", ..." if len(citing) > 3 else "")
        count = f"{len(citing)} report{'s' if len(citing) != 1 else ''}"
        raise UsageError(
            f"cannot remove {named} from {path}: {len(citing)} of its reports cite{'s' if len(citing) == 1 else ''} "
            f"{'it' if len(idents) == 1 else 'them'} ({few})",
            hint=f"--drop-citations removes the citation from the {count} (as an overlay's removal does)",
        )


def restore_sources(location: Location, idents: Sequence[str]) -> Any:
    """`rm --undo`: the overlay's `remove = true` taken back from each base source named (its table
    goes when it held nothing else), so the base's source shows again. Returns the catalog."""
    path = require_writable(location)
    with locked(path):
        file = _Opened(path)
        file.catalog()
        text, newline = file.text, file.newline
        for ident in dict.fromkeys(idents):
            raw = parse_bytes(text.encode("utf-8"), file.name)
            if ident not in _removed_ids(raw):
                if overlay.extends_of(raw) is None:
                    why = "only an overlay's removals can be undone (a removed table is gone from this file)"
                else:
                    why = "this overlay does not remove it"
                raise NotFoundError(f"nothing to undo for '{ident}' in {path}: {why}")
            n = _own_index(raw, ident)
            span = span_of(text, raw["sources"], n, file.name)
            entry = {k: v for k, v in raw["sources"][n].items() if k != "remove"}
            text = _removed(text, span) if set(entry) == {"id"} else _replaced(text, span, table_text(entry, newline))
        return file.write(text, "restore in")


# --- fmt, init ---------------------------------------------------------------------------------


def reformat(location: Location, check_only: bool, drop_comments: bool = False) -> bool:
    """`fmt`: True if the file was (or, with `check_only`, would be) rewritten. The canonical form has
    no comments: a file holding some is refused (exit 2, untouched) unless `drop_comments`."""
    if not check_only:
        require_writable(location)
    with locked(location.path) if not check_only else contextlib.nullcontext():
        file = _Opened(location.path)
        catalog = file.catalog()
        raw = file.table()
        canonical = dumps_overlay(raw) if overlay.extends_of(raw) is not None else dumps(catalog)
        current = file.text.removeprefix(BOM).replace("\r\n", "\n")
        if current == canonical:  # the content; the file's own line endings and BOM are its style
            return False
        comments = comment_lines(current)
        if comments and not check_only and not drop_comments:
            shown = ", ".join(map(str, comments[:10])) + (", ..." if len(comments) > 10 else "")
            many = len(comments) != 1
            raise UsageError(
                f"fmt would drop {len(comments)} comment{'s' if many else ''} "
                f"(line{'s' if many else ''} {shown}); --drop-comments to proceed"
            )
        if not check_only:
            bom = BOM if file.text.startswith(BOM) else ""
            write_atomic(location.path, bom + canonical, newline=file.newline)
        return True


def copy_shipped(target: str, force: bool) -> Path:
    """`invmap init`: a catalog of one's own, starting from the shipped one."""
    write_output(target, shipped_path().read_text(encoding="utf-8"), force=force)
    return Path(target)
