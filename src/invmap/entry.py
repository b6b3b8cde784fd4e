"""The `invmap` console script: run the Typer app, and end quietly when the reader goes away."""

from __future__ import annotations

import os
import sys


def main() -> None:
    if os.environ.get("_INVMAP_COMPLETE"):
        # A TAB press: answer from the completion index without importing typer, if we can.
        from invmap.fastcomplete import answer

        code = answer()
        if code is not None:
            sys.stdout.flush()
            os._exit(code)  # skip interpreter teardown too: every millisecond of a TAB is felt
    try:
        from invmap.cli import app

        app(prog_name="invmap")
    except BrokenPipeError:
        # `invmap list | head -1`: the reader closed the pipe. Point stdout at /dev/null so the
        # interpreter's final flush does not complain, and end like a finished command.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
