"""The `invmap` console script: run the Typer app; end quietly when the reader goes away.

Exit statuses: 0 ok (a reader that closed the pipe early included), 1 not found or ambiguous,
2 usage, 3 invalid catalog or record, 4 a file or standard stream could not be used, 130 Ctrl-C.
"""

from __future__ import annotations

import _signal  # the C module: `signal` builds enums first, and Ctrl-C may come while it does

# Ctrl-C ends invmap at once, quietly, as the default action of SIGINT does (the shell reports 130).
# Python's own handler raises KeyboardInterrupt, which code in C (pydantic's validators, rapidfuzz)
# may swallow and report as some other failure; a file being written is cleaned up first, since
# `writers.write_atomic` handles SIGINT, SIGTERM and SIGHUP itself while it writes.
if _signal.getsignal(_signal.SIGINT) is not _signal.SIG_IGN:  # ignored (a background job): stays so
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)

import os  # noqa: E402
import sys  # noqa: E402

from invmap.safe import quiet_stdout  # noqa: E402


def main() -> None:
    code = _finish(_run())
    # The work is done and its exit status known: a Ctrl-C now must not turn it into a killed one.
    if hasattr(_signal, "pthread_sigmask"):  # POSIX
        _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
    sys.exit(code)


def _run() -> int:
    if os.environ.get("_INVMAP_COMPLETE"):
        # A TAB press: answer from the catalog's index without importing typer, if we can.
        try:
            from invmap.fastcomplete import answer

            code = answer()
        except Exception:  # never a traceback into a prompt; Typer's path will answer
            code = None
        if code is not None:
            return code
    # A run lives well under a second yet may allocate millions of objects from a large catalog;
    # the cyclic collector would scan them again and again for cycles that do not exist.
    import gc

    gc.disable()
    try:
        from invmap.cli import app

        app(prog_name="invmap")  # standalone mode: always ends in SystemExit
        return 0
    except SystemExit as exc:
        if isinstance(exc.code, str):
            _say(exc.code)
            return 1
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:
        return 0
    except Exception as exc:  # raised outside a command (help, --version, option callbacks)
        return _outside(exc)


def _outside(exc: Exception) -> int:
    """An error raised where no command reports it: invmap's own errors with their status, a file or
    stream that cannot be used (a name too long, a full disk) as exit 4; anything else is a bug."""
    from invmap.errors import InvmapError

    if isinstance(exc, InvmapError):
        from invmap.cli import report

        report(exc)
        return exc.exit_code
    if isinstance(exc, OSError):
        from invmap.safe import escape

        what = f": {escape(os.fsdecode(exc.filename))}" if exc.filename is not None else ""
        _say(f"Error: {exc.strerror or exc}{what}" if what else f"Error: cannot write to stdout: {exc.strerror or exc}")
        return 4
    raise exc


def _say(text: str) -> None:
    try:
        sys.stderr.write(text + "\n")
    except (OSError, ValueError, AttributeError):
        pass


def _finish(code: int) -> int:
    """Flush stdout; a reader that went away (`| head`) is not an error: exit 0 and say nothing.
    A stdout that cannot be written (`> /dev/full`, closed) is exit 4 with one line on stderr."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        quiet_stdout()
        return code
    except (OSError, ValueError) as exc:
        quiet_stdout()
        _say(f"Error: cannot write to stdout: {getattr(exc, 'strerror', None) or exc}")
        return 4
    finally:
        _flush_stderr()
    return code


def _flush_stderr() -> None:
    """Messages already said; a stderr that cannot take them (`2>/dev/full`, closed) changes no
    exit status, and the interpreter's final flush must not find them again (it would exit 120)."""
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        quiet_stdout(2)
