"""Filters as SQL over the index: `--layer`, `--type`, `--year` and the flags, each option's values
ORed, different options ANDed; and every record they select."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from invmap.errors import UsageError
from invmap.fields import SOURCE_FIELDS
from invmap.filters import FILTERS, VALUE_CLAUSES
from invmap.query.choices import did_you_mean, split_values
from invmap.vocabulary import LAYER_CODES, LAYER_CODES_TEXT, layer_codes

if TYPE_CHECKING:
    from invmap.index import Index

_LOOKS_LIKE_CODE = re.compile(r"^[LP]\d+$", re.IGNORECASE)
_DIGIT_CODE = re.compile(r"^[1-6]$")
_YEAR_SPAN = re.compile(r"^(\d{4})?(\.\.)?(\d{4})?$")


class YearSpan(NamedTuple):
    """An inclusive span of years (either end open), or `undated` for n.d."""

    low: int | None
    high: int | None
    undated: bool = False

    def sql(self) -> tuple[str, list[Any]]:
        if self.undated:
            return "year IS NULL", []
        parts, params = [], []
        if self.low is not None:
            parts.append("year >= ?")
            params.append(self.low)
        if self.high is not None:
            parts.append("year <= ?")
            params.append(self.high)
        return "(" + " AND ".join(parts or ["year IS NOT NULL"]) + ")", params


def parse_year(value: str) -> YearSpan:
    """`2024`, `2023..2025`, `2025..`, `..2017` or `n.d.`."""
    text = value.strip()
    if text.casefold() in ("n.d.", "n.d", "nd"):
        return YearSpan(None, None, undated=True)
    m = _YEAR_SPAN.match(text)
    if not text or not m or (m.group(2) is None and m.group(3) is not None) or text == "..":
        raise UsageError(f"malformed year '{value}' (use 2024, 2023..2025, 2025.., ..2017 or n.d.)")
    low = int(m.group(1)) if m.group(1) else None
    high = int(m.group(3)) if m.group(3) else None
    if m.group(2) is None:
        return YearSpan(low, low)
    if low is not None and high is not None and low > high:
        raise UsageError(f"reversed year range '{value}': write {high}..{low}")
    return YearSpan(low, high)


def level_matches(text: str, title: str, scope: str | None) -> bool:
    """Whole words or phrases of a level's title or scope: `disaggregation`, `cache management`."""
    pattern = r"(?<!\w)" + r"\s+".join(map(re.escape, text.split())) + r"(?!\w)"
    return any(re.search(pattern, part or "", re.IGNORECASE) for part in (title, scope))


@dataclass
class Filters:
    """Values of one option are ORed; different options are ANDed. `where` is SQL over the index."""

    clauses: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)
    codes: set[str] | None = None  # the level codes a --layer option selected (None: no --layer)
    described: list[str] = field(default_factory=list)  # `--type survey --layer L1`, for messages

    @property
    def where(self) -> str:
        return " AND ".join(self.clauses)

    def and_(self, other: Filters) -> Filters:
        """The sources both select (`--type survey` within one level, for triage)."""
        return Filters([*self.clauses, *other.clauses], [*self.params, *other.params])

    def add(self, parts: list[tuple[str, list[Any]]]) -> None:
        if parts:
            self.clauses.append(_any([sql for sql, _ in parts]))
            for _, params in parts:
                self.params.extend(params)


def _any(clauses: list[str]) -> str:
    """`(a OR b OR ...)` nested as a balanced tree: a thousand values stay far below SQLite's limit on
    expression depth (a flat chain of ORs is as deep as it is long)."""
    if len(clauses) == 1:
        return f"({clauses[0]})"
    half = len(clauses) // 2
    return f"({_any(clauses[:half])} OR {_any(clauses[half:])})"


def _in(column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    if not values:
        return "0", []
    return f"{column} IN ({', '.join('?' * len(values))})", list(values)


def layer_clause(index: Index, value: str) -> tuple[str, list[Any], list[str]]:
    """A code (L5, l5, or the digit 5), words of a level's title or scope (`disaggregation`), or part
    of a label: (SQL, its parameters, the level codes selected)."""
    text = value.strip()
    if _DIGIT_CODE.match(text):  # a bare digit 1-6 always names its level, never label text holding it
        text = f"L{text}"
    if text.upper() in LAYER_CODES:
        return "pos IN (SELECT pos FROM codes WHERE code = ?)", [text.upper()], [text.upper()]
    if text and not _LOOKS_LIKE_CODE.match(text):
        codes = [code for code, (title, scope) in index.levels().items() if level_matches(text, title, scope)]
        labels = [label for label in index.distinct("layer") if text.casefold() in label.casefold()]
        if codes or labels:
            by_code = _in("code", codes)
            return (
                f"(pos IN (SELECT pos FROM codes WHERE {by_code[0]}) OR {_in('layer', labels)[0]})",
                by_code[1] + labels,
                codes + [c for lab in labels for c in layer_codes(lab)],
            )
    raise _unknown_layer(index, value, text)


def _unknown_layer(index: Index, value: str, text: str) -> UsageError:
    """The usage error for a layer value that names nothing, with the nearest code or words."""
    if _LOOKS_LIKE_CODE.match(text):
        close = did_you_mean(text, LAYER_CODES) or _nearest_code(text)
        hint = f"; did you mean '{close}'?" if close else ""
        return UsageError(f"unknown layer code '{value}'{hint} (valid codes: {LAYER_CODES_TEXT})")
    words = [t for t, _ in index.levels().values()] + [lab for lab in index.distinct("layer") if not layer_codes(lab)]
    close = did_you_mean(text, [*LAYER_CODES, *words])
    hint = f"; did you mean '{close}'?" if close else ""
    free = ", ".join(lab for lab in index.distinct("layer") if not layer_codes(lab))
    return UsageError(
        f"unknown layer '{value}'{hint} (use a code, {LAYER_CODES_TEXT}; words of a level's title or "
        f"scope, see 'invmap layers'; or part of a layer label" + (f" such as {free})" if free else ")")
    )


def _nearest_code(text: str) -> str | None:
    """`L9` -> L6, `L0` -> L1, `P3` -> P0: the nearest code of the same letter."""
    letter, number = text[0].upper(), int(text[1:])
    same = [c for c in LAYER_CODES if c[0] == letter]
    return min(same, key=lambda c: abs(int(c[1:]) - number)) if same else None


def type_values(index: Index, value: str) -> list[str]:
    """The catalog's spelling of a type, matched case-insensitively."""
    types = index.types()
    found = [t for t in types if t.casefold() == value.strip().casefold()]
    if found:
        return found
    close = did_you_mean(value, types)
    hint = f"; did you mean '{close}'?" if close else ""
    raise UsageError(f"unknown type '{value}'{hint} (valid types: {', '.join(types)})")


def _layer_parts(index: Index, values: list[str], filters: Filters) -> list[tuple[str, list[Any]]]:
    parts = [layer_clause(index, v) for v in values]
    filters.codes = {code for _, _, codes in parts for code in codes}
    return [(sql, params) for sql, params, _ in parts]


def _type_parts(index: Index, values: list[str], filters: Filters) -> list[tuple[str, list[Any]]]:
    return [_in("type", list(dict.fromkeys(t for v in values for t in type_values(index, v))))]


def _year_parts(index: Index, values: list[str], filters: Filters) -> list[tuple[str, list[Any]]]:
    return [parse_year(v).sql() for v in values]


# The clause builders a value filter's `clause` names (filters.FILTERS); a flag's clause is its SQL.
CLAUSES = {"layer": _layer_parts, "type": _type_parts, "year": _year_parts}
if VALUE_CLAUSES - CLAUSES.keys():  # a filter declared without its clause fails every command at once
    raise ImportError(f"filters.FILTERS names clauses query.CLAUSES lacks: {sorted(VALUE_CLAUSES - CLAUSES.keys())}")


def build_filters(index: Index, values: dict[str, Any]) -> Filters:
    """The filter bundle's values (`filters.FILTERS`, by dest) -> one Filters. Values of one option are
    ORed (repeated, or a comma list, each value once), different options ANDed."""
    filters = Filters()
    for o in FILTERS:
        given = values.get(o.dest)
        if not given:
            continue
        if o.kind == "flag":
            filters.add([(o.clause, [])])
            filters.described.append(o.flags[0])
            continue
        parts = list(dict.fromkeys(split_values(given)))
        if not parts:
            continue
        filters.add(CLAUSES[o.clause](index, parts, filters))
        filters.described += [f"{o.flags[0]} {v}" for v in parts]
    return filters


def records_matching(index: Index, filters: Filters, columns: Sequence[str] = SOURCE_FIELDS) -> list[dict[str, Any]]:
    """Every record the filters select, whole, in catalog order (for views that count or group them)."""
    return index.records(filters.where, filters.params, columns)
