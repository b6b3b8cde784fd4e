"""A `[[sources]]` entry from option values: what `add` and `edit` were given, read field by field
by each field's kind (`--year n.d.` is no year), list changes, `--unset`, `--type` in the catalog's
spelling, and `add --from`'s filling from arXiv or Crossref. Values arrive as plain dicts (field
name -> the text given); nothing here knows the command line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from invmap.errors import UsageError
from invmap.fields import BY_NAME, FIELDS

# The stored fields `add` may leave out although the catalog requires them (it fills them in).
ADD_DEFAULTS = {"id": "the name's slug", "accessed": "today"}

# What `add --from` can fill: the paper's own facts, and a name and Source text derived from them.
FROM_FILLS = ("name", "source", "title", "author_names", "year", "venue", "published_in", "entry_type", "arxiv", "doi")


def _undecodable(texts: Any) -> bool:
    """Text (or a list of texts) holding bytes that were not UTF-8 (the surrogates Python reads them as)."""
    items = [texts] if isinstance(texts, str) else texts or ()
    return any("\udc80" <= c <= "\udcff" for t in items for c in t)


def _parsed(f: Any, value: Any) -> Any:
    """One option's value read by its field's kind; a value it refuses is a usage error naming the option."""
    if _undecodable(value):
        raise UsageError(f"{f.flag} is not valid UTF-8 text")
    try:
        return f.kind.parse(value)
    except ValueError as exc:
        raise UsageError(f"{f.flag} {exc}") from None


def entry_from_options(values: dict[str, Any], *, partial: bool) -> dict[str, Any]:
    """Option values -> a `[[sources]]` entry, each value read by its field's kind (`--year n.d.` is no
    year: None). With `partial` (edit), only the options given, a year of n.d. kept as None; without,
    no None at all."""
    entry: dict[str, Any] = {}
    for f in FIELDS:
        value = values.get(f.name)
        if not f.stored or value is None or (f.kind.many and not value):
            continue
        entry[f.name] = _parsed(f, value)
    if not partial:
        entry = {k: v for k, v in entry.items() if v is not None}
    return entry


def missing_for_add(values: dict[str, Any], filled: Sequence[str] = ()) -> list[str]:
    """The options `add` needs and was not given (a year too: `--year n.d.` says there is none);
    `filled`: the fields something else supplies (`--from`)."""
    return [
        f.flag
        for f in FIELDS
        if f.stored
        and (f.required or f.name == "year")
        and f.name not in ADD_DEFAULTS
        and f.name not in filled
        and values.get(f.name) is None
    ]


def _list_change(f: Any, added: Any, removed: Any, replace: str | None) -> Any:
    """One list field's `edit` options -> an `edits.ListChange`, each item read by the field's kind."""
    from invmap import edits

    if replace is not None and (added or removed):
        given = f.flag if added else f.remove_flag
        raise UsageError(f"{f.set_flag} replaces the whole list: give every item there, without {given}")
    for option, texts in ((f.flag, added), (f.remove_flag, removed), (f.set_flag, [replace] if replace else [])):
        if _undecodable(texts):
            raise UsageError(f"{option} is not valid UTF-8 text")
    try:
        return edits.ListChange(
            f.kind.parse(added or []) or [],
            f.kind.parse(removed or []) or [],
            None if replace is None else f.kind.parse_items(replace),
        )
    except ValueError as exc:
        raise UsageError(f"{f.flag} {exc}") from None


def list_changes(added: dict[str, Any], removed: dict[str, Any], replaced: dict[str, Any]) -> dict[str, Any]:
    """`edit`'s list options by field name (`--keyword` items added, `--remove-keyword` items removed,
    `--set-keywords` the whole list) -> one `edits.ListChange` per list field given."""
    out = {}
    for f in FIELDS:
        if not (f.stored and f.kind.name == "list"):
            continue
        plus, minus, whole = added.get(f.name), removed.get(f.name), replaced.get(f.name)
        if plus or minus or whole is not None:
            out[f.name] = _list_change(f, plus, minus, whole)
    return out


def flags_of(name: str) -> str:
    """The options that change field `name`, as a user reads them in a message."""
    f = BY_NAME[name]
    return f"{f.flag}, {f.remove_flag} or {f.set_flag}" if f.kind.name == "list" else f.flag


def unset_fields(values: Sequence[str] | None) -> list[str]:
    """`--unset` values (repeated or comma lists): optional stored fields, else a usage error."""
    from invmap.query import did_you_mean

    optional = [f.name for f in FIELDS if f.stored and not f.required]
    unset = [u.strip() for item in values or () for u in item.split(",") if u.strip()]
    for name in unset:
        if name in optional:
            continue
        required = any(f.name == name and f.required for f in FIELDS)
        close = None if required else did_you_mean(name, optional)
        why = "a required field cannot be removed" if required else "no such optional field"
        hint = f"did you mean '{close}'?" if close else f"optional fields: {', '.join(optional)}"
        raise UsageError(f"--unset {name}: {why}", hint=hint)
    return unset


def catalog_type(types: list[str], value: str, allow_new: bool) -> str:
    """`--type` in the catalog's own spelling (`current` -> Current); an unknown type is a usage error
    with did-you-mean, unless `--new-type` says it is meant."""
    from invmap.query import did_you_mean

    for known in types:
        if known.casefold() == value.strip().casefold():
            return known
    if allow_new:
        return value.strip()
    close = did_you_mean(value, types)
    hint = f"did you mean '{close}'? " if close else ""
    raise UsageError(
        f"unknown type '{value}' (this catalog's types: {', '.join(types)})",
        hint=f"{hint}pass --new-type to add a type the catalog does not use yet",
    )


def _found(work: Any) -> dict[str, Any]:
    """A looked-up paper's facts as the options `add --from` fills would give them."""
    return {
        "title": work.title,
        "author_names": work.author_names or None,
        "year": str(work.year) if work.year else None,
        "venue": work.venue,
        "published_in": work.published_in,
        "entry_type": work.entry_type,
        "arxiv": work.arxiv,
        "doi": work.doi,
    }


def fill_from(values: dict[str, Any], identifier: str) -> None:
    """`add --from`: the options not given, from arXiv or Crossref (an option given always wins)."""
    from invmap import metadata

    with metadata.run():
        work = metadata.lookup(identifier)
    for key, value in _found(work).items():
        if value is None or values.get(key):
            continue
        try:  # the service's value, read as the option's would be: never blamed on an option not given
            BY_NAME[key].kind.parse(value)
        except ValueError as exc:
            raise metadata.ServiceError(
                f"{work.service} gives a {key.replace('_', ' ')} invmap cannot use: {exc}",
                hint=f"give {BY_NAME[key].flag} yourself",
            ) from None
        values[key] = value
    if not values.get("name"):
        values["name"] = metadata.name_from_title(work.title or identifier)
    if not values.get("source"):
        values["source"] = f"{values['name']}, " + (f"arXiv:{work.arxiv}" if work.arxiv else f"DOI:{work.doi}")


def ordered(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry's keys in the fields' declared order (the canonical order of a `[[sources]]` table)."""
    return {f.name: entry[f.name] for f in FIELDS if f.name in entry}
