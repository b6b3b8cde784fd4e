"""Which columns of a table of records fit a terminal's width, and how wide each is (no drawing: the
rich table and its plain-text drawing both take these widths)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from invmap.render.cells import header, human_cell, wraps
from invmap.render.lines import pack, wrapped

GAP = 2  # columns between two table columns
SENTENCES = frozenset({"mechanism", "objective", "question", "availability", "why", "seam"})
MIN_SENTENCE = 30  # a sentence column narrower than this reads badly: drop other columns first
COMFORTABLE_SENTENCE = 32  # what a sentence column gets before a label grows to its whole width
RIGHT = frozenset({"year", "score", "count"})  # columns set flush right
# Below WHOLE_LABELS columns and up to SHORTEST rows (a terminal's page), a layer label is narrowed
# when the room it gives the sentences saves lines; from WHOLE_LABELS columns it is always whole.
SHORTEST = 200
WHOLE_LABELS = 100
NARROW = 60  # below this many columns, one block per source instead of a table
# Which columns go first when the terminal is too narrow (documented in the README).
# `models`: its dtype (bfloat16 for most), then its attention kind, before it turns to blocks.
DROP_ORDER = (
    "type",
    "layers",
    "accessed",
    "authors",
    "arxiv",
    "doi",
    "name",
    "year",
    "layer",
    "title",
    "source",
    "dtype",
    "attention",
)


def layout(
    rows: Sequence[dict[str, Any]], fields: Sequence[str], width: int
) -> tuple[list[str], dict[str, int]] | None:
    """The columns that fit `width` and their widths, or None when only the stacked layout can.

    Identifier columns get their whole natural width and never wrap; wrapping columns get at least
    `MIN_SENTENCE` (or their natural width if less) and never less than their longest word. Columns in
    `DROP_ORDER` go, in that order, until the rest fit; `name` goes only while `id` stays, and a table
    keeps at least one identifier.
    """
    if width < NARROW:
        return None
    natural, unit = _measured(rows, fields)

    def minimum(f: str) -> int:
        if not wraps(f):
            return natural[f]
        floor = MIN_SENTENCE if f in SENTENCES else 12  # a sentence reads badly narrower; a label wraps well
        return max(min(natural[f], floor), unit[f], len(header(f)) if len(header(f)) <= 12 else 1)

    shown = _columns_that_fit(fields, minimum, width)
    if shown is None:
        return None
    least = {f: minimum(f) for f in shown}
    spare = width - sum(least.values()) - GAP * (len(shown) - 1)
    widths = _widened(dict(least), natural, spare)
    if "layer" in shown and wraps("layer") and len(rows) <= SHORTEST and width < WHOLE_LABELS:
        # a layer label narrower, when the sentences it gives room to take fewer lines in all
        tries = [_widened(dict(least), natural, spare, cap) for cap in range(widths["layer"], least["layer"] - 1, -1)]
        widths = min(tries, key=lambda w: _height(rows, shown, w))  # the first (widest label) of the shortest
    return shown, widths


def hidden_columns(rows: Sequence[dict[str, Any]], fields: Sequence[str], width: int) -> list[str]:
    """The headers of the columns `layout` leaves out at `width` (none when every column fits, or when
    each record is a block of its own)."""
    fitted = layout(rows, fields, width)
    return [header(f) for f in fields if fitted and f not in fitted[0]]


def _measured(rows: Sequence[dict[str, Any]], fields: Sequence[str]) -> tuple[dict[str, int], dict[str, int]]:
    """Each column's natural width (its widest line, header included) and the narrowest it can be
    without splitting a word (a list's: its widest item), in one pass over the rows however many."""
    natural = {f: len(header(f)) for f in fields}
    word = dict.fromkeys(fields, 1)
    item = dict.fromkeys(fields, 0)
    wrapping = [f for f in fields if wraps(f)]
    for r in rows:
        for f in fields:
            text = human_cell(f, r.get(f))
            longest = max(map(len, text.split("\n"))) if "\n" in text else len(text)
            natural[f] = max(natural[f], longest)
        for f in wrapping:
            value = r.get(f)
            if isinstance(value, list):
                item[f] = max(item[f], *(len(str(v)) for v in value)) if value else item[f]
                continue
            text = human_cell(f, value)
            if len(text) > word[f]:
                word[f] = max(word[f], max((len(w) for w in text.split()), default=1))
    return natural, {f: item[f] or word[f] for f in fields}


def _columns_that_fit(fields: Sequence[str], minimum: Callable[[str], int], width: int) -> list[str] | None:
    """`fields` less the columns DROP_ORDER gives up until the rest fit at their minimum widths."""
    shown = list(fields)
    while sum(minimum(f) for f in shown) + GAP * (len(shown) - 1) > width:
        droppable = [f for f in DROP_ORDER if f in shown and not (f == "name" and "id" not in shown)]
        identifiers = [f for f in shown if f in ("id", "name")]
        droppable = [f for f in droppable if not (f in identifiers and len(identifiers) == 1)]
        if not droppable or len(shown) == 1:
            return None
        shown.remove(droppable[0])
    return shown


def _height(rows: Sequence[dict[str, Any]], shown: Sequence[str], widths: dict[str, int]) -> int:
    """How many lines the rows take with these widths (each row as tall as its tallest cell)."""
    wrapping = [f for f in shown if wraps(f)]
    total = 0
    for r in rows:
        tallest = 1
        for f in wrapping:
            value = r.get(f)
            if isinstance(value, list):
                cell = pack([str(v) for v in value], widths[f])
            else:
                cell = wrapped(human_cell(f, value), widths[f])
            tallest = max(tallest, len(cell))
        total += tallest
    return total


def _widened(widths: dict[str, int], natural: dict[str, int], spare: int, cap: int = 20) -> dict[str, int]:
    """The spare columns given out: sentences first reach a comfortable width, then a layer label its
    whole width (up to `cap`, 20 by default, so `L1 and machine model` stays on one line), then the
    sentences share what is left, evenly."""
    sentences = [f for f in widths if wraps(f) and f != "layer"]

    def share(limit: dict[str, int]) -> None:
        nonlocal spare
        while spare > 0:
            hungry = [f for f in sentences if widths[f] < limit[f]]
            if not hungry:
                return
            part = max(spare // len(hungry), 1)
            for f in hungry:
                extra = min(part, limit[f] - widths[f], spare)
                widths[f] += extra
                spare -= extra

    share({f: min(natural[f], COMFORTABLE_SENTENCE) for f in sentences})
    if "layer" in widths and wraps("layer"):
        extra = max(min(min(natural["layer"], cap) - widths["layer"], spare), 0)
        widths["layer"] += extra
        spare -= extra
    share(natural)
    return widths
