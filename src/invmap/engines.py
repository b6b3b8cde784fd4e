"""Engine settings: the flags that switch a source's mechanism on, one row per flag (`settings`).

Core: no typer, no rich. `settings_of` takes records in the JSON contract's form (as `show --json`
gives them, or as the index reads them) and is what any command that carries settings calls (a
triage level item carries those of its matched sources).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from invmap.fields import SETTINGS

# A row: the source, then every column of a setting as `fields.SETTINGS` declares them.
SETTING_FIELDS: tuple[str, ...] = ("id", "name", *SETTINGS.names)
# What a person reads in a table or plain text: the flag, where it was read, what it does, what changed.
SETTING_SHOWN: tuple[str, ...] = ("engine", "flag", "version", "note", "deprecated", "replaced_by")


def settings_of(records: Iterable[dict[str, Any]], engines: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Each record's settings as flat rows (`id`, `name`, then every setting column), in the records'
    order then each record's; `engines` (any case) keeps only those engines' rows."""
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
                    **{k: item.get(k) for k in SETTINGS.names},
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
