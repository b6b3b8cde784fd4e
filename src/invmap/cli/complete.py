"""Typer's completion callbacks, one per `complete` name of `options.py`.

The candidates come from `invmap.complete`, which the TAB fast path (`fastcomplete.py`) calls too, so
both paths offer the same values; tests compare their answers byte for byte.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import typer

from invmap import complete, formats
from invmap import location as catalog_location
from invmap import options as decl


def _index(ctx: typer.Context, kind: str, incomplete: str) -> dict[str, Any] | None:
    """What completion needs, from the catalog's index; `--catalog` may already be on the command line."""
    from invmap.index import open_catalog

    root = ctx.find_root()
    try:
        location = catalog_location.locate(root.params.get("catalog"))
        # A TAB never waits on stdin, a FIFO or a device (`-c /dev/zero`): regular files only.
        if not os.path.isfile(location.path) or os.path.getsize(location.path) > catalog_location.max_size():
            return None
        return complete.from_index(open_catalog(location), kind, incomplete)
    except Exception:  # noqa: BLE001 - a broken catalog completes nothing rather than printing errors into the prompt
        return None


def _from_index(kind: str) -> Callable[..., list[tuple[str, str]]]:
    def callback(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
        wanted = "code_source" if kind == "source_or_code" and ctx.params.get("code") else kind
        found = _index(ctx, wanted, incomplete)
        return complete.candidates(wanted, found, incomplete) if found is not None else []

    return callback


def _choices(values: tuple[str, ...]) -> Callable[..., list[tuple[str, str]]]:
    def choices(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
        return complete.choices(values, incomplete)

    return choices


def _lazy_choices(kind: str) -> Callable[..., list[tuple[str, str]]]:
    def choices(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
        values, helps = complete.choice_values(kind)
        return complete.choices(values, incomplete, helps)

    return choices


def callback(kind: str | None, command: decl.Command) -> Callable[..., Any] | None:
    """The Typer completion callback for a declared `complete` name (None: Typer's default)."""
    if kind is None or kind == "catalog":
        return None
    if kind in complete.INDEX_KINDS:
        return _from_index(kind)
    if kind == "format":
        return _choices(formats.names_for(command.view))
    if kind == "fields":

        def fields(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
            return complete.fields(complete.fields_of(command.path), incomplete)

        return fields
    if kind in complete.LAZY_CHOICES:
        return _lazy_choices(kind)
    return _choices(complete.CHOICES[kind])
