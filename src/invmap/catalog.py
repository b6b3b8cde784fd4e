"""Find, load, validate and write catalog files.

Every problem a user can cause (a missing file, bad TOML, a wrong field, a duplicate id) becomes a
`CatalogError` that names the file, the source and the field; a file that cannot be written is a
`FileAccessError` (exit 4). Writers lock, re-read, write atomically, and write through symlinks.
Nothing here prints.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from invmap.errors import CatalogError, FileAccessError, UsageError
from invmap.fields import FIELDS, MAX_ID, MAX_NAME, STORED_FIELDS, TABLE_FIELDS

REQUIRED_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.required)

# Which catalog is active lives in location.py (cheap to import: every command needs it, and only
# the commands that read or write a catalog file need the rest of this module).
from invmap.location import MAX_VAR, STDIN, Location, is_shipped, max_size, read_capped, shipped_path
from invmap.vocabulary import LAYER_CODES

if TYPE_CHECKING:  # pydantic models are built on first load, not when --help or --version runs
    from invmap.model import Catalog


def read_bytes(path: str) -> bytes:
    """The file's bytes, or stdin's for `-`; at most `max_size()` bytes, read only from what can be read.

    A missing file, a folder, an unreadable or oversize file is a CatalogError (exit 3); a closed
    stdin is a FileAccessError (exit 4: a standard stream cannot be used).
    """
    limit = max_size()
    too_big = f"larger than {limit:,} bytes (${MAX_VAR} sets the limit)"
    if path == STDIN:
        if sys.stdin is None or sys.stdin.closed:
            raise FileAccessError("cannot read the catalog from stdin: it is closed")
        try:
            data = read_capped(sys.stdin.buffer, limit)
        except (OSError, ValueError) as exc:
            raise FileAccessError(
                f"cannot read the catalog from stdin: {getattr(exc, 'strerror', None) or exc}"
            ) from None
        if len(data) > limit:
            raise CatalogError(path, [too_big])
        return data
    try:
        # O_NONBLOCK: opening a FIFO never waits for a writer; what is opened is then checked, by its
        # descriptor (no window between a check and the open), to be a regular file.
        seen = os.stat(path).st_mode  # a socket cannot even be opened: its kind is said first
        if not (stat.S_ISREG(seen) or stat.S_ISDIR(seen)):
            raise FileAccessError(f"cannot read {path}: it is {_kind_of(seen)}, not a regular file")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as handle:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(info.st_mode):
                raise FileAccessError(f"cannot read {path}: it is {_kind_of(info.st_mode)}, not a regular file")
            if info.st_size > limit:
                raise CatalogError(path, [too_big])
            data = read_capped(handle, limit)
    except FileNotFoundError:
        raise CatalogError(path, ["no such file"]) from None
    except IsADirectoryError:
        raise CatalogError(path, ["is a directory, not a catalog file"]) from None
    except PermissionError:
        raise CatalogError(path, ["permission denied"]) from None
    except MemoryError:
        raise CatalogError(path, [too_big]) from None
    except OSError as exc:
        raise CatalogError(path, [f"cannot be read: {exc.strerror or exc}"]) from None
    if len(data) > limit:
        raise CatalogError(path, [too_big])
    return data


def decode(data: bytes, path: str) -> str:
    """UTF-8 text (a byte-order mark some editors write is dropped), or a CatalogError."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CatalogError(path, [f"not UTF-8 text (invalid byte at line {line})"]) from None
    if not text or text.isspace():  # (not `strip()`: a copy of the whole text)
        raise CatalogError(path, ["is empty: a catalog needs at least one [[sources]] table"])
    return text


def parse(data: bytes, path: str) -> dict[str, Any]:
    """TOML bytes -> a table; undecodable, malformed or absurdly nested text is a CatalogError."""
    return parse_text(decode(data, path), path)


# Nesting a catalog needs is 3 or 4 levels; toml-rs recurses on the native stack (a file nested
# 100,000 levels deep crashes the process), so it only sees text that cannot nest deeper than this.
FAST_PARSE_MAX_OPEN = 256


def _cannot_nest_deeply(text: str) -> bool:
    """True when the text holds at most FAST_PARSE_MAX_OPEN opening brackets besides the `[[sources]]`
    header lines (which open and close on their own line): nesting can never be deeper than that. A
    smaller text over that count (a catalog with reports: a `sources = [...]` list each) has its
    real depth measured, strings and comments skipped."""
    headers = text.count("\n[[sources]]\n") + text.startswith("[[sources]]\n")
    if text.count("[") + text.count("{") - 2 * headers <= FAST_PARSE_MAX_OPEN:
        return True
    return len(text) <= DEPTH_SCAN_MAX and _depth(text) <= FAST_PARSE_MAX_OPEN


DEPTH_SCAN_MAX = 4 * 2**20  # characters: a larger text that may nest deeply goes to tomli
_TOKENS = re.compile(r'"""|\'\'\'|\\.|["\'#\n\[\]{}]', re.S)


def _depth(text: str) -> int:
    """The deepest bracket nesting of a TOML text, brackets inside strings and comments not counted
    (an unclosed string counts as the rest of the text: the parser refuses it anyway)."""
    depth = deepest = 0
    inside: str | None = None  # the quote that opened the string we are in, or "#" in a comment
    for m in _TOKENS.finditer(text):
        token = m.group()
        if inside is not None:
            if token.startswith("\\") and inside in ("'", "'''", "#"):  # no escapes there
                token = token[1:] or token
                if inside == "#" and token == "\n":
                    inside = None
                elif inside == "'" and token == "'":
                    inside = None
                elif inside == "'''" and token == "'" and text.startswith("''", m.end()):
                    inside = None
                continue
            if token == inside or (inside == "#" and token == "\n"):
                inside = None
            continue
        if token in ('"""', "'''", '"', "'", "#"):
            inside = token
        elif token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def parse_text(text: str, path: str) -> dict[str, Any]:
    """TOML text -> a table. toml-rs (compiled Rust) parses a 100,000-source catalog in ~0.6 s against
    tomli's ~3 s; it is used when the text cannot nest deeply, and anything it refuses is parsed again
    by tomli, whose error messages (line and column) are the ones reported."""
    if _cannot_nest_deeply(text):
        try:
            import toml_rs

            return toml_rs.loads(text)
        except Exception:  # noqa: BLE001 - tomli decides, and words the error
            pass
    import tomli

    try:
        return tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise CatalogError(path, [f"invalid TOML: {exc}"]) from None
    except RecursionError:
        raise CatalogError(path, ["invalid TOML: nested too deeply"]) from None
    except MemoryError:
        raise CatalogError(path, ["too large to parse in the memory available"]) from None


def _kind_of(mode: int) -> str:
    """`a FIFO`, `a character device`, ...: what a path that is not a regular file is."""
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    kinds += ((stat.S_ISSOCK, "a socket"),)
    return next((name for test, name in kinds if test(mode)), "not a file")


def read_table(path: str) -> dict[str, Any]:
    """Read and parse a catalog file, letting go of its bytes before parsing (a large file's peak)."""
    data = read_bytes(path)
    text = decode(data, path)
    del data
    return parse_text(text, path)


def load(location: Location | str) -> Catalog:
    """Read and validate a catalog, or raise one CatalogError listing every problem. Complete when it
    returns: nothing is deferred. (Query commands read the SQLite index, `index.py`, built from this.)"""
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
    """A catalog file's bytes, validated as `check` validates the file (an overlay merged first)."""
    validation = Validation(resolve_overlay(parse(data, path), path, [], problems := []), path, problems)
    for _ in validation.chunks():
        pass
    return validation.catalog()


VALIDATE_CHUNK = 10_000  # sources validated at a time in a large catalog


def validate(raw: dict[str, Any], path: str) -> Catalog:
    """Validate a parsed catalog, or raise one CatalogError listing every problem.

    A large catalog's sources are validated in chunks, each raw entry dropped from `raw` once its
    record exists, so the parsed table and the records are never both whole in memory. `raw` is
    consumed: callers parse it for this call alone.
    """
    stream = Validation(raw, path)
    for _ in stream.chunks():
        pass
    return stream.catalog()


class Validation:
    """A catalog validated a chunk of sources at a time (`index.py` builds the index from each chunk
    while the next is validated). `chunks()` yields the records of each chunk while no problem has
    been found (and goes on checking the rest once one has, yielding nothing more); `catalog()` then
    returns the whole catalog or raises one CatalogError with every problem, in the order a single
    pass over the file reports them."""

    def __init__(self, raw: dict[str, Any], path: str, problems: list[str] | None = None) -> None:
        self.raw, self.path = raw, path
        self.problems = [*(problems or ()), *duplicate_id_problems(raw), *place_problems(raw)]
        self.source_problems: list[str] = []
        self.records: list[Any] | None = None
        sources = raw.get("sources")
        self.total = len(sources) if isinstance(sources, list) else 0

    def level_titles(self) -> dict[str, str]:
        """The levels' titles as the file gives them (checked with the rest by `catalog()`)."""
        layers = self.raw.get("layers")
        out = {}
        for code, value in layers.items() if isinstance(layers, dict) else ():
            title = value.get("title") if isinstance(value, dict) else value
            if isinstance(code, str) and isinstance(title, str):
                out[code] = title
        return out

    def chunks(self) -> Iterator[list[Any]]:
        sources = self.raw.get("sources")
        if not (isinstance(sources, list) and sources):
            return
        from pydantic import TypeAdapter, ValidationError

        from invmap.model import Source

        adapter = TypeAdapter(list[Source])
        self.records = []
        for start in range(0, len(sources), VALIDATE_CHUNK):
            part = sources[start : start + VALIDATE_CHUNK]
            chunk: list[Any] = []
            try:
                chunk = adapter.validate_python(part, strict=True)
            except ValidationError as exc:
                for err in exc.errors(include_url=False):
                    err["loc"] = ("sources", start + err["loc"][0], *err["loc"][1:])
                    self.source_problems.append(describe_error(err, self.raw))
            except RecursionError:
                self.source_problems.append(f"sources {start + 1} to {start + len(part)}: nested too deeply")
            del part
            for i in range(start, min(start + VALIDATE_CHUNK, len(sources))):
                sources[i] = None  # its record exists (or its problems are written): let the parsed entry go
            self.records.extend(chunk)
            if chunk and not self.source_problems and not self.problems:
                yield chunk

    def catalog(self) -> Catalog:
        from pydantic import ValidationError

        from invmap.model import Catalog

        raw = self.raw
        records = self.records
        head = raw if records is None else {**{k: v for k, v in raw.items() if k != "sources"}, "sources": records}
        problems = self.source_problems + self.problems
        catalog: Catalog | None = None
        try:
            catalog = Catalog.model_validate(head)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            if records is not None:  # source problems are already counted; the empty list is not one
                errors = [err for err in errors if not err["loc"] or err["loc"][0] != "sources"]
            problems = [describe_error(err, raw) for err in errors] + problems
        except RecursionError:
            problems.insert(0, "nested too deeply")
        if catalog is not None:
            problems += report_problems(catalog)
        if problems or catalog is None:
            raise CatalogError(self.path, problems)
        return catalog


def report_problems(catalog: Catalog) -> list[str]:
    """What no single report can know: an id or URL given twice, a source id the catalog lacks, a
    secondary level that repeats the primary."""
    known = {s.id for s in catalog.sources}
    ids: dict[str, int] = {}
    urls: dict[str, int] = {}
    out = []
    for n, r in enumerate(catalog.reports, start=1):
        where = f"report {n} ({r.id})"
        if r.id in ids:
            out.append(f"{where}: duplicate id '{r.id}' (first used by report {ids[r.id]})")
        ids.setdefault(r.id, n)
        url = r.url.rstrip("/")
        if url in urls:
            out.append(f"{where}: url is also report {urls[url]}'s")
        urls.setdefault(url, n)
        if r.secondary == r.primary:
            out.append(f"{where}: secondary repeats primary ({r.primary}); leave it out")
        out += [f"{where}: no source '{s}' in this catalog" for s in r.sources if s not in known]
    return out


_HEADER_LINE = re.compile(r"[ \t]*\[")
_LINE_THEN_HEADER = re.compile(r"\n[ \t]*\[")  # ~6x faster than `^` with re.M over a large text
_SOURCES_LINE = re.compile(r"[ \t]*\[\[[ \t]*sources[ \t]*\]\][ \t]*(?:#[^\n]*)?\r?$", re.M)
STREAM_FROM = 4 * VALIDATE_CHUNK  # sources: a smaller file is parsed whole


class StreamedValidation(Validation):
    """A catalog parsed and validated a chunk of `[[sources]]` tables at a time. Only a file whose
    every header from the first `[[sources]]` on is a `[[sources]]` header, and which extends nothing,
    is read this way. The chunks are cut at header lines: a cut that fell inside a multi-line string
    would leave that chunk unparsable, and any problem at all (a parse error, an invalid field, a
    duplicate id) sends the whole file through `Validation`, whose messages are the ones reported."""

    def __init__(self, text: str, head: dict[str, Any], cuts: list[int], total: int, path: str) -> None:
        super().__init__(head, path)
        self.text, self.cuts, self.total = text, cuts, total
        self.fallback: Validation | None = None

    @classmethod
    def of(cls, text: str, path: str) -> StreamedValidation | None:
        if text.count("[[sources]]") < STREAM_FROM:
            return None
        starts = ([0] if text[:1] in ("[", " ", "\t") and _HEADER_LINE.match(text) else []) + [
            m.start() + 1 for m in _LINE_THEN_HEADER.finditer(text)
        ]

        def is_sources(at: int) -> bool:
            return text.startswith("[[sources]]\n", at) or bool(_SOURCES_LINE.match(text, at))

        first = next((i for i, at in enumerate(starts) if is_sources(at)), None)
        if first is None or not all(map(is_sources, starts[first:])):
            return None
        sources = starts[first:]
        try:
            head = parse_text(text[: sources[0]], path)
        except CatalogError:
            return None
        from invmap import overlay

        if overlay.extends_of(head) is not None or "sources" in head:
            return None
        cuts = [*sources[::VALIDATE_CHUNK], len(text)]
        return cls(text, head, cuts, len(sources), path)

    def chunks(self) -> Iterator[list[Any]]:
        from pydantic import TypeAdapter, ValidationError

        from invmap.model import Source

        adapter = TypeAdapter(list[Source])
        self.records = []
        seen: set[str] = set()
        for start, end in zip(self.cuts, self.cuts[1:]):
            try:
                part = parse_text(self.text[start:end], self.path).get("sources")
                if not isinstance(part, list):
                    raise CatalogError(self.path, ["not [[sources]] tables"])
                chunk = adapter.validate_python(part, strict=True)
            except (CatalogError, ValidationError, RecursionError, MemoryError):
                break
            ids = [s.id for s in chunk]
            if len(set(ids)) != len(ids) or seen.intersection(ids):
                break
            seen.update(ids)
            self.records.extend(chunk)
            yield chunk
        else:
            return
        self._fall_back()

    def _fall_back(self) -> None:
        """A problem somewhere: the whole file again, as one table, for every problem in its words."""
        self.records = None
        self.fallback = Validation(parse_text(self.text, self.path), self.path)
        for _ in self.fallback.chunks():
            pass

    def catalog(self) -> Catalog:
        if self.fallback is not None:
            return self.fallback.catalog()
        self.raw = {**self.raw, "sources": []}
        return super().catalog()


def warnings(catalog: Catalog) -> list[str]:
    """What `check` mentions without failing: ids and names too long to show or type comfortably."""
    out = []
    for position, s in enumerate(catalog.sources, start=1):
        if len(s.id) > MAX_ID:
            out.append(f"source {position} ({s.id}): id is {len(s.id)} characters; at most {MAX_ID} read well")
        if len(s.name) > MAX_NAME:
            out.append(f"source {position} ({s.id}): name is {len(s.name)} characters; at most {MAX_NAME} read well")
    return out + duplicate_warnings(catalog) + type_warnings(catalog)


# The identifiers two sources should not share (a code repository may serve several papers).
_UNIQUE_IDENTIFIERS = {"arxiv": "arXiv id", "doi": "DOI", "url": "link"}


def _identifier_keys(get: Callable[[str], Any]) -> dict[str, str]:
    """key -> how a message names it (`arXiv id 2309.06180`), for a source's arXiv id, DOI and own link."""
    from invmap.identifiers import canonical_link

    keys = {}
    for name, label in _UNIQUE_IDENTIFIERS.items():
        value = get(name)
        if isinstance(value, str) and value:
            key = {"arxiv": value.split("v")[0], "doi": value.lower(), "url": canonical_link(value)}[name]
            keys[f"{name}:{key}"] = f"{label} {value}"
    return keys


def identifier_clashes(entry: dict[str, Any], sources: Any) -> list[tuple[str, str]]:
    """(other source's id, what they share) for each arXiv id, DOI or own link of `entry` that a source
    of `sources` holds already."""
    wanted = _identifier_keys(entry.get)
    out = []
    for s in sources:
        for key in _identifier_keys(lambda name, s=s: getattr(s, name, None)).keys() & wanted.keys():
            out.append((s.id, wanted[key]))
    return out


def duplicate_warnings(catalog: Catalog) -> list[str]:
    """Two sources holding one arXiv id, DOI or own link: most likely one source added twice."""
    first: dict[str, tuple[int, str]] = {}
    out = []
    for position, s in enumerate(catalog.sources, start=1):
        for key, what in _identifier_keys(lambda name, s=s: getattr(s, name, None)).items():
            if key in first:
                n, other = first[key]
                out.append(f"source {position} ({s.id}): {what} is also source {n}'s ({other}): one source twice?")
            else:
                first[key] = (position, s.id)
    return out


def type_warnings(catalog: Catalog) -> list[str]:
    """Types that differ only by case or by one or two letters (`Curent` beside `Current`): most
    likely one type spelled two ways. The rarer spelling is named, with its sources' count."""
    from collections import Counter

    from rapidfuzz.distance import Levenshtein

    counts = Counter(s.type for s in catalog.sources)
    ordered = sorted(counts, key=lambda t: (-counts[t], t))
    out = []
    for n, rare in enumerate(ordered):
        for common in ordered[:n]:
            close = (
                rare.casefold() == common.casefold()
                or Levenshtein.distance(rare.casefold(), common.casefold(), score_cutoff=2) <= 2
            )
            if close and min(len(rare), len(common)) > 3:
                sources = "source" if counts[rare] == 1 else "sources"
                out.append(
                    f"type '{rare}' ({counts[rare]} {sources}) looks like '{common}' ({counts[common]}): one type?"
                )
                break
    return out


def duplicate_id_problems(raw: dict[str, Any]) -> list[str]:
    sources = raw.get("sources")
    if not isinstance(sources, list):
        return []
    seen: dict[str, int] = {}
    problems = []
    for position, entry in enumerate(sources, start=1):
        ident = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(ident, str):
            continue
        if ident in seen:
            problems.append(f"source {position} ({ident}): duplicate id '{ident}' (first used by source {seen[ident]})")
        else:
            seen[ident] = position
    return problems


def place_problems(raw: dict[str, Any]) -> list[str]:
    """A place needs a repository to be a permalink: its own `repo`, else the source's `code`."""
    from invmap.safe import escape

    sources = raw.get("sources")
    if not isinstance(sources, list):
        return []
    problems = []
    for position, entry in enumerate(sources, start=1):
        if not isinstance(entry, dict) or entry.get("code") or not isinstance(entry.get("places"), list):
            continue
        for n, item in enumerate(entry["places"]):
            if isinstance(item, dict) and not item.get("repo"):
                ident = entry.get("id")
                label = f"source {position} ({escape(ident)})" if isinstance(ident, str) else f"source {position}"
                problems.append(f"{label}: field 'places[{n}]': no repo, and the source has no code to default to")
    return problems


# What each pydantic error type means in a catalog, said in the catalog's own terms.
_EXPECTED = {
    "string_type": "text",
    "int_type": "an integer",
    "date_type": "a TOML date such as 2026-08-07 (no quotes)",
    "list_type": "an array",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "dict_type": "a table",
}


def number_text(value: int) -> str:
    """An integer as text, however long (Python refuses to write one of more than 4,300 digits)."""
    if -(10**18) < value < 10**18:
        return str(value)
    return f"of about {int(abs(value).bit_length() * 0.30103):,} digits"


def _describe_value(value: Any) -> str:
    from invmap.safe import escape

    kinds = {
        str: "text",
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        dt.date: "a date",
        dt.datetime: "a date-time",
        dt.time: "a time",
        list: "an array",
        dict: "a table",
    }
    kind = kinds.get(type(value), type(value).__name__)
    if isinstance(value, int) and not isinstance(value, bool):
        shown = number_text(value)
    else:
        shown = escape(repr(value)) if isinstance(value, (str, float)) else ""
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{kind} {shown}".strip()


def describe_error(err: Any, raw: dict[str, Any]) -> str:
    """One pydantic error -> `source 3 (flashattention): field 'year': expected an integer, got text '2022'`."""
    from invmap.model import FIRST_YEAR, LAST_YEAR
    from invmap.safe import escape

    loc = [part for part in err["loc"] if not (isinstance(part, str) and "[" in part)]  # drop validator names
    kind = err["type"]
    where = _where(loc, raw)
    field = escape(str(loc[-1])) if loc else ""
    value = err.get("input")
    if kind in ("missing", "too_short") and loc == ["sources"]:
        return "no sources: add at least one [[sources]] table"
    if len(loc) >= 3 and loc[-3] in TABLE_FIELDS and isinstance(loc[-2], int):
        return _column_error(where, str(loc[-3]), loc[-2], field, kind, value, err)
    if len(loc) >= 2 and loc[-2] in TABLE_FIELDS and isinstance(loc[-1], int) and kind in _EXPECTED:
        return f"{where}field '{escape(str(loc[-2]))}[{loc[-1]}]': expected a table, got {_describe_value(value)}"
    if kind == "missing":
        return f"{where}missing required field '{field}'"
    if kind == "extra_forbidden":
        return f"{where}unknown field '{field}'"
    if kind == "too_short":
        return f"{where}field '{field}': must not be an empty array (leave the field out instead)"
    if kind in _EXPECTED:
        return f"{where}field '{field}': expected {_EXPECTED[kind]}, got {_describe_value(value)}"
    if isinstance(loc[-1] if loc else None, int) and len(loc) >= 2:  # an item of a list: name the list
        field = f"{escape(str(loc[-2]))}[{loc[-1]}]"
    if kind == "string_pattern_mismatch":
        return f"{where}field '{field}': {_pattern_mismatch(field, value, (err.get('ctx') or {}).get('pattern'))}"
    if kind in ("greater_than_equal", "less_than_equal") and field == "year":
        return (
            f"{where}field 'year': implausible year {number_text(value) if isinstance(value, int) else value} "
            f"(expected {FIRST_YEAR} to {LAST_YEAR}, or leave it out for n.d.)"
        )
    message = escape(str(err["msg"]).removeprefix("Value error, "))
    return f"{where}field '{field}': {message}"


def _column_error(where: str, name: str, item: int, column: str, kind: str, value: Any, err: Any) -> str:
    """A problem in one column of one item of a list-of-tables field: `places[2].commit: ...`."""
    from invmap.fields import KINDS
    from invmap.model import COLUMN_FORMS
    from invmap.safe import escape

    at = f"{name}[{item}]"
    columns = KINDS[name].columns  # type: ignore[attr-defined]
    if kind == "missing":
        return f"{where}field '{at}': missing required key '{column}'"
    if kind == "extra_forbidden":
        return f"{where}field '{at}': unknown key '{column}' (its keys: {', '.join(c.name for c in columns)})"
    if kind in _EXPECTED:
        return f"{where}field '{at}.{column}': expected {_EXPECTED[kind]}, got {_describe_value(value)}"
    if kind == "string_pattern_mismatch":
        form = next((c.form for c in columns if c.name == column), "text")
        if form == "text" or (isinstance(value, str) and re.search(f"[{_forbidden()}]", value)):
            return f"{where}field '{at}.{column}': {_pattern_mismatch(column, value, err['ctx']['pattern'])}"
        return f"{where}field '{at}.{column}': {escape(repr(value))} is not {COLUMN_FORMS[form][1]}"
    return f"{where}field '{at}.{column}': {escape(str(err['msg']).removeprefix('Value error, '))}"


def _forbidden() -> str:
    from invmap.model import FORBIDDEN

    return FORBIDDEN


def _pattern_mismatch(field: str, value: Any, pattern: str | None) -> str:
    """What is wrong with a text that does not have its field's form: a control character, csv's list
    separator in a list item, nothing but spaces, or not the form a field like `arxiv` needs."""
    from invmap.fields import LIST_SEPARATOR
    from invmap.model import CLEAN_ITEM, CLEAN_PROSE, CLEAN_TEXT, FORBIDDEN, PATTERNS, PROSE_FORBIDDEN
    from invmap.safe import escape

    if isinstance(value, str):
        bad = re.search(f"[{PROSE_FORBIDDEN if pattern == CLEAN_PROSE else FORBIDDEN}]", value)
        if bad:
            return f"contains the control character U+{ord(bad.group()):04X}"
        if pattern == CLEAN_ITEM and LIST_SEPARATOR in value:
            return f"must not contain '{LIST_SEPARATOR}' (it separates list items in csv)"
        if pattern in (CLEAN_TEXT, CLEAN_ITEM):
            return "must not be empty"
    expected = PATTERNS[field][1] if field in PATTERNS else "a different form"
    return f"{escape(repr(value))} is not {expected}"


def _where(loc: list[Any], raw: dict[str, Any]) -> str:
    """`source 3 (flashattention): ` for a source's field, `[catalog]: ` for the catalog table."""
    from invmap.safe import escape

    if len(loc) >= 2 and loc[0] in ("sources", "reports") and isinstance(loc[1], int):
        position = loc[1] + 1
        entries = raw.get(loc[0])
        entry = entries[loc[1]] if isinstance(entries, list) and loc[1] < len(entries) else None
        ident = entry.get("id") if isinstance(entry, dict) else None
        kind = "source" if loc[0] == "sources" else "report"
        label = f"{kind} {position} ({escape(ident)})" if isinstance(ident, str) and ident else f"{kind} {position}"
        return f"{label}: "
    if loc and loc[0] == "layers" and len(loc) > 1:
        return f"[layers] {escape(str(loc[1]))}: " if len(loc) > 2 else "[layers]: "
    if loc and loc[0] == "catalog" and len(loc) > 1:
        return "[catalog]: "
    if loc and loc[0] == "glossary" and len(loc) > 1:
        return f"[glossary] {escape(str(loc[1]))}: " if len(loc) > 2 else "[glossary]: "
    return ""


def to_toml_dict(catalog: Catalog) -> dict[str, Any]:
    """The canonical table: fixed key order, absent optional values left out, no derived keys,
    no empty `[catalog]` or `[layers]` table."""
    out: dict[str, Any] = {}
    if (info := catalog.catalog) is not None:
        out["catalog"] = _present(info.model_dump())
    if catalog.layers:
        out["layers"] = {
            code: _present(catalog.layers[code].model_dump()) for code in LAYER_CODES if code in catalog.layers
        }
    if catalog.glossary:
        out["glossary"] = {term: _present(entry.model_dump()) for term, entry in catalog.glossary.items()}
    if catalog.reports:
        out["reports"] = [{k: v for k, v in _present(r.model_dump()).items() if v != ""} for r in catalog.reports]
    out["sources"] = [
        {f: value for f in STORED_FIELDS if (value := getattr(source, f)) is not None} for source in catalog.sources
    ]
    return out


def _present(table: dict[str, Any]) -> dict[str, Any]:
    """A table's keys with a value: None and empty lists are left out (the defaults say the same)."""
    return {k: v for k, v in table.items() if v is not None and v != []}


def dumps_overlay(raw: dict[str, Any]) -> str:
    """The canonical text of an overlay: its own tables only, in the order `dumps` writes a catalog
    (`extends` first), each source's fields in the declared order, then `remove` and `unset`."""
    import tomli_w

    from invmap.model import CatalogInfo, LayerInfo, Report, Term
    from invmap.overlay import PATCH_KEYS

    def ordered(table: Any, keys: Any) -> Any:
        if not isinstance(table, dict):
            return table
        known = [k for k in keys if k in table]
        return {k: table[k] for k in [*known, *(k for k in table if k not in known)]}

    out: dict[str, Any] = {}
    if "catalog" in raw:
        out["catalog"] = ordered(raw["catalog"], ("extends", *CatalogInfo.model_fields))
    if isinstance(raw.get("layers"), dict):
        layers = raw["layers"]
        codes = [c for c in LAYER_CODES if c in layers] + [c for c in layers if c not in LAYER_CODES]
        out["layers"] = {c: ordered(layers[c], LayerInfo.model_fields) for c in codes}
    if isinstance(raw.get("glossary"), dict):
        out["glossary"] = {t: ordered(v, Term.model_fields) for t, v in raw["glossary"].items()}
    for key, value in raw.items():
        if key not in ("catalog", "layers", "glossary", "reports", "sources"):
            out[key] = value
    sources = raw.get("sources")
    entries = [ordered(s, (*STORED_FIELDS, *PATCH_KEYS)) for s in sources] if isinstance(sources, list) else []
    reports = raw.get("reports")
    reported = [ordered(r, Report.model_fields) for r in reports] if isinstance(reports, list) else []
    return _with_sources(tomli_w.dumps(out), entries, reported)


def _with_sources(head: str, entries: list[dict[str, Any]], reports: list[dict[str, Any]] = ()) -> str:
    """`head`, then each report as a `[[reports]]` table and each source as a `[[sources]]` table of
    its own, a blank line between (tomli_w would write a list of short tables inline, as `sources =
    [...]`); the sources last, so that a large catalog can be read a chunk of sources at a time."""
    import tomli_w

    blocks = [head.rstrip("\n")] if head.strip() else []
    blocks += ["[[reports]]\n" + tomli_w.dumps(entry).rstrip("\n") for entry in reports]
    blocks += ["[[sources]]\n" + entry_toml(entry).rstrip("\n") for entry in entries]
    return "\n\n".join(blocks) + "\n"


def entry_toml(entry: dict[str, Any]) -> str:
    """One source's keys as TOML lines, in its order. A list of small tables (`places`) is an array of
    inline tables, one a line: tomli_w would write a long one as `[[places]]`, which under
    `[[sources]]` would be another array of the file, not the source's."""
    import tomli_w

    if not any(k in TABLE_FIELDS and isinstance(v, list) for k, v in entry.items()):
        return tomli_w.dumps(entry)
    parts = []
    for key, value in entry.items():
        if key in TABLE_FIELDS and isinstance(value, list) and all(isinstance(v, dict) for v in value):
            items = [
                "{ " + ", ".join(tomli_w.dumps({k: v}).rstrip("\n") for k, v in item.items()) + " }" for item in value
            ]
            parts.append(f"{key} = [\n" + "".join(f"    {item},\n" for item in items) + "]\n")
        else:
            parts.append(tomli_w.dumps({key: value}))
    return "".join(parts)


def dumps(catalog: Catalog) -> str:
    """The one canonical text of a catalog (what `invmap fmt` writes)."""
    import tomli_w

    table = to_toml_dict(catalog)
    entries = table.pop("sources")
    reports = table.pop("reports", [])
    return _with_sources(tomli_w.dumps(table), entries, reports)


# --- writing -----------------------------------------------------------------------------------


class _Stopped(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived during a write: remove the temporary file, leave the target
    as it was, then end with 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _signals_clean_up() -> Iterator[None]:
    def stop(signum: int, _frame: Any) -> None:
        raise _Stopped(signum)

    previous = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is not signal.SIG_IGN:  # an ignored signal stays ignored
                previous[sig] = signal.signal(sig, stop)
    except (ValueError, OSError, AttributeError):  # not the main thread, or no such signal here
        pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _writable(target: Path, info: os.stat_result) -> bool:
    """Whether a file may be replaced: its mode allows writing to someone (root bypasses the mode,
    so a 0444 file is refused by its bits) and this process may write it."""
    return bool(info.st_mode & 0o222) and os.access(target, os.W_OK)


def _committed() -> None:
    """The new file is in place: from now on SIGINT, SIGTERM and SIGHUP wait (blocked until the
    process ends), so a command that finished its write keeps its exit status and says what it did."""
    if hasattr(signal, "pthread_sigmask"):
        with contextlib.suppress(OSError, ValueError):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def resolve_target(path: str | Path) -> Path:
    """A symlink is written through: the file it points to is the one changed."""
    return Path(os.path.realpath(path))


def write_atomic(path: str | Path, text: str, *, newline: str = "\n") -> None:
    """Replace `path` with `text` all at once: a temp file in the same folder, fsync, rename.

    A symlink is followed; a device or FIFO is written in place; a new file gets the umask's mode,
    a replaced one keeps its mode. Whatever happens before the rename (an error, Ctrl-C, SIGTERM,
    SIGHUP), the old file stays as it was and the temporary file is removed. OSError -> FileAccessError.
    """
    target = resolve_target(path)
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise FileAccessError(f"cannot write {path}: {exc.strerror or exc}") from None
    if existing is not None and stat.S_ISREG(existing.st_mode) and not _writable(target, existing):
        raise FileAccessError(f"cannot write {path}: it is read-only (mode {existing.st_mode & 0o777:04o})")
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        if stat.S_ISDIR(existing.st_mode):
            raise UsageError(f"{path} is a directory: give a file path such as {Path(path) / 'catalog.toml'}")
        try:
            with open(target, "w", encoding="utf-8", newline=newline) as handle:
                handle.write(text)
        except OSError as exc:
            raise FileAccessError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    import tempfile

    tmp = None
    try:
        with _signals_clean_up():
            try:
                fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
                with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as handle:
                    handle.write(text)
                    handle.flush()
                    os.fsync(handle.fileno())
                mode = existing.st_mode & 0o7777 if existing is not None else 0o666 & ~_umask()
                if existing is not None and (existing.st_uid, existing.st_gid) != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(OSError):  # the owner is kept where this process may set it
                        os.chown(tmp, existing.st_uid, existing.st_gid)
                os.chmod(tmp, mode)
                os.replace(tmp, target)
                tmp = None
                _committed()
            finally:
                if tmp is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
    except OSError as exc:
        raise FileAccessError(f"cannot write {path}: {exc.strerror or exc}") from None
    except _Stopped as stopped:
        raise SystemExit(128 + stopped.signum) from None


@contextlib.contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """An exclusive lock on the file itself (through a symlink), held across a read-modify-write, so
    concurrent writers take turns and none loses another's update. Nothing is left beside the file.

    A writer replaces the file by a rename, so once the lock is ours the path may name a newer file
    than the one locked: then that one is locked instead. A path naming no file (yet), or something
    other than a regular file, needs no lock: creating a file refuses an existing one (`create_new`).
    """
    import fcntl

    target = resolve_target(path)
    while True:
        try:
            info = os.stat(target)
        except FileNotFoundError:
            yield
            return
        except OSError as exc:
            raise FileAccessError(f"cannot lock {path} for writing: {exc.strerror or exc}") from None
        if not stat.S_ISREG(info.st_mode):
            yield
            return
        fd = _open_for_lock(target, path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now = os.stat(target)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
                yield
                return
        finally:
            os.close(fd)  # closing releases the lock


def _open_for_lock(target: Path, shown: str | Path) -> int:
    for flags in (os.O_RDONLY, os.O_WRONLY):  # flock takes either; a 0200 file opens only for writing
        try:
            return os.open(target, flags | getattr(os, "O_CLOEXEC", 0))
        except PermissionError:
            continue
        except OSError as exc:
            raise FileAccessError(f"cannot lock {shown} for writing: {exc.strerror or exc}") from None
    raise FileAccessError(f"cannot lock {shown} for writing: permission denied")


def require_writable(location: Location) -> Path:
    """The path a write may go to; the shipped catalog and stdin are refused."""
    if location.is_stdin:
        raise UsageError("cannot write to a catalog read from stdin; pass --catalog PATH")
    if location.is_shipped:
        raise _shipped_refusal(location.path)
    return Path(location.path)


def _shipped_refusal(path: str) -> UsageError:
    return UsageError(
        f"refusing to change the catalog shipped with invmap ({path})",
        hint="start a catalog of your own with 'invmap init my-catalog.toml', then use "
        "'--catalog my-catalog.toml' or set INVMAP_CATALOG",
    )


BOM = "\ufeff"


def _newline_of(text: str) -> str:
    """The file's own line ending: its first line's (a file with none yet: LF)."""
    at = text.find("\n")
    return "\r\n" if at > 0 and text[at - 1] == "\r" else "\n"


def link_warning(path: str | Path) -> str | None:
    """A warning for a file with other hard links, which a replacing write leaves behind."""
    try:
        info = os.stat(resolve_target(path))
    except OSError:
        return None
    links = info.st_nlink
    if stat.S_ISREG(info.st_mode) and links > 1:
        return (
            f"{path} has {links - 1} other hard link{'s' if links > 2 else ''}: the rewritten file replaces "
            "this name only; the other names keep the old text"
        )
    return None


# --- editing -----------------------------------------------------------------------------------


def add_source(location: Location, entry: dict[str, Any], allow_duplicate: bool = False) -> Catalog:
    """Append one `[[sources]]` table to the file, keeping everything already in it byte for byte.

    Under the file's lock: the catalog is re-read, must be valid (else CatalogError, exit 3), and the
    new source is checked exactly as `check` checks a file, against the others too (a duplicate id is
    refused); a rejected add is a UsageError (exit 2) and the file is not touched. The file's line
    ending (LF or CRLF) is kept.
    """
    path = require_writable(location)
    with locked(path):
        data = read_bytes(str(path))
        current = validate_bytes(data, str(path))  # an invalid catalog is refused before anything else
        ident = entry.get("id")
        if any(s.id == ident for s in current.sources):  # the file's own, or a base's (an overlay would patch it)
            raise UsageError(f"id '{ident}' already exists; use `invmap edit {ident}`, or --id for a new one")
        if not allow_duplicate:
            for other, what in identifier_clashes(entry, current.sources):
                raise UsageError(
                    f"{what} is already in the map, as {other}: one source, added twice?",
                    hint="pass --allow-duplicate to add it anyway",
                )
        text = data.decode("utf-8")  # a leading BOM stays, as does every line's own ending
        newline = _newline_of(text)
        block = ("[[sources]]\n" + entry_toml(entry)).replace("\n", newline)  # never an inline array
        new_text = text + ("" if text.endswith("\n") or not text.lstrip(BOM) else newline) + newline + block
        try:
            updated = validate_bytes(new_text.encode("utf-8"), str(path))
        except CatalogError as exc:
            raise UsageError(
                f"cannot add this source to {path}:\n" + "\n".join(f"  {p.split(': ', 1)[-1]}" for p in exc.problems)
            ) from None
        write_atomic(path, new_text, newline="")  # written as built: no line ending translated
    return updated


# TOML's strings (each kind), comments, a `[` opening a line, and brackets: scanned token by token, a
# value's text is never taken for a header or a comment (`comment_lines`, `edits._spans_by_tokens`).
TOML_TOKEN = re.compile(
    r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""(?!")|"""(?:[^"\\]|\\[\s\S]|"(?!""))*""""?"?'
    r"|'''[\s\S]*?'''(?:'{1,2}(?!'))?"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'[^'\n]*'"
    r"|#[^\n]*"
    r"|(?:^|(?<=\n))[ \t]*\["
    r"|[\[\]{}]",
)


def comment_lines(text: str) -> list[int]:
    """The lines holding a TOML comment (whole-line or after a value), strings skipped whole."""
    lines = []
    for m in TOML_TOKEN.finditer(text):
        if m.group().startswith("#"):
            lines.append(text.count("\n", 0, m.start()) + 1)
    return lines


def reformat(location: Location, check_only: bool, drop_comments: bool = False) -> bool:
    """`fmt`: True if the file was (or, with `check_only`, would be) rewritten. The canonical form has
    no comments: a file holding some is refused (exit 2, untouched) unless `drop_comments`."""
    if not check_only:
        require_writable(location)
    with locked(location.path) if not check_only else contextlib.nullcontext():
        data = read_bytes(location.path)
        catalog = validate_bytes(data, location.path)
        text = data.decode("utf-8")
        raw = parse(data, location.path)
        from invmap import overlay

        canonical = dumps_overlay(raw) if overlay.extends_of(raw) is not None else dumps(catalog)
        current = text.removeprefix(BOM).replace("\r\n", "\n")
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
            bom = BOM if text.startswith(BOM) else ""
            write_atomic(location.path, bom + canonical, newline=_newline_of(text))
        return True


def copy_shipped(target: str, force: bool) -> Path:
    """`invmap init`: a catalog of one's own, starting from the shipped one."""
    write_output(target, shipped_path().read_text(encoding="utf-8"), force=force)
    return Path(target)


def write_output(target: str, text: str | Callable[[], str], *, force: bool = False) -> None:
    """Write an export, import or record to `target`; the CLI sends `-o -` to stdout before calling this.

    `text` may be a function: it is called under the target's lock, so text built from the file being
    replaced (`export -o CATALOG --force`) is built from what is there once the lock is held, and a
    concurrent `add` is never lost. A new file is created without ever replacing one that appeared
    meanwhile (refused, as an existing file is).

    Refused (exit 2): an empty path, a directory, an existing regular file without `force`, and the
    shipped catalog, with or without `force`.
    """
    if not target.strip():
        raise UsageError("a path is required")
    path = Path(target)
    make = text if callable(text) else (lambda: text)  # type: ignore[return-value]
    if path.is_dir():
        raise UsageError(f"{target} is a directory: give a file path such as {path / 'catalog.toml'}")
    if is_shipped(path):
        raise _shipped_refusal(target)
    if target.endswith(os.sep) or (os.altsep and target.endswith(os.altsep)):
        raise UsageError(f"no such directory: {target} (give a file path such as {path / 'catalog.toml'})")
    real = resolve_target(path)
    if not real.parent.is_dir():
        through = f" ({target} is a symbolic link to {real})" if path.is_symlink() else ""
        raise UsageError(f"no such directory: {real.parent if through else path.parent}{through}")
    exists = path.exists()
    regular = exists and stat.S_ISREG(os.stat(path).st_mode)
    if regular and not force:
        raise UsageError(f"{target} already exists", hint="pass --force to overwrite it")
    if exists and not regular:  # a device or FIFO: written in place
        write_atomic(path, make())
        return
    if not exists and not force:
        create_new(path, make())
        return
    with locked(path):
        write_atomic(path, make())


def create_new(path: Path, text: str) -> None:
    """Create `path` holding `text` all at once, refusing (exit 2) if it exists by then: the text goes
    to a temporary file, which is hard-linked to the name (a link never replaces a file)."""
    import tempfile

    target = resolve_target(path)
    tmp = None
    try:
        with _signals_clean_up():
            try:
                fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
                with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                    handle.write(text)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.chmod(tmp, 0o666 & ~_umask())
                try:
                    os.link(tmp, target)
                    _committed()
                except FileExistsError:
                    raise UsageError(f"{path} already exists", hint="pass --force to overwrite it") from None
                except OSError:  # a file system without hard links: the name is checked, then taken
                    if os.path.lexists(target):
                        raise UsageError(f"{path} already exists", hint="pass --force to overwrite it") from None
                    os.replace(tmp, target)
                    tmp = None
                    _committed()
            finally:
                if tmp is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
    except OSError as exc:
        raise FileAccessError(f"cannot write {path}: {exc.strerror or exc}") from None
    except _Stopped as stopped:
        raise SystemExit(128 + stopped.signum) from None
