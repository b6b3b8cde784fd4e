"""Progress bars on stderr for a person waiting at a terminal: while a large catalog is first read and
indexed, and while links are checked. Each returns the callback its caller reports progress to (or
nothing where no terminal is watching); the bars leave no trace when done."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from invmap.safe import escape


def _bar(description: str) -> Any:
    """A transient rich bar on stderr: the description, the bar, `done/total`."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    return Progress(
        TextColumn(description), BarColumn(), MofNCompleteColumn(), console=Console(stderr=True), transient=True
    )


def catalog_progress(path: str, size: int) -> Callable[[str | None, int | None], None] | None:
    """For a first run of a large catalog: a bar on stderr while it is read and indexed (a terminal
    only), as `index.open_catalog` asks for it; None elsewhere."""
    try:
        if sys.stderr is None or not sys.stderr.isatty():
            return None
    except (ValueError, AttributeError):
        return None
    bar = _bar("{task.description}")
    name = escape(os.path.basename(path))
    task: list[Any] = []

    def report(phase: str | None, amount: int | None) -> None:
        if phase == "reading":
            bar.start()
            task.append(bar.add_task(f"Reading {name}", total=None))
        elif phase == "indexing":
            bar.update(task[0], description=f"Indexing {name}", total=amount, completed=0)
        elif phase == "done":
            bar.stop()
        elif amount:
            bar.advance(task[0], amount)

    return report


@contextlib.contextmanager
def link_progress(total: int, terminal: bool) -> Iterator[Callable[[int, int], None] | None]:
    """While `total` links are checked: a bar on stderr when it is a `terminal` (and there are two
    links or more), given `step(advance, total)`; None elsewhere."""
    if not terminal or total < 2:
        yield None
        return
    with _bar("checking links") as bar:
        task = bar.add_task("links", total=total)
        yield lambda advance, _total: bar.advance(task, advance)
