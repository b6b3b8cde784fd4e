"""Completion candidates as (value, help) pairs, from a small index of the catalog.

No typer and no pydantic here: the same functions answer Typer's completion callbacks and the
fast path in `entry.py` that replies before typer is imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypedDict

from invmap.vocabulary import LAYER_CODES


class Index(TypedDict):
    """What completion needs from a catalog, small enough to read on every TAB."""

    sources: list[tuple[str, str]]  # (id, name) in catalog order
    types: list[str]
    layers: dict[str, str]  # code -> title ("" where the catalog gives none)


def build_index(sources: Iterable[tuple[str, str, str]], layer_titles: dict[str, str]) -> Index:
    """From (id, name, type) triples and the catalog's `[layers]` titles."""
    entries = list(sources)
    types = sorted({t for _, _, t in entries}, key=str.casefold)
    return {
        "sources": [(i, n) for i, n, _ in entries],
        "types": types,
        "layers": {code: layer_titles.get(code, "") for code in LAYER_CODES},
    }


def sources(index: Index, incomplete: str) -> list[tuple[str, str]]:
    """Ids starting with what was typed (the name as help); else one-word names (`Pag` -> PagedAttention).

    Typer keeps only values that start with the typed text, case and all, so a name is offered
    when the typed text matches it and no id; names with spaces would split into words in bash.
    """
    ids = [(i, n) for i, n in index["sources"] if i.startswith(incomplete)]
    if ids or not incomplete:
        return ids
    return [(n, i) for i, n in index["sources"] if n.startswith(incomplete) and not any(c.isspace() for c in n)]


def layers(index: Index, incomplete: str) -> list[tuple[str, str]]:
    """Layer codes with their titles; lowercase ones when the typed text is lowercase (`l` -> l1, l2, ...)."""
    return _either_case(list(index["layers"].items()), incomplete)


def types(index: Index, incomplete: str) -> list[tuple[str, str]]:
    return _either_case([(t, "") for t in index["types"]], incomplete)


def _either_case(items: list[tuple[str, str]], incomplete: str) -> list[tuple[str, str]]:
    exact = [(v, h) for v, h in items if v.startswith(incomplete)]
    if exact:
        return exact
    return [(v.lower(), h) for v, h in items if v.lower().startswith(incomplete)]


def choices(values: Sequence[str], incomplete: str, helps: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [(v, (helps or {}).get(v, "")) for v in values if v.startswith(incomplete)]


def fields(allowed: Sequence[str], incomplete: str, helps: dict[str, str]) -> list[tuple[str, str]]:
    """`--fields id,na` -> `id,name`: complete the last name after the comma, skipping ones given."""
    done, _, last = incomplete.rpartition(",")
    given = set(done.split(",")) if done else set()
    prefix = f"{done}," if done else ""
    return [(prefix + f, helps.get(f, "")) for f in allowed if f.startswith(last) and f not in given]
