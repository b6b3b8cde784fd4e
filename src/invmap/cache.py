"""invmap's cache folder and what identifies a file for it: where the index (and `check --links`'s
results) may be kept, and the key that must be unchanged for a kept index to count.

Used by the catalog (an overlay's bases), the index, metadata and links, and the completion fast
path: no typing, json or hashlib here (a TAB press reads it).
"""

from __future__ import annotations

import os
import stat

from invmap import __version__
from invmap.fields import SCHEMA

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NO_CACHE_VAR = "INVMAP_NO_CACHE"


def enabled() -> bool:
    return os.environ.get(NO_CACHE_VAR, "") in ("", "0")


def folder() -> str:
    """`$XDG_CACHE_HOME/invmap`; a relative XDG_CACHE_HOME is ignored, as the XDG rule says."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "invmap")


def cache_folder() -> str | None:
    """invmap's cache folder when it may be used (ours, not a symlink, caching not turned off):
    the index lives there, and `check --links` keeps its results there."""
    return usable_folder(create=True) if enabled() else None


def ours(info: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else."""
    return info.st_uid == os.geteuid() and not info.st_mode & 0o022


def usable_folder(create: bool) -> str | None:
    """The cache folder if it is ours (created 0700 if asked), else None. A folder that is a symlink,
    or not ours, is never written or chmodded: the index is then kept in memory."""
    path = folder()
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return None
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
                os.chmod(path, 0o700)
                info = os.lstat(path)
        except OSError:
            return None
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        return None  # a symlink (lstat), a file, or another user's folder
    if info.st_mode & 0o077:
        if not create:
            return None
        try:  # made by an older invmap (0755): made private before it is used
            os.chmod(path, 0o700)
        except OSError:
            return None
    return path


def key_of(path: str) -> dict[str, Any] | None:
    """What must be unchanged for an index to count; None for what cannot have one (stdin, a FIFO)."""
    if path == "-":
        return None
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return {
        "path": real,
        "size": st.st_size,
        "mtime": st.st_mtime_ns,
        "inode": st.st_ino,
        "dev": st.st_dev,
        "ctime": st.st_ctime_ns,
        "version": __version__,
        "schema": SCHEMA,
    }
