"""Catalog authoring: where, check, init, add, fmt, export, import (declared in `options.py`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from invmap import catalog as catalogs
from invmap.cli.build import Args, implements
from invmap.cli.shared import emit, filters, index, notice, say, state, stdout_is_terminal, write
from invmap.errors import CatalogError, InvmapError, NotFoundError, UsageError
from invmap.fields import BY_NAME, FIELDS, MAX_ID, SOURCE_FIELDS
from invmap.safe import escape


def _to_output(target: str | None, text: Callable[[], str], force: bool) -> bool:
    """Write what `text()` returns to `target` (stdout when None or '-'); True if a file was written.
    For a file, `text()` runs under the file's lock, so it may read the very file it replaces."""
    if target is None or target == "-":
        write(text())
        return False
    _warn_links(target)
    catalogs.write_output(target, text, force=force)
    return True


def _warn_links(path: str) -> None:
    warning = catalogs.link_warning(path)
    if warning:
        say(f"warning: {warning}")


@implements("where")
def where(ctx: typer.Context, args: Args) -> None:
    """Print which catalog file is active, and why; with --json, also the state of its index."""
    from invmap import index as indexes
    from invmap.render.machine import to_json

    location = state(ctx).location
    chain = [] if location.is_shipped else catalogs.chain_of(location.path)
    if args.json_flag:
        data = {
            "path": location.path,
            "reason": location.reason,
            "shipped": location.is_shipped,
            "extends": chain,
            "index": indexes.state_of(location.path),
        }
        write(to_json(data, indent=None))
    else:
        lines = [f"{escape(location.path)}\t({location.reason})"]
        lines += [
            f"  extends {escape(base)}" + ("\t(shipped with invmap)" if catalogs.is_shipped(base) else "")
            for base in chain
        ]
        write("\n".join(lines) + "\n")


def _path_argument(ctx: typer.Context, paths: list[str] | None, command: str) -> Any:
    """`invmap check FILE`, `invmap fmt FILE`: a positional is the catalog (as ruff and taplo take
    theirs); with --catalog too, it is said twice (exit 2)."""
    from invmap import location as catalog_location

    here = state(ctx)
    if not paths:
        return here.location
    if len(paths) > 1:
        raise UsageError(f"{command} takes one catalog PATH, not {len(paths)}")
    if here.location.reason.startswith("--catalog"):
        raise UsageError(f"give the catalog once: as {command}'s PATH or with --catalog, not both")
    found = catalog_location.locate(paths[0])
    here.location = found._replace(reason="PATH argument")
    here._index = None
    return here.location


@implements("check")
def check(ctx: typer.Context, args: Args) -> None:
    """Validate the active catalog (or PATH) and report every problem (exit 0 when valid, 3 when not),
    each with its line and column."""
    from invmap.render.machine import to_json

    if args.links:
        return check_links(ctx, args)
    if args.all_links or args.update_redirects:
        raise UsageError("--all and --update-redirects go with --links")
    location = _path_argument(ctx, args.ids, "check")
    try:
        cat = catalogs.load(location)
    except CatalogError as exc:
        where = _located(location, exc.problems)
        if args.json_flag:
            data = {"path": location.path, "valid": False, "sources": None, "problems": exc.problems}
            details = [{"problem": p, "line": at and at[0], "column": at and at[1]} for p, at in where]
            write(to_json({**data, "warnings": [], "details": details}))
            raise typer.Exit(exc.exit_code) from None
        lines = [f"{location.path}:{at[0]}:{at[1]}: {p}" if at else f"{location.path}: {p}" for p, at in where]
        if len(lines) > 1:
            lines.insert(0, f"{location.path} has {len(lines)} problems:")
        say("Error: " + "\n".join(lines))
        raise typer.Exit(exc.exit_code) from None
    warnings = catalogs.warnings(cat)
    count = len(cat.sources)
    if args.json_flag:
        write(
            to_json(
                {
                    "path": location.path,
                    "valid": True,
                    "sources": count,
                    "problems": [],
                    "warnings": warnings,
                    "details": [],
                }
            )
        )
        return
    for line, at in _located(location, warnings):
        say(f"warning: {location.path}:{at[0]}:{at[1]}: {line}" if at else f"warning: {location.path}: {line}")
    write(f"{escape(location.path)}: ok, {count} source{'s' if count != 1 else ''}\n")


def _located(location: Any, problems: list[str]) -> list[tuple[str, tuple[int, int] | None]]:
    """Each problem with its (line, column) in the file, where one can be told (not for stdin)."""
    if not problems or location.is_stdin:
        return [(p, None) for p in problems]
    try:
        data = catalogs.read_bytes(location.path)
    except InvmapError:
        return [(p, None) for p in problems]
    from invmap import edits

    return list(zip(problems, edits.locate_problems(data, problems)))


@implements("init")
def init(ctx: typer.Context, args: Args) -> None:
    """Start a catalog of your own: a copy of the shipped catalog at PATH, or (--overlay) a file that
    extends it and holds only what you add or change."""
    if args.overlay:
        catalogs.write_output(args.path, OVERLAY_START, force=args.force)
        written = escape(args.path)
        write(
            f"Wrote {written}, an overlay of the shipped map: add, edit and rm write your changes there; "
            f"use it with --catalog {written} or INVMAP_CATALOG={written}\n"
        )
        return
    written = escape(str(catalogs.copy_shipped(args.path, args.force)))
    write(f"Wrote {written}; use it with --catalog {written} or INVMAP_CATALOG={written}\n")


OVERLAY_START = '[catalog]\nextends = "shipped"\n'  # canonical as it is: `fmt --check` passes


# The stored fields `add` may leave out although the catalog requires them (it fills them in).
_ADD_DEFAULTS = {"id": "the name's slug", "accessed": "today"}


def entry_from_options(values: dict[str, Any], *, partial: bool) -> dict[str, Any]:
    """Option values -> a `[[sources]]` entry, each value read by its field's kind (`--year n.d.` is no
    year). With `partial` (edit), only the options given."""
    entry: dict[str, Any] = {}
    for f in FIELDS:
        if not f.stored:
            continue
        value = values.get(f.name)
        if value is None or (f.kind.many and not value):
            continue
        if isinstance(value, str) and any("\udc80" <= c <= "\udcff" for c in value):
            raise UsageError(f"{f.flag} is not valid UTF-8 text")
        if isinstance(value, list) and any("\udc80" <= c <= "\udcff" for v in value for c in v):
            raise UsageError(f"{f.flag} is not valid UTF-8 text")
        try:
            parsed = f.kind.parse(value)
        except ValueError as exc:
            raise UsageError(f"{f.flag} {exc}") from None
        if parsed is None and f.kind.name == "year":
            entry[f.name] = None  # n.d.: no year (left out of the file)
            continue
        entry[f.name] = parsed
    if not partial:
        entry = {k: v for k, v in entry.items() if v is not None}
    return entry


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


@implements("add")
def add(ctx: typer.Context, args: Args) -> None:
    """Add a source to the active catalog (never the shipped one); a rejected add changes nothing."""
    import datetime as dt

    from invmap.sourcetext import slug

    location = state(ctx).location
    catalogs.require_writable(location)
    values = dict(args.__dict__)
    supplied = _FROM_FILLS if args.from_id else ()
    missing = [
        f.flag
        for f in FIELDS
        if f.stored
        and (f.required or f.name == "year")
        and f.name not in _ADD_DEFAULTS
        and f.name not in supplied
        and values.get(f.name) is None
    ]
    if missing:
        raise UsageError(
            f"add needs {', '.join(missing)}",
            hint="--year n.d. for an undated source; see 'invmap add --help'",
        )
    if args.from_id:
        _fill_from(values, args.from_id)
    entry = entry_from_options(values, partial=False)
    entry.setdefault("id", slug(entry["name"], MAX_ID))  # as `import` derives them: check never warns
    entry.setdefault("accessed", dt.date.today())
    entry["type"] = catalog_type(index(ctx).types(), entry["type"], args.new_type)
    _warn_links(location.path)
    updated = catalogs.add_source(location, _ordered(entry), allow_duplicate=args.allow_duplicate)
    added = next(s for s in reversed(updated.sources) if s.id == entry["id"])
    if args.json_flag:
        from invmap.render.machine import to_json

        write(to_json(added.to_dict()))
    else:
        write(f"Added {added.id} to {escape(location.path)}\n")


@implements("edit")
def edit(ctx: typer.Context, args: Args) -> None:
    """Change fields of one source, named exactly (id, arXiv id, DOI or link); only its `[[sources]]`
    table is rewritten. A list field's option adds an item, `--remove-X` removes one, `--set-Xs`
    replaces the list; what changed is printed field by field."""
    from invmap import edits

    location = state(ctx).location
    catalogs.require_writable(location)
    values = dict(args.__dict__)
    lists = _list_changes(values)
    changes = entry_from_options({k: v for k, v in values.items() if k not in lists}, partial=True)
    unset = _unset_fields(args.unset)
    if "year" in changes and changes["year"] is None:  # --year n.d.
        del changes["year"]
        unset.append("year")
    clash = sorted(set(unset) & (set(changes) | set(lists)))
    if clash:
        raise UsageError(f"--unset {clash[0]} and {_flags(clash[0])} cannot both be given")
    if not changes and not unset and not lists:
        raise UsageError("edit needs a field to change (--FIELD VALUE) or --unset FIELD; see 'invmap edit --help'")
    typed = changes.get("type")

    def spelled(types: list[str]) -> None:  # --type in the catalog's spelling, from the file being edited
        if typed is not None:
            changes["type"] = catalog_type(types, typed, args.new_type)

    _warn_links(location.path)
    flags = {name: BY_NAME[name].remove_flag for name in lists}
    try:  # no index needed: the target is named exactly, and checked under the file's lock
        done = edits.edit_source(location, args.target, changes, unset, spelled, lists, flags)
    except edits.NoSuchId:
        raise _near_miss(ctx, args.target) from None
    if args.json_flag:
        from invmap.render.machine import to_json

        write(to_json(next(s for s in done.catalog.sources if s.id == done.ident).to_dict()))
        return
    lines = _what_changed(done.before, done.after)
    if not lines:
        write(f"Unchanged {escape(done.ident)} in {escape(location.path)}: every value was already so\n")
        return
    write(f"Changed {escape(done.ident)} in {escape(location.path)}:\n" + "".join(f"  {line}\n" for line in lines))


def _list_changes(values: dict[str, Any]) -> dict[str, Any]:
    """`edit`'s list options (`--keyword`, `--remove-keyword`, `--set-keywords`) -> one
    `edits.ListChange` per list field given, each item read by the field's kind."""
    from invmap import edits
    from invmap.options import REMOVE_PREFIX, SET_PREFIX

    out = {}
    for f in FIELDS:
        if not (f.stored and f.kind.name == "list"):
            continue
        added, removed, replace = (
            values.get(f.name),
            values.get(REMOVE_PREFIX + f.name),
            values.get(SET_PREFIX + f.name),
        )
        if not added and not removed and replace is None:
            continue
        if replace is not None and (added or removed):
            given = f.flag if added else f.remove_flag
            raise UsageError(f"{f.set_flag} replaces the whole list: give every item there, without {given}")
        for option, texts in ((f.flag, added), (f.remove_flag, removed), (f.set_flag, [replace] if replace else [])):
            if any("\udc80" <= c <= "\udcff" for t in texts or () for c in t):
                raise UsageError(f"{option} is not valid UTF-8 text")
        try:
            out[f.name] = edits.ListChange(
                f.kind.parse(added or []) or [],
                f.kind.parse(removed or []) or [],
                None if replace is None else f.kind.parse_items(replace),
            )
        except ValueError as exc:
            raise UsageError(f"{f.flag} {exc}") from None
    return out


def _flags(name: str) -> str:
    """The options that change field `name`, as a user reads them in a message."""
    f = BY_NAME[name]
    return f"{f.flag}, {f.remove_flag} or {f.set_flag}" if f.kind.name == "list" else f.flag


def _what_changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """`keywords: +prefix caching`, `seam: (none) -> the scheduler`: one line a changed field, in the
    fields' order; a list by the items it gained and lost."""
    lines = []
    for f in FIELDS:
        old, new = before.get(f.name), after.get(f.name)
        if old == new:
            continue
        if f.kind.name == "tables":
            lines.append(f"{f.name}: {len(old or [])} → {len(new or [])} items")
        elif f.kind.many:
            old, new = old or [], new or []
            parts = [f"+{item}" for item in new if item not in old] + [f"-{item}" for item in old if item not in new]
            lines.append(f"{f.name}: {escape(', '.join(parts))}")
        else:
            shown = [escape(str(v)) if v is not None else "(none)" for v in (old, new)]
            lines.append(f"{f.name}: {shown[0]} → {shown[1]}")
    return lines


def _near_miss(ctx: typer.Context, target: str) -> NotFoundError:
    """No source has exactly this id, arXiv id, DOI or link: say so, and name the source `show`
    would have found (a writer never guesses)."""
    from invmap import query

    try:
        near = query.resolve(index(ctx), target)["id"]
    except NotFoundError as exc:
        near = exc.candidates[0].rpartition("(")[2].rstrip(")") if exc.candidates else None
    hint = "edit and rm take an exact id, arXiv id, DOI or link (see 'invmap list')"
    if near is not None and near != target:
        return NotFoundError(f"no source '{target}'; did you mean '{near}'?", hint=hint)
    return NotFoundError(f"no source '{target}'", hint=hint)


def _unset_fields(values: Any) -> list[str]:
    """`--unset` values (repeated or comma lists): optional stored fields, else a usage error."""
    from invmap.query import did_you_mean

    optional = [f.name for f in FIELDS if f.stored and not f.required]
    unset = [u.strip() for item in values or () for u in item.split(",") if u.strip()]
    for name in unset:
        if name not in optional:
            close = did_you_mean(name, optional)
            required = any(f.name == name and f.required for f in FIELDS)
            why = "a required field cannot be removed" if required else "no such optional field"
            hint = f"did you mean '{close}'?" if close and not required else f"optional fields: {', '.join(optional)}"
            raise UsageError(f"--unset {name}: {why}", hint=hint)
    return unset


@implements("rm")
def rm(ctx: typer.Context, args: Args) -> None:
    """Remove sources named exactly (on an overlay, hide the base's); asks first on a terminal unless
    --yes, and needs --yes elsewhere. `--undo` brings back base sources the overlay removes."""
    from invmap import edits

    location = state(ctx).location
    catalogs.require_writable(location)
    targets = list(dict.fromkeys(args.targets))
    if args.undo:
        edits.restore_sources(location, targets)
        write(f"Restored {', '.join(escape(i) for i in targets)} in {escape(location.path)}\n")
        return
    if not args.yes:
        _confirm_removal(ctx, location, targets)
    _warn_links(location.path)
    try:
        _, ids = edits.remove_sources(location, targets)
    except edits.NoSuchId as exc:
        missed = next(t for t in targets if f"'{t}'" in exc.message)
        raise _near_miss(ctx, missed) from None
    write(f"Removed {', '.join(escape(i) for i in ids)} from {escape(location.path)}\n")


def _confirm_removal(ctx: typer.Context, location: Any, targets: list[str]) -> None:
    """On a terminal, ask before removing (what would go, by id and name); off one, --yes is needed."""
    import sys

    from invmap import edits

    if not (_is_terminal(sys.stdin) and _stderr_is_terminal()):
        raise UsageError("rm needs --yes when it cannot ask (stdin or stderr is not a terminal)")
    cat = catalogs.load(location)
    removed = edits._removed_ids(catalogs.parse(catalogs.read_bytes(location.path), location.path))
    try:
        ids = list(dict.fromkeys(edits.target_id(cat.sources, t, removed, location.path) for t in targets))
    except edits.NoSuchId as exc:
        missed = next(t for t in targets if f"'{t}'" in exc.message)
        raise _near_miss(ctx, missed) from None
    names = {s.id: s.name for s in cat.sources}
    shown = ", ".join(f"{i} ({names[i]})" for i in ids)
    sys.stderr.write(escape(f"Remove {shown} from {location.path}? [y/N] "))
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if answer.strip().casefold() not in ("y", "yes"):
        say("nothing removed")
        raise typer.Exit(0)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream and stream.isatty())
    except (OSError, ValueError):
        return False


# What `add --from` can fill: the paper's own facts, and a name and Source text derived from them.
_FROM_FILLS = ("name", "source", "title", "author_names", "year", "venue", "published_in", "entry_type", "arxiv", "doi")


def _fill_from(values: dict[str, Any], identifier: str) -> None:
    """`add --from`: the options not given, from arXiv or Crossref (an option given always wins)."""
    from invmap import metadata

    with metadata.run():
        work = metadata.lookup(identifier)
    found = {
        "title": work.title,
        "author_names": work.author_names or None,
        "year": str(work.year) if work.year else None,
        "venue": work.venue,
        "published_in": work.published_in,
        "entry_type": work.entry_type,
        "arxiv": work.arxiv,
        "doi": work.doi,
    }
    by_name = {f.name: f for f in FIELDS}
    for key, value in found.items():
        if value is not None and not values.get(key):
            try:  # the service's value, read as the option's would be: never blamed on an option not given
                by_name[key].kind.parse(value)
            except ValueError as exc:
                raise metadata.ServiceError(
                    f"{work.service} gives a {key.replace('_', ' ')} invmap cannot use: {exc}",
                    hint=f"give {by_name[key].flag} yourself",
                ) from None
            values[key] = value
    if not values.get("name"):
        values["name"] = metadata.name_from_title(work.title or identifier)
    if not values.get("source"):
        values["source"] = f"{values['name']}, " + (f"arXiv:{work.arxiv}" if work.arxiv else f"DOI:{work.doi}")


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry's keys in the fields' declared order (the canonical order of a `[[sources]]` table)."""
    return {f.name: entry[f.name] for f in FIELDS if f.name in entry}


@implements("fmt")
def fmt_(ctx: typer.Context, args: Args) -> None:
    """Rewrite the active catalog in its one canonical form."""
    location = _path_argument(ctx, [args.path] if args.path else None, "fmt")
    if not args.check_only and not location.is_stdin:
        _warn_links(location.path)
    changed = catalogs.reformat(location, args.check_only, args.drop_comments)
    shown = escape(location.path)
    if not changed:
        write(f"{shown}: already canonical\n")
    elif args.check_only:
        say(f"{location.path}: not canonical; 'invmap fmt' would rewrite it")
        raise typer.Exit(1)
    else:
        write(f"{shown}: reformatted\n")


@implements("export")
def export(ctx: typer.Context, args: Args) -> None:
    """Export the catalog (or the filtered sources) as Markdown like the seed, CSV, JSON, BibTeX or TOML;
    without --format, the format `-o PATH`'s extension means (else Markdown)."""
    from invmap import formats, query, render
    from invmap.index import open_catalog

    allowed = formats.names_for(formats.CATALOG)
    to_file = args.output_path is not None and args.output_path != "-"
    meant = formats.for_path(args.output_path) if to_file else None
    fmt = args.fmt or meant or "markdown"
    if fmt not in allowed:
        raise UsageError(f"unknown export format '{fmt}' (valid formats: {', '.join(allowed)})")
    if args.fmt and meant and meant != args.fmt:
        say(f"warning: writing {fmt} to {args.output_path}, a name that means {meant}")
    location = state(ctx).location
    filtered = any(args.filters.values())
    filters(ctx, args)  # a bad filter value is a usage error before anything is written
    renderer = formats.renderer(fmt, formats.CATALOG)
    context = render.Context(excel=args.excel_safe, cell_links=args.links)
    counted: list[int] = []

    def result(idx: Any) -> render.Result:
        chosen = query.build_filters(idx, args.filters)
        records = query.lazy_selection(idx, chosen)
        if not records:
            raise NotFoundError("no source matches these filters: nothing to export")
        counted.append(len(records))
        wanted = {r["id"] for r in idx.records(chosen.where, chosen.params, ("id",))} if filtered else None

        def catalog() -> Any:
            cat = catalogs.load(location)
            if wanted is not None:
                cat = cat.model_copy(update={"sources": [s for s in cat.sources if s.id in wanted]})
            if fmt == "markdown":
                _markdown_leaves_out(cat, args.links)
            return cat

        return render.Result(records, list(SOURCE_FIELDS), catalog=catalog)

    if not to_file:  # streamed, a batch at a time
        for piece in renderer(result(index(ctx)), context):
            write(piece)
        return
    # Into a file: the text is built under the file's lock from what the catalog holds then (the
    # file may be the catalog itself, and an `add` may be waiting for the lock or holding it).
    _to_output(args.output_path, lambda: "".join(renderer(result(open_catalog(location)), context)), args.force)
    count = counted[-1]
    write(f"Wrote {escape(args.output_path)}: {count} source{'s' if count != 1 else ''} as {fmt}\n")


def _markdown_leaves_out(cat: Any, links: bool) -> None:
    """The seed's table has nine columns: say on stderr which fields holding values it cannot keep."""
    from invmap.vocabulary import SEED_COLUMNS

    kept = {key for _, key in SEED_COLUMNS} | ({"url", "code"} if links else set())
    lost = [f.name for f in FIELDS if f.stored and f.name not in kept and any(getattr(s, f.name) for s in cat.sources)]
    if cat.layers or cat.glossary:
        lost += [name for name in ("layers", "glossary") if getattr(cat, name)]
    if lost:
        say(
            f"note: a Markdown export keeps the seed's nine columns and leaves out {', '.join(lost)} "
            "('invmap import' derives id, name, authors, arXiv id and DOI from the Source cell again); "
            "--format toml or json keeps every field"
        )


@implements("import")
def import_(ctx: typer.Context, args: Args) -> None:
    """Turn a Markdown table with the seed's columns (cells may hold links) into a catalog (TOML)."""
    from invmap import interchange

    data = catalogs.read_bytes(args.file)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CatalogError(args.file, ["not UTF-8 text"]) from None
    cat = catalogs.validate(interchange.read_markdown(text, args.file), args.file)
    if _to_output(args.output_path, lambda: catalogs.dumps(cat), args.force):
        count = len(cat.sources)
        write(f"Wrote {escape(str(args.output_path))}: {count} source{'s' if count != 1 else ''}\n")


def _catalog_at(name: str) -> Any:
    """`diff`'s side: a catalog file (an overlay merged), a Markdown map, `shipped` or `-`."""
    from invmap import interchange
    from invmap.location import shipped_path

    if name == "shipped":
        return catalogs.load(str(shipped_path()))
    if name != "-" and name.lower().endswith((".md", ".markdown")):
        data = catalogs.read_bytes(name)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise CatalogError(name, ["not UTF-8 text"]) from None
        return catalogs.validate(interchange.read_markdown(text, name), name)
    if name == "-":
        data = catalogs.read_bytes(name)
        head = data.removeprefix(catalogs.BOM.encode("utf-8")).lstrip()  # a BOM, as a file by path may have
        if head.startswith((b"#", b"|")) and b"|---" in data:  # a Markdown map on stdin
            return catalogs.validate(interchange.read_markdown(data.decode("utf-8-sig"), name), name)
        return catalogs.validate_bytes(data, name)
    return catalogs.load(name)


@implements("diff")
def diff(ctx: typer.Context, args: Args) -> None:
    """What changed from A to B; exit 1 when anything did (like diff)."""
    from invmap import diffing
    from invmap.cli.shared import output
    from invmap.render import Result

    if args.old == args.new == "-":
        raise UsageError("only one of A and B can be '-' (stdin)")
    difference = diffing.compare(_catalog_at(args.old), _catalog_at(args.new))
    out = output(ctx, args)
    rows = diffing.rows(difference)
    emit(out, Result(rows, ["change", "id", "field", "old", "new"], data=difference))
    if not diffing.is_empty(difference):
        raise typer.Exit(1)
    if not out.machine and stdout_is_terminal():
        notice("no differences")  # a table of nothing prints nothing: say why


def check_links(ctx: typer.Context, args: Args) -> None:
    """`check --links`: one line per link that is not plainly alive (every link with --all); exit 1
    when any is dead, 4 when the network cannot be used at all."""
    from invmap import links as linking
    from invmap import query
    from invmap.cache import cache_folder
    from invmap.render.progress import link_progress

    location = state(ctx).location
    try:
        max_age = linking.parse_age(args.max_age)
    except ValueError as exc:
        raise UsageError(f"--max-age {exc}") from None
    if not args.timeout > 0:
        raise UsageError(f"--timeout must be more than 0 seconds, not {args.timeout:g}")
    if args.update_redirects:
        catalogs.require_writable(location)
    cat = catalogs.load(location)
    chosen = cat.sources
    if args.ids:
        wanted = [r["id"] for r in query.resolve_all(index(ctx), args.ids)]
        by_id = {s.id: s for s in cat.sources}
        chosen = [by_id[i] for i in dict.fromkeys(wanted)]
    found = linking.links_of(chosen)
    env = state(ctx).env
    with link_progress(len({link.url for link in found}), env.stderr, env.stderr_isatty) as step:
        results = linking.check(
            found,
            per_host=args.per_host,
            timeout=args.timeout,
            max_age=max_age,
            cache_folder=cache_folder(),
            progress=step,
        )
    if linking.network_unusable(results):
        from invmap.errors import FileAccessError

        first = next((o.error for _, o in results if o.error), "no answer")
        raise FileAccessError(f"cannot check links: the network cannot be used ({first})")
    _report_links(results, args.all_links, args.json_flag)
    if args.update_redirects:
        _update_redirects(location, results)
    if any(o.status in linking.DEAD for _, o in results):
        raise typer.Exit(1)


def _report_links(results: Any, every: bool, as_json: bool) -> None:
    """One line (or JSON object) per link that is not plainly alive (every link with `every`), then a
    count on a terminal's stderr."""
    from invmap import links as linking
    from invmap.render.machine import to_json

    shown = [(link, o) for link, o in results if every or o.status != "alive"]
    if as_json:
        fields = ("status", "code", "final_url", "error")
        write(
            to_json(
                [{"id": k.id, "field": k.field, "url": k.url, **{f: getattr(o, f) for f in fields}} for k, o in shown]
            )
        )
        return
    write("".join(f"{escape(k.id)}\t{k.field}\t{escape(k.url)}\t{escape(linking.describe(o))}\n" for k, o in shown))
    if _stderr_is_terminal():
        dead = sum(o.status in linking.DEAD for _, o in results)
        warned = sum(o.status not in ("alive", *linking.DEAD) for _, o in results)
        counts = f"{len(results)} link{'s' if len(results) != 1 else ''} checked, {dead} dead"
        say(f"{counts}, {warned} to look at" if warned else counts)


def _stderr_is_terminal() -> bool:
    import sys

    try:
        return bool(sys.stderr and sys.stderr.isatty())
    except (OSError, ValueError):
        return False


def _update_redirects(location: Any, results: Any) -> None:
    """Stored url/code values whose first hop is a permanent redirect, rewritten to where it ends."""
    from invmap import edits

    changes: dict[str, dict[str, str]] = {}
    for link, outcome in results:
        if link.stored and outcome.permanent and outcome.final_url and outcome.status in ("redirected",):
            changes.setdefault(link.id, {})[link.field] = outcome.final_url
    for ident, fields in changes.items():
        edits.edit_source(location, ident, fields, ())
        for field, url in fields.items():
            say(f"updated {ident} {field} to {escape(url)}")


@implements("refresh")
def refresh(ctx: typer.Context, args: Args) -> None:
    """Compare the catalog's titles, author lists, venues and DOIs with arXiv and Crossref; --write
    applies what differs. Exit 1 when something differs (and was not written), like diff."""
    from invmap import edits, query
    from invmap.cli.shared import output
    from invmap.render import Result

    location = state(ctx).location
    out = output(ctx, args)  # a wrong --format is refused before any request
    if args.write:
        catalogs.require_writable(location)
    cat = catalogs.load(location)
    chosen = cat.sources
    if args.ids:
        by_id = {s.id: s for s in cat.sources}
        chosen = [by_id[r["id"]] for r in query.resolve_all(index(ctx), args.ids)]
    from invmap import metadata

    with metadata.run():  # every request of the run within metadata.RUN_DEADLINE
        changed = _differences([s for s in chosen if s.arxiv or s.doi])
    rows = [
        {"change": "changed", "id": c["id"], "field": f, "old": _cell(old), "new": _cell(new)}
        for c in changed
        for f, (old, new) in c["fields"].items()
    ]
    emit(out, Result(rows, ["change", "id", "field", "old", "new"], data=changed))
    if args.write and changed:  # every change validated together, then one write (or none)
        edits.edit_sources(location, {c["id"]: {f: new for f, (_, new) in c["fields"].items()} for c in changed})
        say(f"updated {len(changed)} source{'s' if len(changed) != 1 else ''} in {location.path}")
        return
    if changed:
        raise typer.Exit(1)


def _differences(sources: list[Any]) -> list[dict[str, Any]]:
    """`[{id, fields: {name: [old, new]}}]`: what arXiv (for a preprint: title, authors, a DOI it has
    gained) or Crossref (for a DOI: title, authors, venue) says differently about each source."""
    from invmap import metadata

    preprints = metadata.arxiv_works([s.arxiv for s in sources if s.arxiv and not s.doi])
    changed: list[dict[str, Any]] = []
    for s in sources:
        if s.doi:
            work, asked = metadata.crossref_work(s.doi), ("title", "author_names", "venue")
        else:
            work, asked = preprints.get(s.arxiv or ""), ("title", "author_names", "doi")
        if work is None:
            continue
        fields = {}
        for name in asked:
            old, new = getattr(s, name), getattr(work, name)
            if new and not _same(old, new):
                fields[name] = [old if old is not None else ([] if name == "author_names" else None), new]
        if fields:
            changed.append({"id": s.id, "fields": fields})
    return changed


def _same(old: Any, new: Any) -> bool:
    """Titles and venues alike whatever their spacing and case; lists exactly."""
    if isinstance(old, str) and isinstance(new, str):
        return " ".join(old.split()).casefold() == " ".join(new.split()).casefold()
    return old == new


def _cell(value: Any) -> str | None:
    if value is None or value == []:
        return None
    return "; ".join(value) if isinstance(value, list) else str(value)
