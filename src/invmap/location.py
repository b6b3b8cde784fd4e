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
        return Location(option, "--catalog option")
    if env := os.environ.get(ENV_VAR):
        return Location(env, f"${ENV_VAR}")
    return Location(str(shipped_path()), "shipped with invmap")


def max_size() -> int:
    """`$INVMAP_MAX_CATALOG` in bytes, with an optional K, M or G suffix; else 2 GiB."""
    text = os.environ.get(MAX_VAR, "").strip()
    m = re.fullmatch(r"(\d+)\s*([KkMmGg]?)i?[Bb]?", text)
    if not m:
        return DEFAULT_MAX
    return int(m.group(1)) * 1024 ** " KMG".index(m.group(2).upper() or " ")
