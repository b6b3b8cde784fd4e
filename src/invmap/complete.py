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
    """Ids whose id or name starts with what was typed, case-insensitively; the name is the help."""
    typed = incomplete.casefold()
    return [(i, n) for i, n in index["sources"] if i.startswith(typed) or n.casefold().startswith(typed)]


def layers(index: Index, incomplete: str) -> list[tuple[str, str]]:
    typed = incomplete.casefold()
    return [(code, title) for code, title in index["layers"].items() if code.casefold().startswith(typed)]


def types(index: Index, incomplete: str) -> list[tuple[str, str]]:
    typed = incomplete.casefold()
    return [(t, "") for t in index["types"] if t.casefold().startswith(typed)]


def choices(values: Sequence[str], incomplete: str, helps: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [(v, (helps or {}).get(v, "")) for v in values if v.startswith(incomplete)]


def fields(allowed: Sequence[str], incomplete: str, helps: dict[str, str]) -> list[tuple[str, str]]:
    """`--fields id,na` -> `id,name`: complete the last name after the comma, skipping ones given."""
    done, _, last = incomplete.rpartition(",")
    given = set(done.split(",")) if done else set()
    prefix = f"{done}," if done else ""
    return [(prefix + f, helps.get(f, "")) for f in allowed if f.startswith(last) and f not in given]
