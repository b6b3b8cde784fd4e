"""One error hierarchy; the CLI maps each class to an exit code and a message on stderr.

Messages may quote what a user typed or what a catalog holds: the CLI escapes control characters
(`safe.escape`) before anything reaches the terminal.
"""

from __future__ import annotations


class InvmapError(Exception):
    """Base class: `exit_code` is the documented process exit status."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class NotFoundError(InvmapError):
    """No source matches, or a name matches several sources (exit 1)."""

    exit_code = 1

    def __init__(self, message: str, *, candidates: list[str] | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.candidates = candidates or []


class UsageError(InvmapError):
    """A value the user gave cannot be used: unknown layer, bad year, clashing options (exit 2)."""

    exit_code = 2


class CatalogError(InvmapError):
    """The catalog (or a record file) cannot be read or is invalid (exit 3); `problems` lists every one."""

    exit_code = 3

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        lines = [f"{path}: {p}" for p in problems]
        if len(lines) > 1:  # one line a problem, each naming the file, under a count
            lines.insert(0, f"{path} has {len(lines)} problems:")
        super().__init__("\n".join(lines))


class FileAccessError(InvmapError):
    """A file could not be read or written, or a standard stream (stdin, stdout) could not be used (exit 4)."""

    exit_code = 4


class NetworkError(FileAccessError):
    """A server could not be asked or answered badly: no such name, a refused connection, TLS, the
    deadline, an answer over the size cap, a malformed answer (exit 4). `kind` says which, for callers
    that sort failures (`check --links`): unresolved, refused, tls, timeout, too-large, error."""

    exit_code = 4

    def __init__(self, message: str, *, kind: str = "error", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.kind = kind
