"""Engine settings: the flags that switch a source's mechanism on, one row per flag (`settings`).

Core: no typer, no rich. `settings_of` takes records in the JSON contract's form (as `show --json`
gives them, or as the index reads them) and is what any command that carries settings calls (a
triage level item carries those of its matched sources).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

SETTING_FIELDS: tuple[str, ...] = ("id", "name", "engine", "flag", "version", "note")


def settings_of(records: Iterable[dict[str, Any]], engines: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Each record's settings as flat rows (`id`, `name`, `engine`, `flag`, `version`, `note`), in the
    records' order then each record's; `engines` (any case) keeps only those engines' rows."""
    wanted = {e.strip().casefold() for e in engines if e.strip()}
    rows = []
    for record in records:
        for item in record.get("settings") or ():
            if wanted and str(item.get("engine", "")).casefold() not in wanted:
                continue
            rows.append(
                {
                    "id": record.get("id"),
                    "name": record.get("name"),
                    **{k: item.get(k) for k in ("engine", "flag", "version", "note")},
                }
            )
    return rows


def engines_in(records: Iterable[dict[str, Any]]) -> list[str]:
    """The engines named in these records' settings, in first-seen order."""
    seen: dict[str, str] = {}
    for record in records:
        for item in record.get("settings") or ():
            seen.setdefault(str(item.get("engine", "")).casefold(), str(item.get("engine", "")))
    return list(seen.values())
