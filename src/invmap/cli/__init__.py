"""The Typer CLI (`main.py` builds the app). Nothing here imports the commands' modules: they import
one another by their own names (`invmap.cli.shared`), never this package's."""

from __future__ import annotations

from invmap.cli.main import COMMANDS, app, report

__all__ = ["COMMANDS", "app", "report"]
