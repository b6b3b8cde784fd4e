"""Text to read rather than records: `guide` (the map's study procedure and notes, as text or
Markdown) and `fields` (each field's name and meaning)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Sequence
from typing import Any

from invmap.fields import FIELD_HELP, SCORED_FIELDS
from invmap.render import Context, Result
from invmap.render.lines import wrapped


def fields_text(fields: Sequence[str] = SCORED_FIELDS, width: int | None = None) -> str:
    """`invmap fields`: a name and its meaning a line; with a terminal `width`, meanings wrap at spaces
    under themselves."""
    name_width = max(len(f) for f in fields)
    lines = []
    for f in fields:
        if width is None or width - name_width - 2 < 20:
            lines.append(f"{f.ljust(name_width)}  {FIELD_HELP[f]}")
            continue
        meaning = wrapped(FIELD_HELP[f], width - name_width - 2)
        lines.append(f"{f.ljust(name_width)}  {meaning[0]}")
        lines += [" " * (name_width + 2) + more for more in meaning[1:]]
    return "\n".join(lines) + "\n"


def guide_text(info: dict[str, Any] | None, fmt: str, width: int | None = None) -> str:
    """The map's study procedure and notes, for reading; unwrapped unless a width is given."""
    if info is None or not info.get("title"):
        return "This catalog has no notes: it has no [catalog] table (title, preface, procedure, afterword).\n"

    def para(body: str, indent: str = "", first: str = "") -> str:
        if width is None:
            return f"{first or indent}{body}"
        return textwrap.fill(body, width=width, initial_indent=first or indent, subsequent_indent=indent)

    if fmt == "markdown":
        steps = "\n".join(f"{i}. {step}" for i, step in enumerate(info["procedure"], 1))
        parts = [f"# {info['title']}", info["preface"], "## Study procedure" if steps else "", steps, info["afterword"]]
        return "\n\n".join(p for p in parts if p) + "\n"
    blocks = [info["title"]]
    if info["preface"]:
        blocks.append(para(info["preface"]))
    if info["procedure"]:
        steps = [para(step, indent="     ", first=f"  {i}. ") for i, step in enumerate(info["procedure"], 1)]
        blocks.append("Study procedure\n" + "\n".join(steps))
    if info["afterword"]:
        blocks.append(para(info["afterword"]))
    return "\n\n".join(blocks) + "\n"


def document_markdown(result: Result, context: Context) -> Iterator[str]:
    """`guide --format markdown`."""
    yield guide_text(result.data, "markdown")


def document_plain(result: Result, context: Context) -> Iterator[str]:
    """`guide` in a pipe: the text unwrapped."""
    yield guide_text(result.data, "plain")
