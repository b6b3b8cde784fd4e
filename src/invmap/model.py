"""Typed records of the map: a source, and the catalog around the sources.

No I/O here: `catalog.py` reads and writes files, this module only says what a valid record is.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, NamedTuple

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from invmap.vocabulary import LAYER_CODES, LAYER_CODES_TEXT, layer_codes


def _valid_layer(label: str) -> str:
    layer_codes(label)
    return label


# Constraints pydantic checks in Rust rather than Python callbacks: at 100,000 sources a callback
# per text field costs ~0.3 s. `catalog.describe_error` words their errors for people.
NOT_BLANK = r"\S"
FIRST_YEAR = 1900
LAST_YEAR = dt.date.today().year + 1  # "after next year" is implausible

Text = Annotated[str, Field(pattern=NOT_BLANK)]
SourceId = Annotated[str, Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")]
ArxivId = Annotated[str, Field(pattern=r"^\d{4}\.\d{4,5}(?:v\d+)?$")]
Doi = Annotated[str, Field(pattern=r"^10\.\d{4,9}/\S+$")]
Url = Annotated[str, Field(pattern=r"^https?://\S+$")]
Year = Annotated[int, Field(ge=FIRST_YEAR, le=LAST_YEAR)]
LayerLabel = Annotated[str, Field(pattern=NOT_BLANK), AfterValidator(_valid_layer)]

class Source(NamedTuple):
    """One row of the map.

    A NamedTuple rather than a BaseModel: pydantic validates it just as strictly (inside `Catalog`,
    with `extra="forbid"` and strict types), but building 100,000 of them from the parsed-catalog
    cache costs ~50 ms instead of ~1 s. Required fields come first (a NamedTuple rule); the order
    fields are shown and written in is `SOURCE_FIELDS`.
    """

    id: SourceId
    name: Text
    source: Text
    type: Text
    layer: LayerLabel
    mechanism: Text
    objective: Text
    question: Text
    availability: Text
    accessed: dt.date
    authors: Text | None = None
    arxiv: ArxivId | None = None
    doi: Doi | None = None
    url: Url | None = None
    year: Year | None = None

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

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

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
    """A whole catalog file. Duplicate ids are checked by `catalog.py`, which reports every problem at once.

    `defer_build`: the validator is built on the first validation, so a run served from the
    parsed-catalog cache (`model_construct`) never pays for it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    catalog: CatalogInfo
    layers: Annotated[dict[str, Text], AfterValidator(_known_layer_keys)] = {}
    sources: Annotated[list[Source], Field(min_length=1)]
