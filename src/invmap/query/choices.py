"""Reading option values: a comma list means the same as repeating the option, and a value that
names nothing gets the nearest valid one as a suggestion."""

from __future__ import annotations

from collections.abc import Sequence


def split_values(values: Sequence[str] | None) -> list[str]:
    """`--layer L3,L5 --layer L1` -> [L3, L5, L1]: a comma list means the same as repeating the option."""
    return [part.strip() for value in values or () for part in value.split(",") if part.strip()]


def did_you_mean(value: str, choices: Sequence[str]) -> str | None:
    from difflib import get_close_matches

    folded = {c.casefold(): c for c in choices}
    close = get_close_matches(value.casefold(), list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None
