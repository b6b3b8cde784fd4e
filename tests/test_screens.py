"""Golden screens: what a person sees at 60, 80 and 120 columns (`--format table`, no colour).

After an intended change, rewrite them with `INVMAP_UPDATE_SCREENS=1 pytest tests/test_screens.py`
and read the diff before committing it.
"""

from __future__ import annotations

import os

import pytest

from conftest import ASSETS

SCREENS = ASSETS / "screens"
VIEWS = {
    "list": ["list"],
    "list-L3": ["list", "--layer", "L3"],
    "questions": ["questions"],
    "search": ["search", "kv", "cache"],
    "related": ["related", "pagedattention"],
    "map": ["map"],
    "show": ["show", "mooncake"],
    "layers": ["layers"],
}


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_golden_screen(cli, view, width):
    result = cli(*VIEWS[view], "--format", "table", "--color", "never", env={"COLUMNS": str(width)})
    assert result.code == 0 and result.err == ""
    path = SCREENS / f"{view}-{width}.txt"
    if os.environ.get("INVMAP_UPDATE_SCREENS"):
        path.write_text(result.out, encoding="utf-8")
    assert result.out == path.read_text(encoding="utf-8")
    assert all(len(line) <= width or "https://" in line for line in result.out.splitlines()), "wider than the screen"
