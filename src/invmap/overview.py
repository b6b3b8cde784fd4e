"""The map's shape: sources per layer, counts by type, year and layer, the layer-by-year grid.

Plain data from a catalog; `render.py` draws it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invmap.vocabulary import LAYER_CODES

if TYPE_CHECKING:
    from invmap.model import Catalog, Source

UNDATED = "n.d."
NO_CODE = "other"  # the grid's row for sources whose label carries no code


def layer_rows(catalog: Catalog, sources: Sequence[Source]) -> list[dict[str, Any]]:
    """One row per code (L1..L6, P0), then one per free-text label that carries no code."""
    rows = []
    for code in LAYER_CODES:
        members = [s for s in sources if code in s.layers]
        rows.append(_layer_row(code, catalog.layers.get(code, ""), members))
    free: dict[str, list[Source]] = {}
    for s in sources:
        if not s.layers:
            free.setdefault(s.layer, []).append(s)
    rows += [_layer_row(None, label, members) for label, members in free.items()]
    return rows


def _layer_row(code: str | None, title: str, members: list[Source]) -> dict[str, Any]:
    return {"code": code, "title": title, "count": len(members), "sources": [s.id for s in members],
            "names": [s.name for s in members]}  # fmt: skip


def year_key(year: int | None) -> str:
    return UNDATED if year is None else str(year)


def stats(sources: Sequence[Source]) -> dict[str, Any]:
    """Counts by type (most first), by year (oldest first, n.d. last) and by layer code (map order)."""
    types = Counter(s.type for s in sources)
    years = Counter(s.year for s in sources)
    ordered_years = sorted(y for y in years if y is not None) + ([None] if None in years else [])
    return {
        "total": len(sources),
        "by_type": dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0].casefold()))),
        "by_year": {year_key(y): years[y] for y in ordered_years},
        "by_layer": {code: sum(code in s.layers for s in sources) for code in LAYER_CODES},
    }


def stats_rows(counts: dict[str, Any]) -> list[dict[str, Any]]:
    """The same counts as flat rows (group, key, count), for plain, CSV and Markdown."""
    return [
        {"group": group.removeprefix("by_"), "key": key, "count": n}
        for group in ("by_type", "by_year", "by_layer")
        for key, n in counts[group].items()
    ]


def grid(sources: Sequence[Source]) -> dict[str, Any]:
    """Layer codes (then `other`) by years (then n.d.): the short names in each cell, catalog order."""
    years = sorted({s.year for s in sources if s.year is not None})
    columns = [str(y) for y in years] + ([UNDATED] if any(s.year is None for s in sources) else [])
    rows = []
    for code in (*LAYER_CODES, NO_CODE):
        members = [s for s in sources if (code in s.layers if code != NO_CODE else not s.layers)]
        if code == NO_CODE and not members:
            continue
        cells = {column: [s.name for s in members if year_key(s.year) == column] for column in columns}
        rows.append({"code": code, "cells": cells})
    return {"years": columns, "rows": rows}
