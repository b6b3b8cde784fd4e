"""Derive a source's id, short name, authors, arXiv id and DOI from the seed's Source cell.

The same code built the shipped catalog.toml and runs in `invmap import`, so a table re-imported
from an export gets the same derived fields back.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from invmap.fields import MAX_ID

# "vLLM documentation and public source" is the project vLLM; the suffix describes the reading.
_PROJECT_SUFFIX = re.compile(r"\s+documentation and public source$", re.IGNORECASE)
_ARXIV = re.compile(r"^arXiv:\s*(\S+)$", re.IGNORECASE)
_DOI = re.compile(r"^DOI:\s*(\S+)$", re.IGNORECASE)


class Derived(NamedTuple):
    id: str
    name: str
    authors: str | None
    arxiv: str | None
    doi: str | None


def slug(text: str, limit: int | None = None) -> str:
    """Lowercase kebab-case: `PagedAttention` -> `pagedattention`, `llm-d` -> `llm-d`; with `limit`, at
    most that many characters, cut after a whole word (`fast-inference-from` for a long title), inside
    the first word only when it alone is longer."""
    whole = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if limit is None or len(whole) <= limit:
        return whole
    cut = whole[: limit + 1].rpartition("-")[0] if whole[limit] != "-" else whole[:limit]
    return (cut or whole[:limit]).strip("-")


def unique_slug(text: str, taken: set[str], limit: int = MAX_ID) -> str:
    """`slug(text)`, or with `-2`, `-3`, ... when that id is taken (the whole still at most `limit`)."""
    ident = slug(text, limit) or "source"
    n = 1
    while ident in taken:
        n += 1
        suffix = f"-{n}"
        ident = (slug(text, limit - len(suffix)) or "source") + suffix
    return ident


def derive(source: str) -> Derived:
    """Split `Title, Authors, arXiv:ID` style text into its parts.

    `Mooncake, arXiv:2407.00079` -> name Mooncake, arxiv 2407.00079;
    `Roofline, Williams, Waterman, and Patterson` -> name Roofline, those authors;
    a bare title is its own name.
    """
    head, _, tail = source.partition(", ")
    name = _PROJECT_SUFFIX.sub("", head.strip()) or head.strip()
    arxiv = doi = None
    author_parts: list[str] = []
    for part in tail.split(", ") if tail else []:
        if m := _ARXIV.match(part.strip()):
            arxiv = m.group(1)
        elif m := _DOI.match(part.strip()):
            doi = m.group(1)
        else:
            author_parts.append(part)
    authors = ", ".join(author_parts).strip() or None
    return Derived(slug(name) or "source", name, authors, arxiv, doi)
