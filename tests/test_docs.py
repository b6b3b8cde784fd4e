"""Every `sh` example of the README and of its reference pages in docs/, run as written.

Each page's `sh` blocks are one shell session in an empty folder (an `export` or a file one line
writes is there for the next line), through the installed `invmap`. A page whose blocks another test
already runs line by line, checking what they print, is named with that test instead of being run
twice; a line that needs a running engine is named with what it needs, and the files a reader
brings (their scrapes, a benchmark's result) are real measurements from tests/fixtures."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, installed_invmap

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# page -> the test that runs its `sh` blocks as written and checks their output
RUN_ELSEWHERE = {
    "catalogs.md": "tests/test_careful.py::test_docs_own_catalog_block_runs_as_written",
    "estimates.md": "tests/test_estimate.py::test_docs_recreate_estimates_and_gpus_run_as_written",
    "gpus.md": "tests/test_estimate.py::test_docs_recreate_estimates_and_gpus_run_as_written",
    "settings.md": "tests/test_code.py::test_docs_settings_block_runs_as_written",
    "simulate.md": "tests/test_simulate.py::test_docs_recreate_simulations_runs_as_written",
}

# what a line needs that no test folder holds: a line naming it is not run
NEEDS = {
    "localhost:8000": "an engine serving /metrics",
    "pip install": "a fresh clone and the package registry (.ci/run runs the test command)",
}

# the reader's own files an example names, stood in for by real measurements of the same kind
MEASURED = REPO / "tests" / "fixtures" / "measurements"
READER_FILES = {
    "before.prom": MEASURED / "vllm-lora-adapters-1.prom",
    "after.prom": MEASURED / "vllm-lora-adapters-1.prom",
    "results.json": MEASURED / "vllm-single-stream-1.txt",  # vllm bench serve's printed result
}

# a documented line whose exit status is not 0, and why
EXITS = {
    "invmap record check experiments/*.json": (3, "the draft is not filled in: $EDITOR is `true` here"),
}


def _lines(page: Path) -> list[str]:
    """The `sh` lines of a page, a `\\`-continued command joined, `# comments` kept (bash drops them)."""
    text = page.read_text(encoding="utf-8")
    joined = [b.replace("\\\n", " ") for b in re.findall(r"```sh\n(.*?)```", text, re.S)]
    return [line for block in joined for line in block.splitlines() if line.strip()]


def _needs(line: str) -> str | None:
    return next((why for what, why in NEEDS.items() if what in line), None)


def test_run_elsewhere_names_real_tests_of_real_pages():
    for page, test in RUN_ELSEWHERE.items():
        assert (REPO / "docs" / page).is_file(), page
        path, name = test.split("::")
        assert f"def {name}(" in (REPO / path).read_text(encoding="utf-8"), test


@pytest.mark.parametrize("page", [p for p in PAGES if p.name not in RUN_ELSEWHERE and _lines(p)], ids=lambda p: p.name)
def test_every_sh_example_runs_as_written(page, tmp_path):
    lines = [line for line in _lines(page) if _needs(line) is None]
    assert lines, page.name
    for name, fixture in READER_FILES.items():
        (tmp_path / name).write_bytes(fixture.read_bytes())
    script = "".join(f'{line}\necho "@@ $?" >&2\n' for line in lines)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER", "INVMAP_CATALOG")}
    env.update(PATH=f"{Path(installed_invmap()).parent}:{env['PATH']}", EDITOR="true", COLUMNS="80")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    statuses = [int(s) for s in re.findall(r"^@@ (\d+)$", done.stderr, re.M)]
    assert len(statuses) == len(lines), done.stderr
    for line, status in zip(lines, statuses):
        wanted = EXITS.get(line.split(" # ")[0].strip(), (0, ""))[0]
        assert status == wanted, (page.name, line, done.stderr)
    assert "Traceback" not in done.stderr


def test_the_readme_test_command_is_what_ci_runs():
    """The README's test command, byte for byte, is the line `.ci/run` runs in a fresh clone."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"To run the tests \(what `\.ci/run` runs.*?```sh\n(.*?)\n```", readme, re.S).group(1)
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert block in ci and block.startswith("python3 -m venv .venv && ") and block.endswith(" && pytest")
