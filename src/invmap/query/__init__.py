"""Selecting sources from the index: filters, sorting, name and identifier resolution, the search
and related-source results built on `invmap.search`'s retrieval, and the catalog's reports.

rapidfuzz is imported only to resolve a name that matches nothing exactly (and, in `invmap.search`,
to correct a typo), so `list` and `questions` never pay for it. Records are the JSON-contract dicts
the index returns.

The modules, one job each:
  choices.py          option values: comma lists, the nearest valid value
  filtering.py        filters as SQL (`--layer`, `--type`, `--year`, flags)
  sorting.py          sorting by one key; a selection read lazily
  resolving.py        a name, id or identifier to one source
  searching.py        `search`, `related` and the bare ranking triage uses
  why.py              why a search result matched
  symptom_reports.py  the catalog's real symptom reports
"""

from __future__ import annotations

from invmap.fields import SORT_KEYS, SOURCE_FIELDS
from invmap.query.choices import did_you_mean, split_values
from invmap.query.filtering import (
    CLAUSES,
    Filters,
    YearSpan,
    build_filters,
    layer_clause,
    level_matches,
    parse_year,
    records_matching,
    type_values,
)
from invmap.query.resolving import MATCH_CUTOFF, SHOWN_CANDIDATES, TIE_MARGIN, label, resolve, resolve_all
from invmap.query.searching import ranked, related, search, search_fields
from invmap.query.sorting import check_sort_key, lazy_selection, sort_records
from invmap.query.symptom_reports import (
    REPORT_KEYS,
    REPORT_SHOWN,
    SHOWN_REPORTS,
    reports,
    reports_by_source,
    reports_in_brief,
)
from invmap.query.why import WHY_WIDTH

__all__ = [
    "CLAUSES", "MATCH_CUTOFF", "REPORT_KEYS", "REPORT_SHOWN", "SHOWN_CANDIDATES", "SHOWN_REPORTS", "SORT_KEYS",
    "SOURCE_FIELDS", "TIE_MARGIN", "WHY_WIDTH", "Filters", "YearSpan", "build_filters", "check_sort_key",
    "did_you_mean", "label", "layer_clause", "lazy_selection", "level_matches", "parse_year", "ranked",
    "records_matching", "related", "reports", "reports_by_source", "reports_in_brief", "resolve", "resolve_all",
    "search", "search_fields", "sort_records", "split_values", "type_values",
]  # fmt: skip
