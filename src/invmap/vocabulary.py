"""The map's vocabulary: layer codes and how labels name them, field order, the seed's columns.

Plain constants and one pure function, with no pydantic: completion, help and the records all
share them, and the light paths must not pay for building the models.
"""

from __future__ import annotations

import re
from functools import lru_cache

# The layer codes of the map, in display order: six system layers, then the portfolio layer.
LAYER_CODES: tuple[str, ...] = ("L1", "L2", "L3", "L4", "L5", "L6", "P0")
LAYER_CODES_TEXT = "L1, L2, L3, L4, L5, L6, P0"

# "L3", "l3", and ranges such as "L4 to L6", "L4-L6" or "L4..L6".
_CODE_OR_RANGE = re.compile(
    r"\b([LP])(\d+)\b(?:\s*(?:to|-|–|\.\.)\s*\b([LP])(\d+)\b)?", re.IGNORECASE
)


@lru_cache(maxsize=4096)
def layer_codes(label: str) -> tuple[str, ...]:
    """The layer codes a label covers, in map order.

    `L3` -> (L3,); `L2 and L3` -> (L2, L3); `L4 to L6` -> (L4, L5, L6); `Runtime lever` -> ().
    A code outside L1..L6/P0 (`L9`) or a reversed range (`L6 to L4`) raises ValueError.
    """
    found: set[str] = set()
    for match in _CODE_OR_RANGE.finditer(label):
        letter, first, end_letter, last = match.groups()
        start = f"{letter.upper()}{int(first)}"
        _require_code(start, label)
        if end_letter is None:
            found.add(start)
            continue
        end = f"{end_letter.upper()}{int(last)}"
        _require_code(end, label)
        i, j = LAYER_CODES.index(start), LAYER_CODES.index(end)
        if end_letter.upper() != letter.upper() or j < i:
            raise ValueError(f"layer range '{match.group(0)}' in {label!r} does not go from a lower to a higher code")
        found.update(LAYER_CODES[i : j + 1])
    return tuple(code for code in LAYER_CODES if code in found)


def _require_code(code: str, label: str) -> None:
    if code not in LAYER_CODES:
        raise ValueError(f"unknown layer code '{code}' in {label!r} (valid codes: {LAYER_CODES_TEXT})")


# Field order of a source everywhere: catalog.toml, JSON, CSV. `layers` is derived from `layer`.
SOURCE_FIELDS: tuple[str, ...] = (
    "id", "name", "source", "authors", "arxiv", "doi", "url", "type", "year",
    "layer", "layers", "mechanism", "objective", "question", "availability", "accessed",
)  # fmt: skip

# The nine columns of the seed's table, with the seed's headers.
SEED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Direction/type", "type"),
    ("Source", "source"),
    ("Year", "year"),
    ("Layer", "layer"),
    ("Central mechanism", "mechanism"),
    ("Reported objective", "objective"),
    ("Unresolved engineering question", "question"),
    ("Implementation availability", "availability"),
    ("Accessed", "accessed"),
)

# Fields of search and related results: a source's, plus its score.
SCORED_FIELDS: tuple[str, ...] = (*SOURCE_FIELDS, "score")

# One-line meaning of every field, for `invmap fields` and for completion help.
FIELD_HELP: dict[str, str] = {
    "id": "unique lowercase kebab-case id (e.g. pagedattention, llm-d)",
    "name": "short name (PagedAttention, vLLM)",
    "source": "the seed's Source cell, verbatim",
    "authors": "authors as the Source names them, or null",
    "arxiv": "arXiv id, or null",
    "doi": "DOI, or null",
    "url": "the catalog's own link, else the arXiv or DOI page, or null",
    "type": "direction/type (Current, Foundational, Official project, ...)",
    "year": "publication year, or null for n.d.",
    "layer": "layer label, verbatim (L3, L2 and L3, Runtime lever)",
    "layers": "layer codes the label covers (L1..L6, P0)",
    "mechanism": "central mechanism",
    "objective": "reported objective",
    "question": "unresolved engineering question",
    "availability": "implementation availability",
    "accessed": "access date, YYYY-MM-DD",
    "score": "search or related score, 0-100 (search and related only)",
}
