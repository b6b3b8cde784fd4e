"""Parsed-catalog cache and completion index, in the user's cache folder.

Parsing and validating a 100,000-source catalog takes seconds; reading it back from here takes a
fraction of one. An entry is keyed on the catalog's real path, size, mtime and invmap's version, and
is ignored, never trusted, when missing, stale, corrupt or written by another version: the catalog
is then parsed as if there were no cache. marshal is the format because it is built in (nothing to
import on the TAB path, which is also why paths here are plain strings, not pathlib), fast, and cannot run code when it reads a tampered file.

`INVMAP_NO_CACHE=1` turns the cache off; `XDG_CACHE_HOME` moves it.
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib
from typing import TYPE_CHECKING, Any

from invmap import __version__

if TYPE_CHECKING:
    from invmap.complete import Index
    from invmap.model import Catalog

FORMAT = 2  # bump whenever what is stored changes shape
_RECORD_LEN = 15  # fields of model.Source; `accessed` (index 9) is stored as a date ordinal


def enabled() -> bool:
    return os.environ.get("INVMAP_NO_CACHE", "") in ("", "0")


def folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "invmap")


def key_of(path: str) -> list[Any] | None:
    """What must be unchanged for an entry to count: the file, its size and mtime, our version."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None
    return [FORMAT, __version__, sys.version_info[:2], real, st.st_size, st.st_mtime_ns]


def _entry(kind: str, key: list[Any]) -> str:
    # A short name for the catalog's path; a collision only costs a miss, since the key is checked.
    digest = zlib.crc32(key[3].encode("utf-8", "surrogateescape"))
    return os.path.join(folder(), f"{kind}-{digest:08x}.marshal")


def _read(kind: str, key: list[Any]) -> Any:
    try:
        with open(_entry(kind, key), "rb") as handle:
            blob = marshal.loads(handle.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(blob, dict) or blob.get("key") != _marshalable(key):
        return None
    return blob.get("data")


def _marshalable(key: list[Any]) -> list[Any]:
    return [tuple(k) if isinstance(k, tuple) else k for k in key]


def _write(kind: str, key: list[Any], data: Any) -> None:
    """Best effort: a cache that cannot be written (read-only home, full disk) is simply not used."""
    target = _entry(kind, key)
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder(), exist_ok=True)
        # No fsync: the rename keeps readers from ever seeing half a file, and an entry cut short
        # by a crash fails to load and is ignored; syncing 70 MB would add ~0.4 s to a first run.
        with open(tmp, "wb") as handle:
            handle.write(marshal.dumps({"key": _marshalable(key), "data": data}, 2))  # v2: 3x faster to write
        os.replace(tmp, target)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


def read_catalog(key: list[Any]) -> Catalog | None:
    data = _read("catalog", key)
    if data is None:
        return None
    try:
        return _thaw(data)
    except Exception:  # anything malformed inside a well-keyed entry: ignore it and re-parse
        return None


DEFER_FROM = 20_000  # sources; below this an entry is written at once (a few ms)
_pending: list[tuple[list[Any], Catalog]] = []


def write_catalog(key: list[Any], catalog: Catalog) -> None:
    """Store a freshly parsed catalog. A large one is stored after the command's output is done
    (see `finish`), so a first run does not wait ~0.5 s for a cache it does not itself need."""
    if len(catalog.sources) >= DEFER_FROM and hasattr(os, "fork"):
        _pending.append((key, catalog))
        return
    _write_now(key, catalog)


def _write_now(key: list[Any], catalog: Catalog) -> None:
    _write("catalog", key, _freeze(catalog))
    write_index(key, catalog)


def finish(wait: bool = False) -> None:
    """Write deferred entries in a forked child that lets go of stdout and stderr at once, so a
    reader of our output (a pipe, a benchmark) sees it end now; the parent does not wait unless told."""
    if not _pending:
        return
    jobs = list(_pending)
    _pending.clear()
    try:
        pid = os.fork()
    except OSError:  # no process to spare: write them now, as a small catalog would
        for key, catalog in jobs:
            _write_now(key, catalog)
        return
    if pid == 0:
        status = 1
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            for key, catalog in jobs:
                _write_now(key, catalog)
            status = 0
        finally:
            os._exit(status)
    if wait:
        os.waitpid(pid, 0)


def read_index(key: list[Any]) -> Index | None:
    data = _read("index", key)
    if not isinstance(data, dict) or not {"sources", "types", "layers"} <= data.keys():
        return None
    return data  # type: ignore[return-value]


def write_index(key: list[Any], catalog: Catalog) -> None:
    from invmap.complete import build_index

    index = build_index(((s.id, s.name, s.type) for s in catalog.sources), dict(catalog.layers))
    _write("index", key, dict(index))


def _freeze(catalog: Catalog) -> dict[str, Any]:
    rows = [[*s[:9], s.accessed.toordinal(), *s[10:]] for s in catalog.sources]
    info = catalog.catalog
    return {
        "catalog": [info.title, info.preface, list(info.procedure), info.afterword],
        "layers": dict(catalog.layers),
        "sources": rows,
    }


def _thaw(data: dict[str, Any]) -> Catalog:
    import datetime as dt

    from invmap.model import Catalog, CatalogInfo, Source

    # The fastest way to build 100,000 records: each stored row is a list in field order; swap the
    # date ordinal for a date (few distinct ones, so memoized) and make the tuple directly.
    dates: dict[int, dt.date] = {}
    new = tuple.__new__
    sources = []
    for row in data["sources"]:
        if len(row) != _RECORD_LEN:
            raise ValueError("record of the wrong length")
        ordinal = row[9]
        row[9] = dates.get(ordinal) or dates.setdefault(ordinal, dt.date.fromordinal(ordinal))
        sources.append(new(Source, row))
    title, preface, procedure, afterword = data["catalog"]
    info = CatalogInfo.model_construct(title=title, preface=preface, procedure=procedure, afterword=afterword)
    return Catalog.model_construct(catalog=info, layers=data["layers"], sources=sources)
