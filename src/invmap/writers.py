"""Writing files: every file invmap writes goes through here. A replacing write is atomic (a temporary
file in the same folder, fsync, rename, the folder synced; mode and owner kept; through a symlink), a
new file is created without ever replacing one (a hard link), a read-modify-write holds the file's
lock, and SIGINT, SIGTERM or SIGHUP during a write leave the old file and no temporary one. Also the
refusals (the shipped catalog, stdin, an existing file without --force) and a file's own line ending.

A file that cannot be written is a `FileAccessError` (exit 4); a refused target a `UsageError` (exit 2).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from invmap.errors import FileAccessError, UsageError
from invmap.location import Location, is_shipped


class Stopped(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived during a write: remove the temporary file, leave the target
    as it was, then end with 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def signals_clean_up() -> Iterator[None]:
    """While the block runs, SIGINT, SIGTERM and SIGHUP raise `Stopped` inside it (so that its
    `finally` removes what it left half made); the handlers before are restored after."""

    def stop(signum: int, _frame: Any) -> None:
        raise Stopped(signum)

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
        _write_in_place(path, target, existing, text, newline)
        return
    mode = existing.st_mode & 0o7777 if existing is not None else 0o666 & ~_umask()
    owner = (existing.st_uid, existing.st_gid) if existing is not None else None
    _through_temporary(path, target, text, newline, mode, owner, _replace)


def _write_in_place(path: str | Path, target: Path, existing: os.stat_result, text: str, newline: str) -> None:
    """A device or FIFO is written as it is (a folder is refused: a file path is wanted)."""
    if stat.S_ISDIR(existing.st_mode):
        raise UsageError(f"{path} is a directory: give a file path such as {Path(path) / 'catalog.toml'}")
    try:
        with open(target, "w", encoding="utf-8", newline=newline) as handle:
            handle.write(text)
    except OSError as exc:
        raise FileAccessError(f"cannot write {path}: {exc.strerror or exc}") from None


def create_new(path: Path, text: str) -> None:
    """Create `path` holding `text` all at once, refusing (exit 2) if it exists by then: the text goes
    to a temporary file, which is hard-linked to the name (a link never replaces a file)."""
    _through_temporary(path, resolve_target(path), text, "\n", 0o666 & ~_umask(), None, _link_new)


def replace_own_file(path: str | Path, text: str) -> None:
    """A file of invmap's own (a cache, a time stamp) replaced all at once, readable by its user only
    (0600): as `write_atomic`, but the command goes on after it (signals are not held)."""
    _through_temporary(path, Path(path), text, "\n", 0o600, None, _replace, final=False)


def _replace(tmp: str, target: Path, _shown: str | Path) -> bool:
    os.replace(tmp, target)
    return True


def _link_new(tmp: str, target: Path, shown: str | Path) -> bool:
    """The temporary file linked to the new name (False: the temporary name is still there to remove),
    or, on a file system without hard links, renamed to it once the name is checked to be free."""
    try:
        os.link(tmp, target)
        return False
    except FileExistsError:
        raise _exists_refusal(shown) from None
    except OSError:  # a file system without hard links: the name is checked, then taken
        if os.path.lexists(target):
            raise _exists_refusal(shown) from None
        return _replace(tmp, target, shown)


def _through_temporary(
    shown: str | Path,
    target: Path,
    text: str,
    newline: str,
    mode: int,
    owner: tuple[int, int] | None,
    put: Callable[[str, Path, str | Path], bool],
    *,
    final: bool = True,
) -> None:
    """`text` written to a temporary file beside `target` and synced, given `mode` (and `owner` where
    this process may set it), then put in place by `put` (True when it took the temporary file's
    name); the folder is synced so the new name is on disk too. Whatever stops it before, the
    temporary file is removed; a signal then ends the process with 128 + its number. A `final` write
    is what the command is for: once it is in place, signals wait until the process ends."""
    import tempfile

    tmp = None
    try:
        with signals_clean_up():
            try:
                fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
                with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as handle:
                    handle.write(text)
                    handle.flush()
                    os.fsync(handle.fileno())
                if owner is not None and owner != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(OSError):  # the owner is kept where this process may set it
                        os.chown(tmp, *owner)
                os.chmod(tmp, mode)
                if put(tmp, target, shown):
                    tmp = None
                if final:
                    _committed()
                sync_folder(target.parent)
            finally:
                if tmp is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
    except OSError as exc:
        raise FileAccessError(f"cannot write {shown}: {exc.strerror or exc}") from None
    except Stopped as stopped:
        raise SystemExit(128 + stopped.signum) from None


def sync_folder(folder: str | Path) -> None:
    """fsync a folder, so that a rename into it is on disk too; best effort (not every file system can)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


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


def _exists_refusal(path: str | Path) -> UsageError:
    return UsageError(f"{path} already exists", hint="pass --force to overwrite it")


def newline_of(text: str) -> str:
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
        raise _exists_refusal(target)
    if exists and not regular:  # a device or FIFO: written in place
        write_atomic(path, make())
        return
    if not exists and not force:
        create_new(path, make())
        return
    with locked(path):
        write_atomic(path, make())
