"""The `invmap` console script: run the Typer app, and end quietly when the reader goes away."""

from __future__ import annotations

import os
import sys


def main() -> None:
    try:
        from invmap.cli import app

        app(prog_name="invmap")
    except BrokenPipeError:
        # `invmap list | head -1`: the reader closed the pipe. Point stdout at /dev/null so the
        # interpreter's final flush does not complain, and end like a finished command.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
