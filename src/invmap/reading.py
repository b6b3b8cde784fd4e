"""A file the user names, read with clear errors: its bytes (capped; a catalog only from a regular
file), its UTF-8 text, and a catalog's TOML table (deep nesting kept from the fast parser).

Every problem is a `CatalogError` naming the file (exit 3); a closed stdin is a `FileAccessError`
(exit 4). Catalogs and experiment records are read here; a file that cannot be opened or read is
worded by `inputfile.named_failures`, as every input file's is.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from invmap.errors import CatalogError, FileAccessError
from invmap.inputfile import named_failures, open_regular
from invmap.location import MAX_VAR, STDIN, max_size, read_capped

BOM = "\ufeff"  # the byte-order mark some editors write at a UTF-8 file's start


def read_stdin(what: str, limit: int) -> bytes:
    """Standard input's bytes, at most `limit + 1` of them; a closed or failing stdin is a
    FileAccessError (exit 4: a standard stream cannot be used). `what`: `the catalog`, `a record`."""
    stream = getattr(sys.stdin, "buffer", None) if sys.stdin is not None else None
    if stream is None or sys.stdin.closed:
        raise FileAccessError(f"cannot read {what} from stdin: it is closed")
    try:
        return read_capped(stream, limit)
    except (OSError, ValueError) as exc:
        raise FileAccessError(f"cannot read {what} from stdin: {getattr(exc, 'strerror', None) or exc}") from None


def read_bytes(path: str) -> bytes:
    """The file's bytes, or stdin's for `-`; at most `max_size()` bytes, read only from what can be read.

    A missing file, a folder, an unreadable or oversize file is a CatalogError (exit 3); a closed
    stdin is a FileAccessError (exit 4: a standard stream cannot be used).
    """
    limit = max_size()
    too_big = f"larger than {limit:,} bytes (${MAX_VAR} sets the limit)"
    if path == STDIN:
        data = read_stdin("the catalog", limit)
    else:
        try:
            with named_failures(path, "is a directory, not a catalog file", _unreadable_catalog(path)):
                data = _read_regular(path, limit, too_big)
        except MemoryError:
            raise CatalogError(path, [too_big]) from None
    if len(data) > limit:
        raise CatalogError(path, [too_big])
    return data


def _unreadable_catalog(path: str) -> Callable[[OSError], CatalogError]:
    def unreadable(exc: OSError) -> CatalogError:
        denied = isinstance(exc, PermissionError)
        return CatalogError(path, ["permission denied" if denied else f"cannot be read: {exc.strerror or exc}"])

    return unreadable


def _read_regular(path: str, limit: int, too_big: str) -> bytes:
    # `open_regular`: opening a FIFO never waits for a writer, and what is opened is checked to be a
    # regular file by its descriptor.
    with open_regular(path, hint=None) as (handle, size):
        if size > limit:
            raise CatalogError(path, [too_big])
        return read_capped(handle, limit)


def utf8_text(data: bytes, path: str, problem: str = "not UTF-8 text (invalid byte at line {line})") -> str:
    """UTF-8 text (a byte-order mark some editors write is dropped), or a CatalogError saying
    `problem` with the line of the first invalid byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CatalogError(path, [problem.format(line=line)]) from None


def decode(data: bytes, path: str) -> str:
    """A catalog's UTF-8 text (a byte-order mark some editors write is dropped), or a CatalogError."""
    text = utf8_text(data, path)
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


def read_table(path: str) -> dict[str, Any]:
    """Read and parse a catalog file, letting go of its bytes before parsing (a large file's peak)."""
    data = read_bytes(path)
    text = decode(data, path)
    del data
    return parse_text(text, path)
