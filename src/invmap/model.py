"""Typed records of the map: sources, the catalog around them, and layer-label parsing.

No I/O here: `catalog.py` reads and writes files, this module only says what a valid record is.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

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


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


def _valid_layer(label: str) -> str:
    _not_blank(label)
    layer_codes(label)
    return label


def _plausible_year(year: int) -> int:
    latest = dt.date.today().year + 1
    if not 1900 <= year <= latest:
        raise ValueError(f"implausible year {year} (expected 1900 to {latest}, or leave it out for n.d.)")
    return year


Text = Annotated[str, AfterValidator(_not_blank)]
SourceId = Annotated[str, Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")]
ArxivId = Annotated[str, Field(pattern=r"^\d{4}\.\d{4,5}(?:v\d+)?$")]
Doi = Annotated[str, Field(pattern=r"^10\.\d{4,9}/\S+$")]
Url = Annotated[str, Field(pattern=r"^https?://\S+$")]
Year = Annotated[int, AfterValidator(_plausible_year)]
LayerLabel = Annotated[str, AfterValidator(_valid_layer)]

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


class Source(BaseModel):
    """One row of the map. Strict: a typo'd key or a year written as text fails loudly."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: SourceId
    name: Text
    source: Text
    authors: Text | None = None
    arxiv: ArxivId | None = None
    doi: Doi | None = None
    url: Url | None = None
    type: Text
    year: Year | None = None
    layer: LayerLabel
    mechanism: Text
    objective: Text
    question: Text
    availability: Text
    accessed: dt.date

    @property
    def layers(self) -> tuple[str, ...]:
        return layer_codes(self.layer)

    @property
    def link(self) -> str | None:
        """The catalog's own link, else the arXiv abstract page, else the DOI resolver link."""
        if self.url:
            return self.url
        if self.arxiv:
            return f"https://arxiv.org/abs/{self.arxiv}"
        if self.doi:
            return f"https://doi.org/{self.doi}"
        return None

    @property
    def year_text(self) -> str:
        return "n.d." if self.year is None else str(self.year)

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract: every key present, `url` the effective link, dates as text."""
        return {
            "id": self.id,
            "name": self.name,
            "source": self.source,
            "authors": self.authors,
            "arxiv": self.arxiv,
            "doi": self.doi,
            "url": self.link,
            "type": self.type,
            "year": self.year,
            "layer": self.layer,
            "layers": list(self.layers),
            "mechanism": self.mechanism,
            "objective": self.objective,
            "question": self.question,
            "availability": self.availability,
            "accessed": self.accessed.isoformat(),
        }


class CatalogInfo(BaseModel):
    """The `[catalog]` table: the prose around the seed's table."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    title: Text
    preface: str = ""
    procedure: list[Text] = []
    afterword: str = ""


def _known_layer_keys(titles: dict[str, str]) -> dict[str, str]:
    for code in titles:
        if code not in LAYER_CODES:
            raise ValueError(f"unknown layer code '{code}' (valid codes: {LAYER_CODES_TEXT})")
    return titles


class Catalog(BaseModel):
    """A whole catalog file. Duplicate ids are checked by `catalog.py`, which reports every problem at once."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    catalog: CatalogInfo
    layers: Annotated[dict[str, Text], AfterValidator(_known_layer_keys)] = {}
    sources: Annotated[list[Source], Field(min_length=1)]
