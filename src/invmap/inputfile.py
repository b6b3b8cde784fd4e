"""Opening an input file the user names (a catalog, an experiment record, a model's config.json, a
Prometheus scrape, a benchmark's results): every failure to open or read it becomes one error naming
the file, and nothing waits forever on a FIFO or a device (`open_regular`)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

from invmap.errors import CatalogError, FileAccessError, InvmapError
from invmap.location import read_capped as read_at_most  # a chunk at a time, never cap + 1 bytes at once

STREAM_HINT = "to stream, pipe it in and give '-' (stdin)"


def kind_of(mode: int) -> str:
    """`a FIFO`, `a character device`, ...: what a path that is not a regular file is."""
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    kinds += ((stat.S_ISSOCK, "a socket"),)
    return next((name for test, name in kinds if test(mode)), "not a file")


@contextmanager
def open_regular(path: str, hint: str | None = STREAM_HINT) -> Iterator[tuple[IO[bytes], int]]:
    """The regular file at `path`, opened for reading, and its size. It is opened with O_NONBLOCK,
    so a FIFO with no writer never blocks the open, and what was opened is then checked, by its
    descriptor (no window between a check and the open), to be a regular file: a FIFO, a device or
    a socket is a FileAccessError (exit 4) saying what it is. A folder raises IsADirectoryError and
    any other failure its OSError, for `named_failures` to word."""
    seen = os.stat(path).st_mode  # a socket cannot even be opened: its kind is said first
    if not (stat.S_ISREG(seen) or stat.S_ISDIR(seen)):
        raise FileAccessError(f"cannot read {path}: it is {kind_of(seen)}, not a regular file", hint=hint)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb") as handle:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(info.st_mode):
            raise FileAccessError(f"cannot read {path}: it is {kind_of(info.st_mode)}, not a regular file", hint=hint)
        yield handle, info.st_size


@contextmanager
def named_failures(
    path: str, folder: str, unreadable: Callable[[OSError], InvmapError] | None = None
) -> Iterator[None]:
    """Inside, an OSError becomes: a missing file "no such file", a folder `folder` (exit 3), any
    other `unreadable(exc)`, by default exit 3 saying why."""
    try:
        yield
    except OSError as exc:
        raise _failure(path, exc, folder, unreadable) from None


def _failure(path: str, exc: OSError, folder: str, unreadable: Callable[[OSError], InvmapError] | None) -> InvmapError:
    if isinstance(exc, FileNotFoundError):
        return CatalogError(path, ["no such file"])
    if isinstance(exc, IsADirectoryError):
        return CatalogError(path, [folder])
    if unreadable is not None:
        return unreadable(exc)
    if isinstance(exc, PermissionError):
        return CatalogError(path, ["cannot be read (permission denied)"])
    return CatalogError(path, [f"cannot be read: {exc.strerror or exc}"])


def read_capped(
    path: str,
    cap: int,
    folder: str,
    too_large: str,
    unreadable: Callable[[OSError], InvmapError] | None = None,
    hint: str | None = None,
) -> bytes:
    """The whole regular file (`open_regular`: a FIFO or device is refused, never waited on, with
    `hint`), refused (exit 3, `too_large`) past `cap` bytes; failures as `named_failures`."""
    with named_failures(path, folder, unreadable), open_regular(path, hint) as (handle, size):
        if size > cap:
            raise CatalogError(path, [too_large])
        data = read_at_most(handle, cap)
    if len(data) > cap:
        raise CatalogError(path, [too_large])
    return data
