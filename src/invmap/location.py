"""Which catalog is active, and why: `--catalog`, `$INVMAP_CATALOG`, or the one shipped with invmap.

Kept apart from catalog.py so that every command can find its catalog without importing what
reading, validating and writing one takes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from invmap.errors import UsageError

ENV_VAR = "INVMAP_CATALOG"
MAX_VAR = "INVMAP_MAX_CATALOG"
DEFAULT_MAX = 2 * 1024**3  # bytes; a catalog this large is a mistake (`-c /dev/zero`), not a map
STDIN = "-"


class Location(NamedTuple):
    """The active catalog and why it was chosen (`--catalog`, `$INVMAP_CATALOG` or shipped)."""

    path: str
    reason: str

    @property
    def is_stdin(self) -> bool:
        return self.path == STDIN

    @property
    def is_shipped(self) -> bool:
        return not self.is_stdin and is_shipped(self.path)


def shipped_path() -> Path:
    return Path(__file__).with_name("catalog.toml")


def is_shipped(path: str | Path) -> bool:
    try:
        return os.path.samefile(path, shipped_path())
    except OSError:
        return False


def locate(option: str | None) -> Location:
    """`--catalog PATH` wins over `$INVMAP_CATALOG`, which wins over the catalog shipped with invmap."""
    if option is not None:
        if not option.strip():
            raise UsageError("--catalog needs a path (or '-' for stdin)")
        if option == "shipped":  # as `diff` reads it (a file of that name: ./shipped)
            return Location(str(shipped_path()), "--catalog shipped")
        return Location(option, "--catalog option")
    if env := os.environ.get(ENV_VAR):
        return Location(env, f"${ENV_VAR}")
    return Location(str(shipped_path()), "shipped with invmap")


def max_size() -> int:
    """`$INVMAP_MAX_CATALOG` in bytes, with an optional K, M or G suffix; else 2 GiB."""
    return parse_size(os.environ.get(MAX_VAR, ""), DEFAULT_MAX)


SIZE_CEILING = 2**62  # larger limits mean "no limit" (and would overflow what reading takes)


def parse_size(text: str, default: int) -> int:
    """`1K`, `64M`, `2G` or a number of bytes; the default for anything else (or nothing)."""
    m = re.fullmatch(r"(\d{1,30})\s*([KkMmGg]?)i?[Bb]?", text.strip())
    if not m:
        return default
    return min(int(m.group(1)) * 1024 ** " KMG".index(m.group(2).upper() or " "), SIZE_CEILING)


CHUNK = 1 << 20


def read_capped(handle, limit: int) -> bytes:
    """Read `handle` to its end, but never more than `limit + 1` bytes (so a caller can tell the file is
    too large), a chunk at a time: a device such as /dev/zero, or a huge limit, never allocates more."""
    parts = []
    total = 0
    while total <= limit:
        chunk = handle.read(min(CHUNK, limit + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)
