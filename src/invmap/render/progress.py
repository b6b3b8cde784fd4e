"""Progress bars on stderr for a person waiting at a terminal: while a large catalog is first read and
indexed, and while links are checked. Each returns the callback its caller reports progress to (or
nothing where no terminal is watching); the bars leave no trace when done."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

from invmap.safe import escape


def _bar(description: str, stream: Any) -> Any:
    """A transient rich bar on `stream` (stderr): the description, the bar, `done/total`."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    return Progress(
        TextColumn(description), BarColumn(), MofNCompleteColumn(), console=Console(file=stream), transient=True
    )


def catalog_progress(
    stream: Any, terminal: bool
) -> Callable[[str, int], Callable[[str | None, int | None], None] | None]:
    """For a first run of a large catalog: what `index.open_catalog` asks for a bar, given the path
    and size: a bar on `stream` while it is read and indexed when it is a `terminal`; None elsewhere."""
    return functools.partial(_catalog_bar, stream) if terminal else lambda path, size: None


def _catalog_bar(stream: Any, path: str, size: int) -> Callable[[str | None, int | None], None]:
    bar = _bar("{task.description}", stream)
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
def link_progress(total: int, stream: Any, terminal: bool) -> Iterator[Callable[[int, int], None] | None]:
    """While `total` links are checked: a bar on `stream` (stderr) when it is a `terminal` (and there are two
    links or more), given `step(advance, total)`; None elsewhere."""
    if not terminal or total < 2:
        yield None
        return
    with _bar("checking links", stream) as bar:
        task = bar.add_task("links", total=total)
        yield lambda advance, _total: bar.advance(task, advance)
