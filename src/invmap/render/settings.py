"""`settings` on a terminal: a table grouped by source and engine (a heading line a source, a line an
engine, then each flag beside what it does, its version and what changed), or, where a flag and a
readable note cannot share a line, one block a setting. Built as text; every line fits the width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from invmap.render.blocks import plain_stacked
from invmap.render.layout import GAP, MIN_SENTENCE
from invmap.render.lines import wrapped
from invmap.safe import escape

INDENT = "    "  # a flag's line under its engine's heading
ENGINE_INDENT = "  "
MIN_FLAG = 16  # a flag column narrower than this: one block a setting instead


def settings_text(rows: Sequence[dict[str, Any]], fields: Sequence[str], width: int) -> str:
    """The table when its note column gets at least MIN_SENTENCE columns and its longest word: a
    version column of its own where the note keeps that much beside it, else the version in the note;
    a flag wider than its column on a line of its own, its note under it. Else the blocks."""
    flags = [escape(r["flag"] or "") for r in rows]
    flag = max(map(len, flags), default=0)
    version = max((len(escape(r.get("version") or "")) for r in rows), default=0)
    words = max((len(w) for r in rows for w in _note(r, True).split()), default=0)
    need = max(MIN_SENTENCE, words)
    own_column = width - len(INDENT) - flag - version - 2 * GAP >= need
    extra = version + GAP if own_column else 0
    flag = min(flag, width - len(INDENT) - GAP - extra - need)
    if flag < MIN_FLAG:
        return plain_stacked(rows, fields, width, skip_empty=True)
    note_width = width - len(INDENT) - flag - GAP - extra
    return _table(rows, flags, width, flag, version if own_column else 0, note_width)


def _table(
    rows: Sequence[dict[str, Any]], flags: Sequence[str], width: int, flag: int, version: int, note_width: int
) -> str:
    """The grouped table: `flag` columns of flag, `version` of version (0: in the note instead)."""
    lines: list[str] = []
    seen: tuple[Any, Any] = (None, None)
    for r, shown in zip(rows, flags):
        source, engine = r.get("id"), r["engine"]
        if source != seen[0]:
            lines += [""] if lines else []
            lines += wrapped(_heading(r), width)
        if (source, engine) != seen:
            lines.append(ENGINE_INDENT + escape(engine or ""))
        seen = (source, engine)
        if len(shown) > flag:
            lines.append(INDENT + shown)
        left = INDENT + (shown if len(shown) <= flag else "").ljust(flag) + " " * GAP
        if version:
            left += escape(r.get("version") or "").ljust(version) + " " * GAP
        for n, part in enumerate(wrapped(_note(r, with_version=not version), note_width) or [""]):
            lines.append(((left if n == 0 else " " * len(left)) + part).rstrip())
    return "\n".join(lines) + "\n"


def _heading(r: dict[str, Any]) -> str:
    """A source's heading: its id, and its name when that says more."""
    source, name = escape(r.get("id") or ""), escape(r.get("name") or "")
    return source + (f" ({name})" if name and name != source else "")


def _note(r: dict[str, Any], with_version: bool) -> str:
    """What a flag does, then (`with_version`) where it was read, then what changed and its successor."""
    text = escape(r.get("note") or "")
    if with_version and r.get("version"):
        text += f" ({escape(r['version'])})"
    if r.get("deprecated"):
        text += f"; deprecated {escape(r['deprecated'])}"
    if r.get("replaced_by"):
        text += f"; use {escape(r['replaced_by'])}"
    return text.lstrip("; ")
