"""Where things are in a catalog's text, byte for byte: each `[[sources]]` table (found by its header
line, or token by token when a value could hold a line that only looks like a header, and checked to
parse back to exactly its source), the lines holding comments, and the line and column of each
problem `check` reports. Text only: edits.py changes the file with what is found here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from invmap.errors import CatalogError, UsageError
from invmap.overlay import extends_of
from invmap.reading import BOM, parse_text

# TOML's strings (each kind), comments, a `[` opening a line, and brackets: scanned token by token, a
# value's text is never taken for a header or a comment (`comment_lines`, `_spans_by_tokens`).
TOML_TOKEN = re.compile(
    r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""(?!")|"""(?:[^"\\]|\\[\s\S]|"(?!""))*""""?"?'
    r"|'''[\s\S]*?'''(?:'{1,2}(?!'))?"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'[^'\n]*'"
    r"|#[^\n]*"
    r"|(?:^|(?<=\n))[ \t]*\["
    r"|[\[\]{}]",
)


def comment_lines(text: str) -> list[int]:
    """The lines holding a TOML comment (whole-line or after a value), strings skipped whole."""
    lines = []
    for m in TOML_TOKEN.finditer(text):
        if m.group().startswith("#"):
            lines.append(text.count("\n", 0, m.start()) + 1)
    return lines


_HEADER = re.compile(r"[ \t]*\[")  # a line that may open a table (at the text's start)
_LINE_HEADER = re.compile(r"\n[ \t]*\[")  # after a line break: ~6x faster than `^` with re.M
_SOURCES = re.compile(r"[ \t]*\[\[[ \t]*sources[ \t]*\]\][ \t]*(?:#[^\n]*)?\r?\n?")


_SOURCES_LINE = re.compile(r"[ \t]*\[\[[ \t]*sources[ \t]*\]\][ \t]*(?:#[^\n]*)?\r?$", re.M)


def _lined_sources(text: str) -> list[int] | None:
    """Where each `[[sources]]` table starts, found by lines alone, when every header line from the
    first `[[sources]]` on is a `[[sources]]` header; else None."""
    starts = ([0] if text[:1] in ("[", " ", "\t") and _HEADER.match(text) else []) + [
        m.start() + 1 for m in _LINE_HEADER.finditer(text)
    ]

    def is_sources(at: int) -> bool:
        return text.startswith("[[sources]]\n", at) or bool(_SOURCES_LINE.match(text, at))

    first = next((i for i, at in enumerate(starts) if is_sources(at)), None)
    if first is None or not all(map(is_sources, starts[first:])):
        return None
    return starts[first:]


def source_starts(text: str, count: int) -> list[int] | None:
    """Where each of a valid catalog's `count` sources' tables starts, by lines alone: only when the
    line scan finds exactly `count` `[[sources]]` header lines and no other header after the first.
    Every real header is a line the scan finds, so a line that only looks like one (in a multi-line
    string) would make one too many: the tables found are then exactly the sources, in order."""
    starts = _lined_sources(text)
    return starts if starts is not None and len(starts) == count else None


def table_at(text: str, starts: list[int], n: int) -> tuple[int, int]:
    """The span of the `n`th table `source_starts` found, trimmed as `span_of` trims it."""
    end = starts[n + 1] if n + 1 < len(starts) else len(text)
    return starts[n], _trimmed(text, starts[n], end)


def plain_tables(text: str, path: str) -> tuple[dict[str, Any], list[int]] | None:
    """(the head parsed, where each `[[sources]]` table starts) when every header line from the first
    `[[sources]]` on is a `[[sources]]` header and the head extends nothing: the form `fmt` writes,
    found by lines alone (a cut inside a multi-line string is caught by whoever parses the tables)."""
    sources = _lined_sources(text)
    if sources is None:
        return None
    try:
        head = parse_text(text[: sources[0]], path)
    except CatalogError:
        return None
    if extends_of(head) is not None or "sources" in head:
        return None
    return head, sources


def source_spans(text: str, raw_sources: Sequence[Any]) -> list[tuple[int, int]] | None:
    """(start, end) of each `[[sources]]` table in `text` (its header to the next header), or None
    when the file does not write its sources as that many `[[sources]]` tables. `_trimmed` then
    gives a table's own end."""
    spans = _spans_by_lines(text)
    if len(spans) != len(raw_sources):
        spans = _spans_by_tokens(text)
    return spans if len(spans) == len(raw_sources) else None


def _spans_by_lines(text: str) -> list[tuple[int, int]]:
    starts = ([0] if _HEADER.match(text) else []) + [m.start() + 1 for m in _LINE_HEADER.finditer(text)]
    return _sources_among(text, starts)


def _sources_among(text: str, headers: list[int]) -> list[tuple[int, int]]:
    """The `[[sources]]` ones among these header positions, each to the next header (or the end)."""
    spans = []
    for n, start in enumerate(headers):
        if text.startswith("[[sources]]\n", start) or _SOURCES.match(text, start):
            spans.append((start, headers[n + 1] if n + 1 < len(headers) else len(text)))
    return spans


def _trimmed(text: str, start: int, end: int) -> int:
    """`end` moved back to the end of the table's last value line (before its line break), over the
    blank and comment lines that close the table (they introduce the next)."""
    lines = text[start:end].split("\n")
    while len(lines) > 1 and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        lines.pop()
    kept = start + len("\n".join(lines))
    return kept - 1 if text[kept - 1 : kept] == "\r" else kept


def _spans_by_tokens(text: str) -> list[tuple[int, int]]:
    """The slow, exact way: strings and comments skipped whole, brackets of values counted, so only a
    `[` that opens a line outside any value starts a table."""
    headers: list[int] = []
    depth = 0
    pos = 0
    while (m := TOML_TOKEN.search(text, pos)) is not None:
        token = m.group()
        pos = m.end()
        if token.endswith("[") and token.strip() == "[" and (m.start() == 0 or text[m.start() - 1] == "\n"):
            if depth == 0:
                headers.append(m.start())
                line_end = text.find("\n", m.start())
                pos = len(text) if line_end < 0 else line_end  # the header's own brackets
                continue
            depth += 1
        elif token in ("[", "{"):
            depth += 1
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)
    return _sources_among(text, headers)


def _holds(text: str, span: tuple[int, int], raw: Any) -> tuple[int, int] | None:
    """The span trimmed of what follows the table, if it parses back to exactly the source `raw`."""
    import tomli

    start, end = span
    end = _trimmed(text, start, end)
    try:
        return (start, end) if tomli.loads(text[start:end]) == {"sources": [raw]} else None
    except tomli.TOMLDecodeError:
        return None


def span_of(text: str, raw_sources: Sequence[Any], n: int, path: str) -> tuple[int, int]:
    """The span of the `n`th source's table, checked to parse back to exactly that source."""
    first = source_spans(text, raw_sources)
    if first is not None:
        # The line scan first; a multi-line string holding a `[[sources]]` line fools it, not the tokens.
        held = _holds(text, first[n], raw_sources[n])
        if held is not None:
            return held
        spans = _spans_by_tokens(text)
        held = _holds(text, spans[n], raw_sources[n]) if len(spans) == len(raw_sources) else None
        if held is not None:
            return held
    raise UsageError(
        f"cannot edit {path} in place: its sources are not plain [[sources]] tables",
        hint="'invmap fmt' rewrites it in the canonical form, which can be",
    )


_AT = re.compile(r"\bat line (\d+)(?:, column (\d+))?")
_SOURCE_AT = re.compile(r"^(overlay )?sources? (\d+)(?: \(([^)]*)\))?")
_FIELD_NAMED = re.compile(r"field '([A-Za-z_]+)'")


def locate_problems(data: bytes, problems: list[str]) -> list[tuple[int, int] | None]:
    """(line, column) in the file of each problem `check` reports, where it can be told: a TOML error
    where the parser stopped; a source's problem at its field's key (`field 'id'`), else at its
    `[[sources]]` header; None for the rest (a `[layers]` value, a file-wide problem). One pass over
    the text: its tables found once, the lines counted from one problem's place to the next's."""
    text = data.decode("utf-8", "replace").removeprefix(BOM)
    found: _Tables | None = None
    out: list[tuple[int, int] | None] = []
    offsets: list[tuple[int, int]] = []  # (offset in the text, which problem)
    for problem in problems:
        out.append(None)
        if m := _AT.search(problem):
            out[-1] = (int(m.group(1)), int(m.group(2) or 1))
        elif m := _SOURCE_AT.match(problem):
            found = found or _Tables(text)
            offset = found.offset(m, problem)
            if offset is not None:
                offsets.append((offset, len(out) - 1))
    line, at = 1, 0
    for offset, n in sorted(offsets):
        line += text.count("\n", at, offset)
        at = offset
        out[n] = (line, offset - (text.rfind("\n", 0, offset) + 1) + 1)
    return out


class _Tables:
    """A catalog text's `[[sources]]` tables (and its sources' ids, for an overlay), found once: by
    lines when the file is plain `[[sources]]` tables with no multi-line string, else token by token."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.keys: dict[str, re.Pattern[str]] = {}
        self.ids: dict[str, int] = {}
        self.plain = True
        lined = plain_tables(text, "") if '"""' not in text and "'''" not in text else None
        if lined is not None:
            starts = lined[1]
            self.tables = list(zip(starts, [*starts[1:], len(text)]))
            return
        try:
            raw = parse_text(text, "")
        except CatalogError:
            raw = {}
        own = raw.get("sources") if isinstance(raw.get("sources"), list) else []
        self.tables = _spans_by_tokens(text)
        for n, s in enumerate(own):
            ident = s.get("id") if isinstance(s, dict) else None
            if isinstance(ident, str):
                self.ids.setdefault(ident, n)
        self.plain = extends_of(raw) is None

    def offset(self, m: re.Match[str], problem: str) -> int | None:
        """Where the problem `m` (`_SOURCE_AT`'s match) is: its field's key, else its table's header."""
        n = int(m.group(2)) - 1
        if not (self.plain or m.group(1)) and m.group(3) in self.ids:  # an overlay's merged map: by its id
            n = self.ids[m.group(3)]
        if not 0 <= n < len(self.tables):
            return None
        text = self.text
        start, end = self.tables[n]
        offset = start + len(text[start:end]) - len(text[start:end].lstrip())
        if f := _FIELD_NAMED.search(problem):
            name = f.group(1)
            if name not in self.keys:
                self.keys[name] = re.compile(rf"(?m)^[ \t]*{re.escape(name)}[ \t]*=")
            key = self.keys[name].search(text, start, end)
            if key is not None:
                offset = key.start() + len(key.group()) - len(key.group().lstrip())
        return offset
