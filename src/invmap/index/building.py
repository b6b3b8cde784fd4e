"""Where an index is built: in a temporary file in the cache folder, synced and renamed into place
(readers never see half of one; SIGINT, SIGTERM or SIGHUP during a build removes the partial
file), else in `:memory:` for input that cannot have a persisted index (`-c -`, a FIFO,
`INVMAP_NO_CACHE=1`, an unusable cache folder). Also tidies what older versions left behind."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
from collections.abc import Callable, Sequence

from invmap.cache import enabled, usable_folder
from invmap.index.cached import index_path, open_current
from invmap.index.fill import fill
from invmap.trace import trace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What earlier versions of invmap left in the cache folder and this one never reads: round-one
# marshal caches, and index files named by the older scheme (24 hex digits; now 16).
_LEFT_BEHIND = re.compile(r"(?:catalog|index)-[0-9a-f]{8}\.marshal|index-[0-9a-f]{24}\.sqlite3|\.index-\w+\.tmp")
STALE_TMP_SECONDS = 3600  # a temporary index this old is a crashed build's, not a running one's


def _tidy(where: str) -> None:
    """Remove what older invmap versions (and crashed builds) left in the cache folder: only files
    matching their names, regular, owned by this user; never a symlink; never failing."""
    import time

    try:
        names = os.listdir(where)
    except OSError:
        return
    now = time.time()
    for name in names:
        if not _LEFT_BEHIND.fullmatch(name):
            continue
        path = os.path.join(where, name)
        with contextlib.suppress(OSError):
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                continue
            if name.endswith(".tmp") and now - info.st_mtime < STALE_TMP_SECONDS:
                continue
            os.unlink(path)


def _sync(path: str) -> None:
    """fsync a file or folder (a folder: so that a rename into it is on disk too)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def build(
    catalog: Any,
    key: dict[str, Any] | None,
    progress: Callable[[int], None] | None = None,
    bases: Sequence[dict[str, Any]] = (),
) -> sqlite3.Connection:
    """Index `catalog` (a Catalog, or a `validation.Validation` to index as it is validated): persisted
    for `key` where the cache folder is usable, else in memory."""
    from invmap.writers import Stopped, signals_clean_up

    where = usable_folder(create=True) if key is not None and enabled() else None
    if where is not None:
        try:  # SIGINT, SIGTERM, SIGHUP while building: the partial file is removed, then exit 128 + N
            with signals_clean_up():
                return _build_persisted(catalog, key, progress, bases, where)
        except Stopped as stopped:
            raise SystemExit(128 + stopped.signum) from None
        except _InMemory as fallback:
            catalog = fallback.catalog
            progress = None  # the rows were counted once already
    trace("index: in memory")
    con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    fill(con, catalog, None, progress)
    return con


class _InMemory(Exception):
    """The persisted build could not be done (or opened after): index `catalog` in memory instead."""

    def __init__(self, catalog: Any) -> None:
        super().__init__("in memory")
        self.catalog = catalog


def _build_persisted(
    catalog: Any, key: Any, progress: Callable[[int], None] | None, bases: Sequence[dict[str, Any]], where: str
) -> sqlite3.Connection:
    from invmap.validation import Validation

    target = index_path(key)  # type: ignore[arg-type]
    tmp = None
    import tempfile

    _tidy(where)
    try:
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".index-", suffix=".tmp")
        os.close(fd)
        os.chmod(tmp, 0o600)
        con = sqlite3.connect(tmp, isolation_level=None, check_same_thread=False)
        con.execute("PRAGMA page_size = 16384")  # fewer, fuller pages for the full-text index
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        try:
            catalog = fill(con, catalog, key, progress, bases)
        finally:
            con.close()
        _sync(tmp)  # on disk before it takes the index's name: a crash never leaves half a file there
        os.replace(tmp, target)
        tmp = None
        _sync(where)
        opened = open_current(key)  # type: ignore[arg-type]
        if opened is not None:
            trace(f"index: built {target}")
            return opened
    except (OSError, sqlite3.Error):
        if isinstance(catalog, Validation):  # the rest is still to be checked: then kept in memory
            for _ in catalog.chunks():
                pass
            catalog = catalog.catalog()
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    raise _InMemory(catalog)
