"""Share one step between two cores with a fork: the few steps that dominate a 100,000-source run
(parsing the TOML, scoring a search) take about half as long.

rapidfuzz and tomli hold the GIL, so threads would not help; a forked child shares the loaded data
copy-on-write and streams its result back through a pipe.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def available() -> bool:
    return hasattr(os, "fork") and (os.cpu_count() or 1) >= 2


def split(here: Callable[[], Any], there: Callable[[], Any]) -> tuple[Any, Any] | None:
    """Run `there()` in a forked child while `here()` runs in this process; return both results.

    None when the work could not be shared or either side failed (no fork, an exception, a child
    that died): the caller then does the whole step itself, so results and errors are exactly
    those of doing it once, in one process.
    """
    if not available():
        return None
    import pickle

    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child: do its part, stream the result back, leave without any cleanup
        status = 1
        try:
            os.close(read_end)
            with os.fdopen(write_end, "wb") as pipe:
                pickle.dump(there(), pipe, protocol=pickle.HIGHEST_PROTOCOL)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        mine, ok = here(), True
    except Exception:
        mine, ok = None, False
    with os.fdopen(read_end, "rb") as pipe:  # closing it early makes a still-writing child stop
        try:  # our own child's bytes through our own pipe, streamed rather than held whole
            theirs = pickle.load(pipe) if ok else None
        except Exception:
            ok = False
    _, status = os.waitpid(pid, 0)
    if not ok or status != 0:
        return None
    return mine, theirs
