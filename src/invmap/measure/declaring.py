"""Reading a declaration file (data/metrics.toml, data/rules.toml) so that a half-done change fails
loudly: every table is checked against the keys it may hold (`Spec`), and each problem is named by
the file and line it is on (`FILE:LINE: message`, exit 3), all of them at once.

TOML parsers give no positions, so a problem's line is found in the text: the n-th `[[array]]`
header, then the first line after it where the key is written (`key =`, or a `[table.key]` header).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from invmap.errors import CatalogError


class DeclarationError(CatalogError):
    """Problems of one declaration file, each on its line: `FILE:LINE: message`."""

    def __init__(self, path: str, located: list[tuple[int, str]]) -> None:
        super().__init__(path, [message for _, message in located])
        self.located = located
        lines = [f"{path}:{line}: {message}" for line, message in located]
        if len(lines) > 1:
            lines.insert(0, f"{path} has {len(lines)} problems:")
        self.message = "\n".join(lines)
        self.args = (self.message,)


@dataclass(frozen=True)
class Key:
    """One key a table may hold: `check(value)` says whether it has the right shape, `shape` says
    what that shape is; `required` keys must be written."""

    check: Callable[[Any], bool]
    shape: str
    required: bool = False


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def text(required: bool = False) -> Key:
    return Key(_is_str, "text", required)


def number(required: bool = False) -> Key:
    return Key(_is_number, "a finite number", required)


def flag() -> Key:
    return Key(lambda v: isinstance(v, bool), "true or false")


def strings(required: bool = False) -> Key:
    return Key(_is_strings, "a list of texts", required)


def table(required: bool = False) -> Key:
    return Key(lambda v: isinstance(v, dict), "a table", required)


def tables(required: bool = False) -> Key:
    return Key(lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), "a list of tables", required)


def choice(options: tuple[str, ...], required: bool = False) -> Key:
    return Key(lambda v: v in options, "one of " + ", ".join(f"'{o}'" for o in options), required)


def span(required: bool = False) -> Key:
    """`[low, high]`: two finite numbers, low first."""
    return Key(lambda v: isinstance(v, list) and len(v) == 2 and all(map(_is_number, v)) and v[0] <= v[1],
               "[low, high] (two finite numbers, low first)", required)  # fmt: skip


Spec = Mapping[str, Key]
_HEADER = re.compile(r"^\s*\[\[([^\[\]]+)\]\]")
_TABLE = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")
_KEY = re.compile(r'(?:^|[\s{,.])"?([A-Za-z0-9_-]+)"?\s*=')


class Declaration:
    """One declaration file: its tables (`data`), where things are written in it, and the problems
    found so far (raised together by `done`)."""

    def __init__(self, path: str | Path) -> None:
        import tomli  # a small file that ships with invmap; tomli words any error with its line

        self.path = str(path)
        try:
            raw = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CatalogError(self.path, [f"cannot be read: {getattr(exc, 'strerror', None) or exc}"]) from None
        try:
            self.data = tomli.loads(raw)
        except tomli.TOMLDecodeError as exc:
            found = re.search(r"line (\d+)", str(exc))
            raise DeclarationError(self.path, [(int(found.group(1)) if found else 1, f"invalid TOML: {exc}")]) from None
        self.lines = raw.splitlines()
        self.problems: list[tuple[Place | int, str]] = []
        self._headers: dict[str, list[int]] | None = None  # array -> the line of each [[array]] header
        self._keys: list[set[str]] | None = None  # line -> the keys written on it

    # --- where things are written (found once, when first asked)

    def _index(self) -> tuple[dict[str, list[int]], list[set[str]]]:
        if self._headers is None or self._keys is None:
            self._headers, self._keys = {}, []
            for number, line in enumerate(self.lines, 1):
                found = _HEADER.match(line)
                if found:
                    self._headers.setdefault(found.group(1).strip(), []).append(number)
                keys = set() if line.lstrip().startswith("#") else set(_KEY.findall(line))
                table = _TABLE.match(line)
                if table:
                    keys.add(table.group(1).rsplit(".", 1)[-1].strip())
                self._keys.append(keys)
        return self._headers, self._keys

    def entry_line(self, array: str, index: int) -> Place:
        """Where the `index`-th (from 0) `[[array]]` header is (found when a problem is said)."""
        return Place(lambda: self._entry_line(array, index))

    def key_line(self, start: Place | int, key: str) -> Place:
        """Where `key` is written, from `start` on (found when a problem is said)."""
        return Place(lambda: self._key_line(_number(start), key))

    def _entry_line(self, array: str, index: int) -> int:
        headers = self._index()[0].get(array, [])
        return headers[index] if index < len(headers) else 1

    def _key_line(self, start: int, key: str) -> int:
        """The first line from `start` on, before the next `[[...]]` entry, where `key` is written
        (`key = ...`, `"key" = ...`, inside an inline table, or a `[table.key]` header); else `start`."""
        keys = self._index()[1]
        for number in range(start, len(self.lines) + 1):
            if number > start and self.lines[number - 1].lstrip().startswith("[["):
                break
            if key in keys[number - 1]:
                return number
        return start

    # --- problems

    def fail(self, line: Place | int, message: str) -> None:
        self.problems.append((line, message))  # type: ignore[arg-type]  (resolved by `done`)

    def check(self, entry: Mapping[str, Any], spec: Spec, line: Place | int, what: str) -> bool:
        """Every key of `entry` known to `spec` and of its shape, every required key there; each
        problem noted on its line. True when the entry has none."""
        before = len(self.problems)
        meant: set[str] = set()  # keys a misspelt one was taken for: not said missing as well
        for key, value in entry.items():
            if key not in spec:
                near = difflib.get_close_matches(key, list(spec), n=1)
                meant.update(near)
                hint = f"; did you mean '{near[0]}'?" if near else f" (it takes: {', '.join(spec)})"
                self.fail(self.key_line(line, key), f"unknown key '{key}' in {what}{hint}")
            elif not spec[key].check(value):
                self.fail(self.key_line(line, key), f"'{key}' in {what} must be {spec[key].shape}")
        for key, wanted in spec.items():
            if wanted.required and key not in entry and key not in meant:
                self.fail(line, f"{what} lacks '{key}' ({wanted.shape})")
        return len(self.problems) == before

    def done(self) -> None:
        if self.problems:
            raise DeclarationError(self.path, sorted((_number(line), message) for line, message in self.problems))


class Place:
    """A line of a declaration, found only when asked (`line`): most entries never need theirs."""

    def __init__(self, find: Callable[[], int]) -> None:
        self._find: Callable[[], int] | None = find
        self._line = 0

    @property
    def line(self) -> int:
        if self._find is not None:
            self._line, self._find = self._find(), None
        return self._line


def _number(where: Place | int) -> int:
    return where.line if isinstance(where, Place) else where
