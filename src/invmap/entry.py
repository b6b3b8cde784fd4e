"""The `invmap` console script: run the Typer app, end quietly when the reader goes away, end fast."""

from __future__ import annotations

import gc
import os
import sys


def main() -> None:
    if os.environ.get("_INVMAP_COMPLETE"):
        # A TAB press: answer from the completion index without importing typer, if we can.
        from invmap.fastcomplete import answer

        code = answer()
        if code is not None:
            _exit(code)
    # A run lives well under a second yet may allocate millions of objects from a large catalog;
    # the cyclic collector would scan them again and again for cycles that do not exist.
    gc.disable()
    try:
        from invmap.cli import app

        app(prog_name="invmap")  # standalone mode: always ends in SystemExit
        code = 0
    except SystemExit as exc:
        if isinstance(exc.code, str):
            sys.stderr.write(exc.code + "\n")
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BrokenPipeError:
        code = 0
    _exit(code)


def _exit(code: int) -> None:
    """Flush and leave without the interpreter's teardown, which at 100,000 sources frees millions
    of objects one by one (~0.2 s) only to hand the memory back to the OS anyway."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # `invmap list | head -1`: the reader closed the pipe; what it did not read is not wanted.
        pass
    try:
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass
    if (cache := sys.modules.get("invmap.cache")) is not None:
        cache.finish()  # a large catalog's cache entry, written once our output is complete
    os._exit(code)
