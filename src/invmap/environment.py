"""The run's environment: the standard streams, whether each is a terminal, the terminal's size, the
inputs of the colour decision, the pager command and the environment variables read.

One is made per run (`Environment.of_process()`, in the root callback) and reached from the run's
state; every read of terminal state goes through it. Tests build one with their own terminal facts
(and streams, if they want them) and pass it in, so how a command looks on a terminal is checked
in-process (as httpie's `Environment`). A stream left as None is the interpreter's own at the time
it is used (`sys.stdout`), which is what a test runner that captures output replaces.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, Any

PAGER_VAR = "INVMAP_PAGER"
FALLBACK_SIZE = (80, 24)  # a pipe or a file: as shutil.get_terminal_size answers there


def is_terminal(stream: Any) -> bool:
    """Whether `stream` is attached to a terminal; a closed, missing or odd stream is not."""
    try:
        return bool(stream is not None and stream.isatty())
    except (ValueError, AttributeError, OSError):
        return False


def _columns_of(stream: Any, variables: Mapping[str, str]) -> int:
    """The width of the terminal `stream` is on ($COLUMNS first, as shutil reads it for stdout)."""
    with contextlib.suppress(ValueError):
        if int(variables.get("COLUMNS", "0")) > 0:
            return int(variables["COLUMNS"])
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return FALLBACK_SIZE[0]


@dataclass(frozen=True)
class Environment:
    """What a run may know of the world around it; nothing else reads the streams' terminal state."""

    stdout_isatty: bool = False
    stderr_isatty: bool = False
    stdin_isatty: bool = False
    columns: int = FALLBACK_SIZE[0]  # stdout's terminal ($COLUMNS first)
    lines: int = FALLBACK_SIZE[1]
    stderr_columns: int = FALLBACK_SIZE[0]  # the terminal stderr is on ($COLUMNS first)
    variables: Mapping[str, str] = field(default_factory=lambda: os.environ)
    stdout_stream: IO[str] | None = None  # None: sys.stdout when used
    stderr_stream: IO[str] | None = None
    stdin_stream: IO[str] | None = None
    platform: str = sys.platform

    @classmethod
    def of_process(cls) -> Environment:
        """The process's own: its standard streams, their terminals, its environment variables."""
        import shutil

        size = shutil.get_terminal_size(FALLBACK_SIZE)
        return cls(
            stdout_isatty=is_terminal(sys.stdout),
            stderr_isatty=is_terminal(sys.stderr),
            stdin_isatty=is_terminal(sys.stdin),
            columns=size.columns,
            lines=size.lines,
            stderr_columns=_columns_of(sys.stderr, os.environ),
        )

    @classmethod
    def terminal(cls, columns: int = 80, lines: int = 24, **overrides: Any) -> Environment:
        """A run on a terminal `columns` wide (stdin, stdout and stderr all on it): for tests."""
        values: dict[str, Any] = {
            "stdout_isatty": True,
            "stderr_isatty": True,
            "stdin_isatty": True,
            "columns": columns,
            "lines": lines,
            "stderr_columns": columns,
        }
        return cls(**{**values, **overrides})

    @property
    def stdout(self) -> Any:
        return self.stdout_stream if self.stdout_stream is not None else sys.stdout

    @property
    def stderr(self) -> Any:
        return self.stderr_stream if self.stderr_stream is not None else sys.stderr

    @property
    def stdin(self) -> Any:
        return self.stdin_stream if self.stdin_stream is not None else sys.stdin

    def get(self, name: str, default: str | None = None) -> str | None:
        """One environment variable of the run."""
        return self.variables.get(name, default)

    def use_color(self, mode: str) -> bool:
        """auto: colour only when stdout is a terminal, and never with NO_COLOR set (non-empty) or
        TERM=dumb. always: colour even in a pipe. never: none."""
        if mode == "never":
            return False
        if mode == "always":
            return True
        return self.stdout_isatty and not self.get("NO_COLOR") and self.get("TERM") != "dumb"

    @property
    def pager_command(self) -> str:
        """`$INVMAP_PAGER`, else `$PAGER`, else `less`; empty or `cat` means no pager."""
        command = self.get(PAGER_VAR)
        if command is None:
            command = self.get("PAGER") or "less"
        return command

    def pager_variables(self) -> dict[str, str]:
        """The pager's environment: the run's, with LESS=FRX unless the user set LESS."""
        variables = dict(self.variables)
        variables.setdefault("LESS", "FRX")
        return variables

    @property
    def graphical(self) -> bool:
        """A desktop a browser can open a window on (macOS, X11, Wayland)."""
        return self.platform == "darwin" or bool(self.get("DISPLAY") or self.get("WAYLAND_DISPLAY"))
