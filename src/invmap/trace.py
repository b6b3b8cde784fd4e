"""`INVMAP_TRACE=1`: one line on stderr for each decision about where an answer came from (the
index read as it is, built, rebuilt after damage, or held in memory; the TAB fast path or Typer's),
as `GIT_TRACE` does for git. Tests use it to check that a fast path answered; it writes nothing else.
"""

from __future__ import annotations

import os
import sys

TRACE_VAR = "INVMAP_TRACE"


def trace(message: str) -> None:
    if os.environ.get(TRACE_VAR, "") in ("", "0"):
        return
    from invmap.safe import escape

    try:
        sys.stderr.write(f"invmap: {escape(message)}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
