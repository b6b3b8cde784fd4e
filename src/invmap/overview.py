"""The map's shape: sources per level, counts by type, year and layer, the layer-by-year grid.

Plain data from records; `render/overview.py` draws it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from invmap.vocabulary import LAYER_CODES

UNDATED = "n.d."
NO_CODE = "other"  # the grid's row for sources whose label carries no code


def layer_rows(levels: list[dict[str, Any]], records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per code (L1..L6, RL, P0), then one per free-text label that carries no code."""
    by_code = {level["code"]: level for level in levels}
    rows = []
    for code in LAYER_CODES:
        level = by_code.get(code, {})
        rows.append(_layer_row(code, level, [r for r in records if code in r["layers"]]))
    free: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if not r["layers"]:
            free.setdefault(r["layer"], []).append(r)
    rows += [_layer_row(None, {"title": label}, members) for label, members in free.items()]
    return rows


def _layer_row(code: str | None, level: dict[str, Any], members: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "code": code,
        "title": level.get("title"),
        "scope": level.get("scope"),
        "question": level.get("question"),
        "metrics": list(level.get("metrics") or []),
        "symptoms": list(level.get("symptoms") or []),
        "count": len(members),
        "sources": [r["id"] for r in members],
        "names": [r["name"] for r in members],
    }


def level_code(value: str, known: Sequence[str]) -> str:
    """`L3`, `l3` or `3` -> L3; anything else is a usage error naming the codes."""
    from invmap.errors import UsageError

    text = value.strip().upper()
    if text.isdigit() and len(text) == 1 and "1" <= text <= "6":
        text = f"L{text}"
    if text not in LAYER_CODES:
        raise UsageError(f"unknown level '{value}' (levels: {', '.join(LAYER_CODES)})")
    return text


def one_level(code: str, levels: list[dict[str, Any]], records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """`layers L3`: the level's title, scope, question, metrics and symptoms, and its sources, each
    with its open question."""
    level = next((lv for lv in levels if lv["code"] == code), {"code": code})
    members = [r for r in records if code in r["layers"]]
    row = _layer_row(code, level, members)
    row["sources"] = [{"id": r["id"], "name": r["name"], "question": r["question"]} for r in members]
    del row["names"]
    return row


def year_key(year: int | None) -> str:
    return UNDATED if year is None else str(year)


def stats(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts by type (most first), by year (oldest first, n.d. last) and by layer code (map order)."""
    types = Counter(r["type"] for r in records)
    years = Counter(r["year"] for r in records)
    ordered_years = sorted(y for y in years if y is not None) + ([None] if None in years else [])
    return {
        "total": len(records),
        "by_type": dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0].casefold()))),
        "by_year": {year_key(y): years[y] for y in ordered_years},
        "by_layer": {code: sum(code in r["layers"] for r in records) for code in LAYER_CODES},
    }


def stats_rows(counts: dict[str, Any]) -> list[dict[str, Any]]:
    """The same counts as flat rows (group, key, count), for plain, CSV and Markdown."""
    return [
        {"group": group.removeprefix("by_"), "key": key, "count": n}
        for group in ("by_type", "by_year", "by_layer")
        for key, n in counts[group].items()
    ]


def grid(records: Sequence[dict[str, Any]], only: set[str] | None = None) -> dict[str, Any]:
    """Layer codes (then `other`) by years (then n.d.): the short names in each cell, catalog order.
    Only rows and columns that hold a source, and only the codes in `only` when given (so
    `map --layer L3` shows level 3 alone)."""
    if only is not None:
        records = [r for r in records if not r["layers"] or set(r["layers"]) & only]
    years = sorted({r["year"] for r in records if r["year"] is not None})
    columns = [str(y) for y in years] + ([UNDATED] if any(r["year"] is None for r in records) else [])
    cells: dict[str, dict[str, list[str]]] = {}  # code -> column -> names, in catalog order
    for r in records:
        for code in r["layers"] or (NO_CODE,):
            cells.setdefault(code, {}).setdefault(year_key(r["year"]), []).append(r["name"])
    rows = []
    for code in (*LAYER_CODES, NO_CODE):
        if code not in cells or (only is not None and code != NO_CODE and code not in only):
            continue
        rows.append({"code": code, "cells": {column: cells[code].get(column, []) for column in columns}})
    return {"years": columns, "rows": rows}
