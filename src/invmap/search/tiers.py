"""`search`'s candidate tiers as FTS5 expressions, for a ranking whose rows never leave SQLite until
an answer needs them (`bm25f.Ranking._counted`): a tier is the rows holding exactly some of the
query's words (with or without the phrase), so it is `((a) AND (b)) NOT ((c))`, then `AND` or `NOT`
the phrase, and its size is a `count(*)`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from invmap.search.terms import Group, Query

PATTERNS = 5  # up to this many words, the rows covering each subset of them are found by set algebra
Tier = tuple[float, bool]  # (minus the rarity covered, not holding the phrase): the cheap order's first part


def plain(query: Query, expressions: Sequence[str | None]) -> list[int] | None:
    """The groups with an expression, for a query tiers can rank (no required phrase, no excluded
    word, no --exact, 1 to PATTERNS words); None for any other."""
    if query.excluded or query.exact or any(g.required for g in query.groups):
        return None
    own = [k for k, e in enumerate(expressions) if e]
    return own if 0 < len(own) <= PATTERNS else None


def tier_parts(
    expressions: Sequence[str | None], own: Sequence[int], rarity: Sequence[float], phrase: str | None
) -> dict[Tier, list[tuple[str, int]]]:
    """Each tier -> its parts: (FTS5 expression, bit mask of the groups its rows hold). A subset's
    rarity is added in the groups' order from 0, as a row's is when it is summed group by group;
    subsets of the same rarity share a tier, as their rows share a key."""
    out: dict[Tier, list[tuple[str, int]]] = {}
    for mask in range(1, 1 << len(own)):
        inside = [own[n] for n in range(len(own)) if mask >> n & 1]
        outside = [own[n] for n in range(len(own)) if not mask >> n & 1]
        c = 0  # added one by one from 0, as a row's is: sum() of floats compensates from Python 3.12
        for k in inside:
            c += rarity[k]
        part = _exactly(expressions, inside, outside)
        bits = sum(1 << k for k in inside)
        if phrase:
            out.setdefault((-c, False), []).append((f"({part} AND ({phrase}))", bits))
            out.setdefault((-c, True), []).append((f"({part} NOT ({phrase}))", bits))
        else:
            out.setdefault((-c, True), []).append((part, bits))
    return out


def _exactly(expressions: Sequence[str | None], inside: Sequence[int], outside: Sequence[int]) -> str:
    """The rows matching every expression of `inside` and none of `outside`."""
    part = "(" + " AND ".join(f"({expressions[k]})" for k in inside) + ")"
    if outside:
        part = f"({part} NOT ({' OR '.join(f'({expressions[k]})' for k in outside)}))"
    return part


def weight(groups: Sequence[Group], bits: int) -> int:
    """What a row holding the groups of `bits` counts as matched (`coverage.rows_held`'s sum)."""
    return sum(g.weight for k, g in enumerate(groups) if bits >> k & 1)
