"""Opening an input file the user names (a catalog, an experiment record, a model's config.json, a
Prometheus scrape, a benchmark's results): every failure to open or read it becomes one error naming
the file, and nothing waits forever on a FIFO or a device (`open_regular`). A measurement's inputs
(`--metrics`, `--bench`, `--model`) may be a FIFO that a program writes to (`<(curl ...)`, a named
pipe): it is read once a writer is there, and refused when none comes within FIFO_WAIT seconds."""

from __future__ import annotations

import io
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

from invmap.errors import CatalogError, FileAccessError, InvmapError
from invmap.location import read_capped as read_at_most  # a chunk at a time, never cap + 1 bytes at once

STREAM_HINT = "to stream, pipe it in and give '-' (stdin)"
FIFO_WAIT = 2.0  # seconds a FIFO read as a measurement waits for a program to open it for writing
_POLL = 0.02  # seconds between two looks for that writer


def kind_of(mode: int) -> str:
    """`a FIFO`, `a character device`, ...: what a path that is not a regular file is."""
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    kinds += ((stat.S_ISSOCK, "a socket"),)
    return next((name for test, name in kinds if test(mode)), "not a file")


@contextmanager
def open_regular(path: str, hint: str | None = STREAM_HINT, fifo: bool = False) -> Iterator[tuple[IO[bytes], int]]:
    """The regular file at `path`, opened for reading, and its size. It is opened with O_NONBLOCK,
    so a FIFO with no writer never blocks the open, and what was opened is then checked, by its
    descriptor (no window between a check and the open), to be a regular file: a FIFO, a device or
    a socket is a FileAccessError (exit 4) saying what it is. With `fifo`, a FIFO is read instead
    (its size is given as 0) once a program writes to it (`_fifo_stream`). A folder raises
    IsADirectoryError and any other failure its OSError, for `named_failures` to word."""
    seen = os.stat(path).st_mode  # a socket cannot even be opened: its kind is said first
    if not (stat.S_ISREG(seen) or stat.S_ISDIR(seen) or (fifo and stat.S_ISFIFO(seen))):
        raise FileAccessError(f"cannot read {path}: it is {kind_of(seen)}, not a regular file", hint=hint)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if fifo and stat.S_ISFIFO(info.st_mode):
        with _fifo_stream(fd, path, hint) as stream:
            yield stream, 0
        return
    with open(fd, "rb") as handle:
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(info.st_mode):
            raise FileAccessError(f"cannot read {path}: it is {kind_of(info.st_mode)}, not a regular file", hint=hint)
        yield handle, info.st_size


def _fifo_stream(fd: int, path: str, hint: str | None) -> IO[bytes]:
    """The FIFO opened (without waiting) as `fd`, read as a stream once a program has it open for
    writing. A read that would block says a writer is there (nothing written yet), and bytes say so
    too; an end of file says no program has it open (or one wrote nothing and closed it), and it is
    looked at again until FIFO_WAIT seconds have passed, then refused: FileAccessError (exit 4). The
    descriptor is then made blocking, as stdin is: a writer that keeps it open without writing is
    waited on, as a pipe into stdin would be; the bytes are capped by the reader, as stdin's are."""
    end = time.monotonic() + FIFO_WAIT
    try:
        first = _first_bytes(fd, end)
        if first is None:
            raise FileAccessError(
                f"cannot read {path}: it is a FIFO no program wrote to within {FIFO_WAIT:g} s", hint=hint
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(_Prefixed(fd, first))


def _first_bytes(fd: int, end: float) -> bytes | None:
    """What a writer has written so far (b"": it is there, nothing written yet), or None when no
    program had the FIFO open for writing by `end` (monotonic seconds)."""
    while True:
        try:
            first = os.read(fd, 1 << 16)
        except BlockingIOError:
            return b""
        if first:
            return first
        if time.monotonic() >= end:
            return None
        time.sleep(_POLL)


class _Prefixed(io.RawIOBase):
    """A FIFO's descriptor read as a raw stream, the bytes already taken from it (`first`) first."""

    def __init__(self, fd: int, first: bytes) -> None:
        self.fd = fd
        self.first = first

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        if self.first:
            n = min(len(buffer), len(self.first))
            buffer[:n] = self.first[:n]
            self.first = self.first[n:]
            return n
        data = os.read(self.fd, len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


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
    fifo: bool = False,
) -> bytes:
    """The whole regular file (`open_regular`: a device is refused, never waited on, with `hint`; a
    FIFO too, unless `fifo`: then it is read once written to), refused (exit 3, `too_large`) past
    `cap` bytes; failures as `named_failures`."""
    with named_failures(path, folder, unreadable), open_regular(path, hint, fifo) as (handle, size):
        if size > cap:
            raise CatalogError(path, [too_large])
        data = read_at_most(handle, cap)
    if len(data) > cap:
        raise CatalogError(path, [too_large])
    return data
