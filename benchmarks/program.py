"""The installed `invmap` a benchmark times: the console script beside the running Python (the venv
it was installed in), else the one on PATH; the script exits with a hint when there is none."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def invmap_program(script: str) -> str:
    beside = Path(sys.executable).with_name("invmap")
    found = str(beside) if beside.exists() else shutil.which("invmap")
    if not found:
        sys.exit(f"benchmarks/{script}: install invmap first (pip install .), or run it with that venv's Python")
    return found
