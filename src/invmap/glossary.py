"""The catalog's glossary: finding a term by its name, expansion or alias (`invmap define`).

Search uses the same entries to expand queries both ways (`search.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from invmap.errors import NotFoundError


def _key(text: str) -> str:
    from invmap.index import normalize

    return normalize(text)


def names(entry: dict[str, Any]) -> list[str]:
    return [entry["term"], *([entry["expansion"]] if entry["expansion"] else []), *entry["aliases"]]


def lookup(entries: Sequence[dict[str, Any]], wanted: Sequence[str]) -> list[dict[str, Any]]:
    """The entries named by `wanted` (term, expansion or alias; case, spaces and punctuation ignored),
    in that order; any unknown name is NotFoundError (exit 1) with the nearest terms."""
    by_name = {_key(n): e for e in entries for n in names(e)}
    out = []
    for name in wanted:
        entry = by_name.get(_key(name))
        if entry is None:
            from difflib import get_close_matches

            terms = [e["term"] for e in entries]
            close = get_close_matches(name.casefold(), [t.casefold() for t in terms], n=3, cutoff=0.5)
            shown = [t for t in terms if t.casefold() in close]
            if not entries:
                raise NotFoundError(f"no glossary term '{name}': this catalog has no [glossary]")
            raise NotFoundError(
                f"no glossary term '{name}'",
                candidates=shown,
                hint="did you mean" if shown else "see 'invmap define' for every term",
            )
        if entry not in out:
            out.append(entry)
    return out
