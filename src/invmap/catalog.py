"""Load a catalog: read its file, merge an overlay over what it `extends` (recursively), and validate
the result. Complete when it returns, or one `CatalogError` naming the file, the source and the field.

Which catalog is active lives in location.py, reading a file in reading.py, validating in
validation.py, the canonical text in canonical.py, writing in writers.py and changing one in
edits.py. Nothing here prints.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from invmap.errors import CatalogError, FileAccessError
from invmap.fields import FIELDS
from invmap.location import STDIN, Location, shipped_path
from invmap.reading import decode, parse_text, read_bytes, read_table
from invmap.spans import plain_tables
from invmap.validation import STREAM_FROM, VALIDATE_CHUNK, StreamedValidation, Validation

if TYPE_CHECKING:  # pydantic models are built on first load, not when --help or --version runs
    from invmap.model import Catalog

REQUIRED_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.required)


def load(location: Location | str) -> Catalog:
    """Read and validate a catalog, or raise one CatalogError listing every problem. Complete when it
    returns: nothing is deferred. (Query commands read the SQLite index, `index/`, built from this.)"""
    path = location.path if isinstance(location, Location) else location
    return load_with_bases(path)[0]


def load_with_bases(path: str) -> tuple[Catalog, list[dict[str, Any]]]:
    """A catalog (an overlay merged over what it extends) and the index keys of the catalogs it
    extends (so that its index is rebuilt when any of them changes)."""
    validation, bases = stream_with_bases(path)
    for _ in validation.chunks():
        pass
    return validation.catalog(), bases


def stream_with_bases(path: str) -> tuple[Validation, list[dict[str, Any]]]:
    """`load_with_bases`, its sources to be validated a chunk at a time (`Validation`). A large file
    whose sources are plain `[[sources]]` tables at its end is also parsed a chunk at a time
    (`StreamedValidation`), so its whole parsed table never exists at once."""
    data = read_bytes(path)
    text = decode(data, path)
    del data
    streamed = StreamedValidation.of(text, path)
    if streamed is not None:
        return streamed, []
    bases: list[dict[str, Any]] = []
    problems: list[str] = []
    raw = resolve_overlay(parse_text(text, path), path, bases, problems)
    del text
    return Validation(raw, path, problems), bases


MAX_CHAIN = 16  # overlays of overlays, at most


def resolve_overlay(
    raw: dict[str, Any], path: str, bases: list[dict[str, Any]], problems: list[str], chain: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A parsed catalog, merged over what its `[catalog] extends` names (recursively). `bases` gains
    the index key of every file extended; `problems` what the overlay's entries cannot apply."""
    from invmap import overlay

    extends = overlay.extends_of(raw)
    if extends is None:
        return raw
    base = overlay.base_path(extends, path, str(shipped_path()))
    here = (*chain, os.path.realpath(path) if path != STDIN else STDIN)
    if os.path.realpath(base) in here:
        raise CatalogError(path, [f"[catalog] extends '{extends}', which extends this file again (a loop)"])
    if len(here) > MAX_CHAIN:
        raise CatalogError(path, [f"[catalog] extends a chain of more than {MAX_CHAIN} catalogs"])
    from invmap.cache import key_of

    # The base's key is taken BEFORE it is read (as the plain catalog path does) and checked again
    # after: a base replaced mid-read is read again, and a key that describes an older file than the
    # one read only ever costs a rebuild, never an index that stays stale.
    for _ in range(3):
        key = key_of(base)
        seen = len(bases)
        base_raw = resolve_overlay(read_table(base), base, bases, problems, here)
        if key_of(base) == key:
            break
        del bases[seen:]
    if key is not None:
        bases.append(key)
    merged, found = overlay.merge(base_raw, raw, REQUIRED_FIELDS)
    problems.extend(found)
    return merged


def chain_of(path: str) -> list[str]:
    """The files a catalog extends, nearest first (`where`); a file that cannot be read ends the chain
    (the command that reads it reports why)."""
    from invmap import overlay

    out: list[str] = []
    while len(out) < MAX_CHAIN:
        try:
            extends = overlay.extends_of(read_table(path))
        except (CatalogError, FileAccessError):
            break
        if extends is None:
            break
        path = overlay.base_path(extends, path, str(shipped_path()))
        if path in out:
            break
        out.append(path)
    return out


def validate_bytes(data: bytes, path: str) -> Catalog:
    """A catalog file's bytes, validated as `check` validates the file (an overlay merged first; a
    large plain file a chunk of tables at a time, as `load` reads it)."""
    text = decode(data, path)
    validation = StreamedValidation.of(text, path)
    if validation is None:
        validation = Validation(resolve_overlay(parse_text(text, path), path, [], problems := []), path, problems)
    for _ in validation.chunks():
        pass
    return validation.catalog()


def parse_bytes(data: bytes, path: str) -> dict[str, Any]:
    """`reading.parse` of a catalog file's bytes; a large file of plain `[[sources]]` tables is parsed
    a chunk of tables at a time (the fast parser takes each; the whole file, with its `[layers]` lists
    and reports, would go to tomli), and the whole text again should any chunk not parse as tables."""
    text = decode(data, path)
    found = plain_tables(text, path) if text.count("[[sources]]") >= STREAM_FROM else None
    if found is None:
        return parse_text(text, path)
    head, starts = found
    sources: list[Any] = []
    cuts = [*starts[::VALIDATE_CHUNK], len(text)]
    for start, end in zip(cuts, cuts[1:]):
        try:
            part = parse_text(text[start:end], path)
        except CatalogError:
            return parse_text(text, path)
        if list(part) != ["sources"] or not isinstance(part["sources"], list):
            return parse_text(text, path)
        sources.extend(part["sources"])
    return {**head, "sources": sources} if len(sources) == len(starts) else parse_text(text, path)
