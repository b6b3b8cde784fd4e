"""Opening a catalog's index: current from the cache, else built (one invmap building it at a time,
the others waiting for and reading what it built), else indexed in memory."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

from invmap.cache import enabled, key_of, usable_folder
from invmap.index.building import build
from invmap.index.cached import index_path, open_current
from invmap.index.reading import Index
from invmap.trace import trace

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

    from invmap.location import Location

PROGRESS_FROM = 8_000_000  # bytes of TOML: a first run this large reports progress (a bar on a terminal)


def open_catalog(
    location: Location, progress: Callable[[str, int], Callable[[str | None, int | None], None]] | None = None
) -> Index:
    """The index of the active catalog: current from the cache, else built (and persisted if it can be).
    A persisted index found damaged while it is read is rebuilt (and persisted again). `progress(path,
    size)` may return a reporter for a first run of a large catalog (the CLI draws a bar with it)."""
    key = key_of(location.path) if enabled() else None
    if key is not None:  # the size limit holds with a current index too (the rebuild checks it again)
        from invmap.location import MAX_VAR, max_size

        if key["size"] > (limit := max_size()):
            from invmap.errors import CatalogError

            raise CatalogError(location.path, [f"larger than {limit:,} bytes (${MAX_VAR} sets the limit)"])
    if key is not None and (con := open_current(key)) is not None:
        trace(f"index: current {index_path(key)}")
        return Index(con, lambda: _from_toml(location, key, None))
    if key is None:
        return Index(_from_toml(location, key, progress), lambda: _from_toml(location, None, None))
    with _one_builder(key) as waited:  # twenty first runs at once: one builds, the others read its index
        if waited:
            key = key_of(location.path)  # the catalog may have changed while we waited
            if key is not None and (con := open_current(key)) is not None:
                trace(f"index: current {index_path(key)} (built by another invmap)")
                return Index(con, lambda: _from_toml(location, key, None))
        return Index(_from_toml(location, key, progress), lambda: _from_toml(location, None, None))


@contextlib.contextmanager
def _one_builder(key: dict[str, Any]) -> Iterator[bool]:
    """Held while this catalog's index is built: an exclusive lock on `index-....lock` beside the
    index, so that one invmap builds it at a time. Yields whether another invmap held it first (it
    has then probably built the index). No lock to be had (no usable cache folder, a file system
    without locks): yields False and the build goes on unlocked, as before."""
    import fcntl

    if usable_folder(create=True) is None:
        yield False
        return
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(index_path(key)[: -len(".sqlite3")] + ".lock", flags, 0o600)
    except OSError:
        yield False
        return
    try:
        waited = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            trace("index: waiting for another invmap that is building it")
            waited = True
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield waited
    finally:
        os.close(fd)  # closing releases the lock


def _from_toml(location: Location, key: dict[str, Any] | None, progress: Any) -> sqlite3.Connection:
    from invmap import catalog

    try:
        size = os.stat(location.path).st_size if location.path != "-" else 0
    except OSError:
        size = 0
    report = progress(location.path, size) if progress is not None and size >= PROGRESS_FROM else None
    try:
        if report:
            report("reading", None)
        validation, bases = catalog.stream_with_bases(location.path)
        if report:
            report("indexing", validation.total)
        return build(validation, key, (lambda n: report(None, n)) if report else None, bases=bases)
    finally:
        if report:
            report("done", None)
