"""Sorting a selection by one key, and reading it from the index lazily (positions held, records
read a batch at a time)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invmap.errors import UsageError
from invmap.fields import KINDS, SORT_KEYS, SOURCE_FIELDS
from invmap.query.choices import did_you_mean

if TYPE_CHECKING:
    from invmap.index import Index, Records
    from invmap.query.filtering import Filters


def lazy_selection(
    index: Index,
    filters: Filters,
    columns: Sequence[str] = SOURCE_FIELDS,
    sort: str | None = None,
    reverse: bool = False,
    limit: int | None = None,
) -> Records:
    """The sources `filters` select, sorted by one key and cut to `limit`, as records read from the
    index a batch at a time: only their positions and the sort key are held at once."""
    from invmap.index import Records

    check_sort_key(sort)
    if sort is None:
        positions = [pos for (pos,) in index.columns(filters.where, filters.params, ("pos",))]
        positions = (positions[::-1] if reverse else positions)[:limit]
    else:
        ordered = sort_records(index.records(filters.where, filters.params, ("pos", sort)), sort, reverse)
        positions = [r["pos"] for r in ordered[:limit]]
    return Records(index, positions, columns)


def check_sort_key(key: str | None) -> None:
    if key is not None and key not in SORT_KEYS:
        close = did_you_mean(key, SORT_KEYS)
        hint = f"; did you mean '{close}'?" if close else ""
        raise UsageError(f"unknown sort key '{key}'{hint} (valid keys: {', '.join(SORT_KEYS)})")


def sort_records(records: list[dict[str, Any]], key: str | None, reverse: bool = False) -> list[dict[str, Any]]:
    """Sort by one key, as its field's kind orders it; sources without a value go last either way."""
    if key is None:
        return list(reversed(records)) if reverse else list(records)
    check_sort_key(key)
    kind = KINDS[key]
    keyed = [(kind.sort_key(r[key]), r) for r in records]
    present = sorted(((k, r) for (absent, k), r in keyed if not absent), key=lambda item: item[0], reverse=reverse)
    return [r for _, r in present] + [r for (absent, _), r in keyed if absent]
