"""Regenerate completions/ from Typer's own scripts: `python scripts/generate_completions.py`.

Each script calls `invmap` back with `_INVMAP_COMPLETE=complete_<shell>` on every TAB; the
candidates come from the program, so the scripts only change when Typer's protocol does.
tests/test_completion.py fails when the committed files differ from what this writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = {"bash": "invmap.bash", "zsh": "_invmap", "fish": "invmap.fish"}


def script(shell: str) -> str:
    env = {**os.environ, "_INVMAP_COMPLETE": f"source_{shell}"}
    done = subprocess.run([sys.executable, "-m", "invmap"], env=env, capture_output=True, text=True, check=True)
    return done.stdout


def main() -> None:
    folder = Path(__file__).resolve().parent.parent / "completions"
    for shell, name in SCRIPTS.items():
        # Stripped, as `invmap --show-completion` prints them: `#compdef` must open the zsh file.
        (folder / name).write_text(script(shell).strip() + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
