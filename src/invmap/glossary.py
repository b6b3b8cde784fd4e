"""The catalog's glossary: finding a term by its name, expansion or alias (`invmap define`).

Search uses the same entries to expand queries both ways (`search/expansion.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from invmap.errors import NotFoundError


def _key(text: str) -> str:
    from invmap.text import normalize

    return normalize(text)


def names(entry: dict[str, Any]) -> list[str]:
    return [entry["term"], *([entry["expansion"]] if entry["expansion"] else []), *entry["aliases"]]


def lookup(entries: Sequence[dict[str, Any]], wanted: Sequence[str]) -> list[dict[str, Any]]:
    """The entries named by `wanted` (term, expansion or alias; case, spaces and punctuation ignored),
    in that order. Words that together name a term are one name (`define kv cache`); any unknown name
    is NotFoundError (exit 1) with the nearest terms."""
    by_name = {_key(n): e for e in entries for n in names(e)}
    whole = by_name.get(_key(" ".join(wanted)))
    if whole is not None:
        return [whole]
    out = []
    for name in wanted:
        entry = by_name.get(_key(name))
        if entry is None:
            if not entries:
                raise NotFoundError(f"no glossary term '{name}': this catalog has no [glossary]")
            shown = nearest(entries, name)
            raise NotFoundError(
                f"no glossary term '{name}'",
                candidates=shown,
                hint="did you mean" if shown else "see 'invmap define' for every term",
            )
        if entry not in out:
            out.append(entry)
    return out


def nearest(entries: Sequence[dict[str, Any]], name: str, limit: int = 3) -> list[str]:
    """The terms whose names are closest to `name` (rapidfuzz's WRatio, at least 70), best first. A name
    of one or two letters is compared whole (ratio): WRatio's partial match would find `dp` inside
    `goodptu` and rank DP above goodput."""
    from rapidfuzz import fuzz, process, utils

    def score(a: str, b: str, **kwargs: Any) -> float:
        return (fuzz.ratio if min(len(a), len(b)) < 3 else fuzz.WRatio)(a, b, **kwargs)

    choices = {n: e["term"] for e in entries for n in names(e)}
    found = process.extract(name, list(choices), scorer=score, processor=utils.default_process, limit=10)
    out: list[str] = []
    for match, score, _ in found:
        if score >= 70 and choices[match] not in out:
            out.append(choices[match])
    return out[:limit]
