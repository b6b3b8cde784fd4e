"""FTS5 expressions: a phrase, a group's alternatives in some columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from invmap.search.terms import Group


def phrase(words: Sequence[str]) -> str:
    return '"' + " ".join(words) + '"'  # words are letters and digits only: nothing to escape


def expression(alternatives: Sequence[Sequence[str]], columns: Sequence[str] | None) -> str:
    body = " OR ".join(phrase(a) for a in alternatives)
    if columns is None:
        return f"({body})"
    return "{" + " ".join(columns) + "} : (" + body + ")"


def group_expression(g: Group, columns: Sequence[str], table_columns: Sequence[str] | None = None) -> str | None:
    """The FTS5 expression of one word's alternatives in `columns` (its own `field:` column if it names
    one); None when that column is not one of `table_columns` (the table searched holds no such column)."""
    if not g.alternatives:
        return None
    if g.column and table_columns is not None and g.column not in table_columns:
        return None
    return expression(g.alternatives, [g.column] if g.column else columns)
