"""Opening an input file the user names (a catalog, an experiment record, a model's config.json, a
Prometheus scrape, a benchmark's results): every failure to open or read it becomes one error naming
the file."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from invmap.errors import CatalogError, InvmapError
from invmap.location import read_capped as read_at_most  # a chunk at a time, never cap + 1 bytes at once


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
    path: str, cap: int, folder: str, too_large: str, unreadable: Callable[[OSError], InvmapError] | None = None
) -> bytes:
    """The whole file, refused (exit 3, `too_large`) past `cap` bytes; failures as `named_failures`."""
    with named_failures(path, folder, unreadable), open(path, "rb") as handle:
        data = read_at_most(handle, cap)
    if len(data) > cap:
        raise CatalogError(path, [too_large])
    return data
