"""What the authoring commands share on the command line: a catalog given as PATH, output to a
file or stdout, the warning for a catalog reached through a link, and the output of a command
that takes `--json` alone. The commands themselves: `checking.py` (where, check), `editing.py`
(init, add, edit, rm, fmt), `exchange.py` (export, import, diff, refresh)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from invmap import writers
from invmap.cli.shared import say, state, write
from invmap.errors import UsageError


def to_output(target: str | None, text: Callable[[], str], force: bool) -> bool:
    """Write what `text()` returns to `target` (stdout when None or '-'); True if a file was written.
    For a file, `text()` runs under the file's lock, so it may read the very file it replaces."""
    if target is None or target == "-":
        write(text())
        return False
    warn_links(target)
    writers.write_output(target, text, force=force)
    return True


def warn_links(path: str) -> None:
    warning = writers.link_warning(path)
    if warning:
        say(f"warning: {warning}")


def path_argument(ctx: typer.Context, paths: list[str] | None, command: str) -> Any:
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
