"""The authoring operations without the command line: `where`, `init`, `add`, `edit` and `rm`, each
taking a plain options dataclass (or a location) and returning what it did, raising the project's
errors. The CLI (`cli/editing.py`, `cli/checking.py`) turns flags into these options and renders
the results; tests call them directly."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from invmap import catalog as catalogs
from invmap import edits, entries, writers
from invmap.errors import NotFoundError, UsageError
from invmap.fields import BY_NAME, MAX_ID

OVERLAY_START = '[catalog]\nextends = "shipped"\n'  # canonical as it is: `fmt --check` passes


def where(location: Any, with_index: bool = False) -> dict[str, Any]:
    """`{path, reason, shipped, extends[, index]}`: the active catalog, why it is, the chain of files
    it extends, and (`with_index`) the state of its index (never built for this)."""
    data = {
        "path": location.path,
        "reason": location.reason,
        "shipped": location.is_shipped,
        "extends": [] if location.is_shipped else catalogs.chain_of(location.path),
    }
    if with_index:
        from invmap import index as indexes

        data["index"] = indexes.state_of(location.path)
    return data


def init(path: str, overlay: bool, force: bool) -> str:
    """A catalog of one's own at `path`: a copy of the shipped one, or an overlay extending it. Returns
    the path written."""
    if overlay:
        writers.write_output(path, OVERLAY_START, force=force)
        return path
    return str(edits.copy_shipped(path, force))


# --- add -----------------------------------------------------------------------------------------


@dataclass
class AddOptions:
    """`add`: the field options' values by field name (texts as given), and the flags."""

    location: Any
    values: dict[str, Any]
    from_id: str | None = None
    new_type: bool = False
    allow_duplicate: bool = False


def new_entry(opts: AddOptions, types: Callable[[], list[str]]) -> dict[str, Any]:
    """The entry `add` would write, every value read and checked (nothing is written): each missing
    option named at once, `--from` filled in, the id and accessed date defaulted, `--type` spelled as
    the catalog (whose types `types()` gives) spells it."""
    import datetime as dt

    from invmap.sourcetext import slug

    values = dict(opts.values)
    missing = entries.missing_for_add(values, entries.FROM_FILLS if opts.from_id else ())
    if missing:
        raise UsageError(
            f"add needs {', '.join(missing)}",
            hint="--year n.d. for an undated source; see 'invmap add --help'",
        )
    if opts.from_id:
        entries.fill_from(values, opts.from_id)
    entry = entries.entry_from_options(values, partial=False)
    entry.setdefault("id", slug(entry["name"], MAX_ID))  # as `import` derives them: check never warns
    entry.setdefault("accessed", dt.date.today())
    entry["type"] = entries.catalog_type(types(), entry["type"], opts.new_type)
    return entries.ordered(entry)


def _index_way() -> Any:
    """The index's way for edits.py's writers (`fastwrite.Way` over `index.writing.Current.of`),
    handed down to them: edits.py stands below the index and never opens it itself."""
    from invmap.fastwrite import Way
    from invmap.index.writing import Current

    return Way(Current.of)


def add(opts: AddOptions, entry: dict[str, Any]) -> Any:
    """Write `entry` (from `new_entry`) into the catalog; returns the source as added."""
    return edits.add_source(opts.location, entry, allow_duplicate=opts.allow_duplicate, index=_index_way())


# --- edit ----------------------------------------------------------------------------------------


@dataclass
class EditOptions:
    """`edit`: the source named exactly (`target`); `values` by field name (a list's: items to add),
    `removed` and `replaced` the list fields' other two options, `unset` the `--unset` values."""

    location: Any
    target: str
    values: dict[str, Any]
    removed: dict[str, Any] = field(default_factory=dict)
    replaced: dict[str, Any] = field(default_factory=dict)
    unset: Sequence[str] = ()
    new_type: bool = False


@dataclass
class EditPlan:
    """What `edit` will do: fields set, fields cleared, list fields changed item by item."""

    changes: dict[str, Any]
    unset: list[str]
    lists: dict[str, Any]


@dataclass
class Edited:
    """What `edit` did: the source's id, its stored values before and after, and the source now."""

    ident: str
    before: dict[str, Any]
    after: dict[str, Any]
    source: Any


def plan_edit(opts: EditOptions) -> EditPlan:
    """Every option of `edit` read and checked together (nothing is read from the catalog yet)."""
    lists = entries.list_changes(opts.values, opts.removed, opts.replaced)
    changes = entries.entry_from_options({k: v for k, v in opts.values.items() if k not in lists}, partial=True)
    unset = entries.unset_fields(opts.unset)
    if "year" in changes and changes["year"] is None:  # --year n.d.
        del changes["year"]
        unset.append("year")
    clash = sorted(set(unset) & (set(changes) | set(lists)))
    if clash:
        raise UsageError(f"--unset {clash[0]} and {entries.flags_of(clash[0])} cannot both be given")
    if not changes and not unset and not lists:
        raise UsageError("edit needs a field to change (--FIELD VALUE) or --unset FIELD; see 'invmap edit --help'")
    return EditPlan(changes, unset, lists)


def edit(opts: EditOptions, plan: EditPlan) -> Edited:
    """Apply `plan` to the source `opts.target` names exactly (looked up under the file's lock; no
    index needed). Raises `edits.NoSuchId` when no source has that id or identifier."""
    from invmap import edits

    changes, typed = dict(plan.changes), plan.changes.get("type")

    def spelled(types: list[str]) -> None:  # --type in the catalog's spelling, from the file being edited
        if typed is not None:
            changes["type"] = entries.catalog_type(types, typed, opts.new_type)

    flags = {name: BY_NAME[name].remove_flag for name in plan.lists}
    done = edits.edit_source(
        opts.location, opts.target, changes, plan.unset, spelled, plan.lists, flags, index=_index_way()
    )
    return Edited(done.ident, done.before, done.after, done.source)


def near_miss(index: Any, target: str) -> NotFoundError:
    """No source has exactly this id, arXiv id, DOI or link: say so, and name the source `show`
    would have found in `index` (a writer never guesses)."""
    from invmap import query

    try:
        near = query.resolve(index, target)["id"]
    except NotFoundError as exc:
        near = exc.candidates[0].rpartition("(")[2].rstrip(")") if exc.candidates else None
    hint = "edit and rm take an exact id, arXiv id, DOI or link (see 'invmap list')"
    if near is not None and near != target:
        return NotFoundError(f"no source '{target}'; did you mean '{near}'?", hint=hint)
    return NotFoundError(f"no source '{target}'", hint=hint)


# --- rm ------------------------------------------------------------------------------------------


def missed_target(targets: Sequence[str], error: Any) -> str:
    """Which of `targets` an `edits.NoSuchId` is about."""
    return next(t for t in targets if f"'{t}'" in error.message)


def to_remove(location: Any, targets: Sequence[str]) -> list[tuple[str, str]]:
    """(id, name) of each source `rm` would remove, for asking first; nothing is written. Raises
    `edits.NoSuchId` for a target no source has exactly."""
    from invmap import edits

    cat = catalogs.load(location)
    removed = edits._removed_ids(catalogs.parse_bytes(catalogs.read_bytes(location.path), location.path))
    ids = list(dict.fromkeys(edits.target_id(cat.sources, t, removed, location.path) for t in targets))
    names = {s.id: s.name for s in cat.sources}
    return [(i, names[i]) for i in ids]


def remove(location: Any, targets: Sequence[str], drop_citations: bool = False) -> tuple[list[str], int]:
    """Remove the sources `targets` name exactly (on an overlay, hide the base's); the ids removed and
    how many of the file's reports lost their citation of them (`drop_citations`; else they block it)."""
    from invmap import edits

    return edits.remove_sources(location, targets, drop_citations, index=_index_way())


def restore(location: Any, targets: Sequence[str]) -> None:
    """`rm --undo`: bring back base sources the overlay removes."""
    from invmap import edits

    edits.restore_sources(location, targets)
