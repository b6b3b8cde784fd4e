"""`init`, `add`, `edit`, `rm` and `fmt`: flags -> the core's options (`authoring.py`), the result
rendered (`add --json` and `edit --json` through the format registry), messages on stderr."""

from __future__ import annotations

from typing import Any

import typer

from invmap import authoring, edits, writers
from invmap.cli.authoring import path_argument, warn_links
from invmap.cli.build import Args, implements
from invmap.cli.shared import Output, emit, index, output, say, state, write
from invmap.errors import UsageError
from invmap.render import Result, outcomes
from invmap.safe import escape


def _written(out: Output, source: Any, text: str) -> None:
    """The source `add` or `edit` wrote: in a machine format as the README's JSON contract says, else `text`."""
    data = source.to_dict()
    emit(out, Result([data], list(data), data=data, draw=lambda w, c: text))


@implements("init")
def init(ctx: typer.Context, args: Args) -> None:
    """Start a catalog of your own: a copy of the shipped catalog at PATH, or (--overlay) a file that
    extends it and holds only what you add or change."""
    written = escape(authoring.init(args.path, args.overlay, args.force))
    if args.overlay:
        write(
            f"Wrote {written}, an overlay of the shipped map: add, edit and rm write your changes there; "
            f"use it with --catalog {written} or INVMAP_CATALOG={written}\n"
        )
        return
    write(f"Wrote {written}; use it with --catalog {written} or INVMAP_CATALOG={written}\n")


@implements("add")
def add(ctx: typer.Context, args: Args) -> None:
    """Add a source to the active catalog (never the shipped one); a rejected add changes nothing."""
    out = output(ctx, args)  # a format the command cannot print is refused before anything is written
    location = state(ctx).location
    writers.require_writable(location)
    opts = authoring.AddOptions(location, dict(args.__dict__), args.from_id, args.new_type, args.allow_duplicate)
    entry = authoring.new_entry(opts, lambda: index(ctx).types())
    warn_links(location.path)
    added = authoring.add(opts, entry)
    _written(out, added, outcomes.added_text(added, location.path))


@implements("edit")
def edit(ctx: typer.Context, args: Args) -> None:
    """Change fields of one source, named exactly (id, arXiv id, DOI or link); only its `[[sources]]`
    table is rewritten. A list field's option adds an item, `--remove-X` removes one, `--set-Xs`
    replaces the list; what changed is printed field by field."""
    from invmap import edits
    from invmap.options import REMOVE_PREFIX, SET_PREFIX

    out = output(ctx, args)  # a format the command cannot print is refused before anything is written
    location = state(ctx).location
    writers.require_writable(location)
    values = dict(args.__dict__)
    opts = authoring.EditOptions(
        location,
        args.target,
        values,
        removed={k.removeprefix(REMOVE_PREFIX): v for k, v in values.items() if k.startswith(REMOVE_PREFIX)},
        replaced={k.removeprefix(SET_PREFIX): v for k, v in values.items() if k.startswith(SET_PREFIX)},
        unset=args.unset or (),
        new_type=args.new_type,
    )
    plan = authoring.plan_edit(opts)
    warn_links(location.path)
    try:
        done = authoring.edit(opts, plan)
    except edits.NoSuchId:
        raise authoring.near_miss(index(ctx), args.target) from None
    _written(out, done.source, outcomes.edited_text(done, location.path))


@implements("rm")
def rm(ctx: typer.Context, args: Args) -> None:
    """Remove sources named exactly (on an overlay, hide the base's); asks first on a terminal unless
    --yes, and needs --yes elsewhere. `--undo` brings back base sources the overlay removes."""
    from invmap import edits

    location = state(ctx).location
    writers.require_writable(location)
    targets = list(dict.fromkeys(args.targets))
    if args.undo:
        authoring.restore(location, targets)
        write(f"Restored {', '.join(escape(i) for i in targets)} in {escape(location.path)}\n")
        return
    try:
        if not args.yes:
            _confirm_removal(state(ctx).env, location, targets)
        warn_links(location.path)
        ids, dropped = authoring.remove(location, targets, args.drop_citations)
    except edits.NoSuchId as exc:
        raise authoring.near_miss(index(ctx), authoring.missed_target(targets, exc)) from None
    also = f"; dropped the citation from {dropped} report{'s' if dropped != 1 else ''}" if dropped else ""
    write(f"Removed {', '.join(escape(i) for i in ids)} from {escape(location.path)}{also}\n")


def _confirm_removal(env: Any, location: Any, targets: list[str]) -> None:
    """On a terminal, ask before removing (what would go, by id and name); off one, --yes is needed."""
    if not (env.stdin_isatty and env.stderr_isatty):
        raise UsageError("rm needs --yes when it cannot ask (stdin or stderr is not a terminal)")
    shown = ", ".join(f"{i} ({name})" for i, name in authoring.to_remove(location, targets))
    env.stderr.write(escape(f"Remove {shown} from {location.path}? [y/N] "))
    env.stderr.flush()
    answer = env.stdin.readline()
    if answer.strip().casefold() not in ("y", "yes"):
        say("nothing removed")
        raise typer.Exit(0)


@implements("fmt")
def fmt_(ctx: typer.Context, args: Args) -> None:
    """Rewrite the active catalog in its one canonical form."""
    location = path_argument(ctx, [args.path] if args.path else None, "fmt")
    if not args.check_only and not location.is_stdin:
        warn_links(location.path)
    changed = edits.reformat(location, args.check_only, args.drop_comments)
    shown = escape(location.path)
    if not changed:
        write(f"{shown}: already canonical\n")
    elif args.check_only:
        say(f"{location.path}: not canonical; 'invmap fmt' would rewrite it")
        raise typer.Exit(1)
    else:
        write(f"{shown}: reformatted\n")
