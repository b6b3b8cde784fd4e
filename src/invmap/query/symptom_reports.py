"""The catalog's real symptom reports: chosen by level, engine or source, grouped by source, and
shown in brief beside a source."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invmap.errors import NotFoundError, UsageError
from invmap.query.choices import did_you_mean, split_values

if TYPE_CHECKING:
    from invmap.index import Index

REPORT_KEYS = ("id", "title", "url", "engine", "primary", "secondary", "sources", "resolution", "accessed")
"""A report's JSON contract, in order."""
REPORT_SHOWN = ("id", "engine", "level", "title", "url")  # a table's and plain's columns
# `level` (shown only): the primary code, then the secondary one in parentheses when there is one.


def reports(
    index: Index, levels: Sequence[str] = (), engines: Sequence[str] = (), sources: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The catalog's reports that match every option given (values of one option ORed): `levels` by
    primary or secondary code (those whose primary level matches first, then those matching by their
    secondary one), `engines` by name (any case), `sources` by id. An unknown level code, an empty
    value or an unknown source id is a usage error naming the valid ones; an engine no report
    names is not found (exit 1), listing the engines reports name."""
    codes = _level_codes(levels)
    wanted_sources = split_values(sources)
    for flag, given in (("--source", sources), ("--engine", engines), ("--layer", levels)):
        if given and any(not part.strip() for value in given for part in value.split(",")):
            raise UsageError(f"{flag} needs a value: an empty one selects nothing")
    if wanted_sources:
        _check_sources(index, wanted_sources)
    everything = index.reports()
    folded = {e.casefold() for e in split_values(engines)}
    _check_engines(everything, folded)
    primary, secondary = [], []
    for r in everything:
        if codes and r["primary"] not in codes and r["secondary"] not in codes:
            continue
        if folded and r["engine"].casefold() not in folded:
            continue
        if wanted_sources and not set(wanted_sources) & set(r["sources"]):
            continue
        (secondary if codes and r["primary"] not in codes else primary).append({k: r[k] for k in REPORT_KEYS})
    return primary + secondary


def level_shown(report: dict[str, Any]) -> str:
    """`L1`, or `L1 (L3)` when the report has a secondary level."""
    return f"{report['primary']} ({report['secondary']})" if report.get("secondary") else report["primary"]


def _check_engines(reports: list[dict[str, Any]], folded: set[str]) -> None:
    if not folded:
        return
    known = sorted({r["engine"] for r in reports}, key=str.casefold)
    missing = sorted(folded - {e.casefold() for e in known})
    if missing:
        close = did_you_mean(missing[0], known)
        hint = f"; did you mean '{close}'?" if close else ""
        raise NotFoundError(
            f"no report from engine '{missing[0]}'{hint} (engines the reports name: {', '.join(known)})"
        )


def _level_codes(levels: Sequence[str]) -> list[str]:
    """`--level` values as codes; one that is no report level is a usage error."""
    from invmap.vocabulary import TRIAGE_CODES

    codes = [v.upper() for v in split_values(levels)]
    unknown = [c for c in codes if c not in TRIAGE_CODES]
    if unknown:
        raise UsageError(f"unknown level '{unknown[0]}' (report levels: {', '.join(TRIAGE_CODES)})")
    return codes


def _check_sources(index: Index, wanted: Sequence[str]) -> None:
    """A `--source` id the catalog lacks is a usage error, with the nearest id."""
    known = {r["id"] for r in index.records(columns=("id",))}
    if missing := [s for s in wanted if s not in known]:
        hint = did_you_mean(missing[0], sorted(known))
        raise UsageError(f"no source '{missing[0]}'" + (f"; did you mean '{hint}'?" if hint else ""))


def reports_by_source(index: Index) -> dict[str, list[str]]:
    """source id -> the ids of the reports that name it, in catalog order."""
    out: dict[str, list[str]] = {}
    for r in index.reports():
        for source in r["sources"]:
            out.setdefault(source, []).append(r["id"])
    return out


SHOWN_REPORTS = 3  # reports `show` names on a terminal or in plain text; JSON lists them all


def reports_in_brief(record: dict[str, Any]) -> dict[str, Any]:
    """A record whose `reports` names at most three, then how many more there are."""
    ids = record.get("reports") or []
    if len(ids) <= SHOWN_REPORTS:
        return record
    more = f"+{len(ids) - SHOWN_REPORTS} more"  # `invmap reports --source ID` lists them
    return {**record, "reports": [*ids[:SHOWN_REPORTS], more]}
