"""`where` and `check` (with `--links`): flags -> the core's options (`authoring.where`,
`checking.py`), the result rendered through the format registry, messages on stderr."""

from __future__ import annotations

from dataclasses import replace

import typer

from invmap import checking, formats
from invmap.cli.authoring import path_argument
from invmap.cli.build import Args, implements
from invmap.cli.shared import emit, index, output, say, state
from invmap.errors import UsageError
from invmap.render import Result, outcomes
from invmap.safe import escape

MOST_WARNINGS = 10  # shown at the least, however short the terminal


def _one(data: dict, text: str) -> Result:
    """A result of one record (`data`, the JSON) whose text for a person is `text`."""
    return Result([data], list(data), data=data, draw=lambda width, color: text)


@implements("where")
def where(ctx: typer.Context, args: Args) -> None:
    """Print which catalog file is active, and why; in JSON, also the state of its index."""
    from invmap import authoring

    out = output(ctx, args)
    data = authoring.where(state(ctx).location, with_index=out.machine)
    emit(out, _one(data, outcomes.where_text(data)))


@implements("check")
def check(ctx: typer.Context, args: Args) -> None:
    """Validate the active catalog (or PATH) and report every problem (exit 0 when valid, 3 when not),
    each with its line and column."""
    out = output(ctx, args)
    if args.links:
        return check_links(ctx, args, replace(out, view=formats.LINK_CHECK))
    if args.update_redirects:
        raise UsageError("--update-redirects goes with --links")
    report = checking.check(path_argument(ctx, args.ids, "check"))
    if not out.machine:  # a person reads the problems (or warnings) on stderr
        if not report.valid:
            say("Error: " + outcomes.problems_message(report))
            raise typer.Exit(report.exit_code)
        # A screenful of warnings, the rest counted (a generated catalog has thousands); --all: each one.
        most = None if args.all_links else max(state(ctx).env.lines - 2, MOST_WARNINGS)
        for line in outcomes.warning_messages(report, most):
            say(line)
    emit(out, _one(report.data(), outcomes.check_text(report)))
    if not report.valid:
        raise typer.Exit(report.exit_code)


def check_links(ctx: typer.Context, args: Args, out) -> None:
    """`check --links`: one line per link that is not plainly alive (every link with --alive); exit 1
    when any is dead, 4 when the network cannot be used at all."""
    location = state(ctx).location
    opts = checking.LinkCheckOptions(
        location, args.ids or (), args.max_age, args.per_host, args.timeout, args.update_redirects
    )
    found = checking.links_to_check(opts, lambda: index(ctx))
    from invmap.render.progress import link_progress

    env = state(ctx).env
    with link_progress(checking.url_count(found), env.stderr, env.stderr_isatty) as step:
        results = checking.check_links(found, opts, step)
    shown = checking.shown(results, args.all_links)
    rows = checking.link_rows(shown)
    emit(out, Result(rows, list(checking.LINK_FIELDS), data=rows, draw=lambda w, c: outcomes.links_text(shown)))
    if not out.machine and env.stderr_isatty:
        say(outcomes.links_counted(*checking.counts(results)))
    if args.update_redirects:
        for ident, field, url in checking.update_redirects(location, results):
            say(f"updated {ident} {field} to {escape(url)}")
    if checking.any_dead(results):
        raise typer.Exit(1)
