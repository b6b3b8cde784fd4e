"""Triage on real Chinese-language reports: `python benchmarks/chinese_triage.py [--invmap PATH] [--detail]`.

The cases are tests/fixtures/chinese-reports.json: real report titles written in Chinese (mixed with
English, as they are filed) from public engine trackers, none of them shipped in catalog.toml, each
with the levels its own thread supports (`accept`). For every case it runs `invmap triage TITLE
--json --limit 7` as a new process and counts the first level returned as accepted when it is one of
`accept`. Beside it, the BM25 baseline of /work/shared/triage/score.py, computed its way: one SQLite
FTS5 document per level (tokenize='porter unicode61') holding what `invmap layers Lx --color never`
prints, queried with the OR of the title's distinct `\\w+` words and ranked by bm25(). It prints both
shares and, with --detail, every case invmap does not accept. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CASES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "chinese-reports.json"
LIMIT = "7"
ENV = {"NO_COLOR": "1", "COLUMNS": "200", "PAGER": "cat", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}


def invmap_program() -> str:
    """The invmap beside this Python (its venv), else the first on PATH."""
    found = shutil.which("invmap", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    return found or sys.exit("benchmarks/chinese_triage.py: install invmap first (pip install .), or give --invmap")


def run(program: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([program, *args], capture_output=True, text=True, env={**os.environ, **ENV}, timeout=60)


def first_levels(program: str, title: str) -> list[str]:
    """Level codes `invmap triage` returns for `title`, in order ([] on no answer)."""
    proc = run(program, "triage", "--json", "--limit", LIMIT, "--", title)
    try:
        return [row["code"] for row in json.loads(proc.stdout or "[]")] if proc.returncode == 0 else []
    except (ValueError, KeyError, TypeError):
        return []


def bm25_ranker(program: str):
    """score.py's baseline: FTS5 bm25 over each level's `layers Lx` page."""
    rows = json.loads(run(program, "layers", "--json").stdout)
    codes = [r["code"] for r in rows if isinstance(r, dict) and re.fullmatch(r"L[1-6]|RL", str(r.get("code")))]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(code UNINDEXED, body, tokenize='porter unicode61')")
    for code in codes:
        db.execute(
            "INSERT INTO docs(code, body) VALUES (?, ?)",
            (code, run(program, "layers", code, "--color", "never").stdout),
        )

    def rank(text: str) -> list[str]:
        words = list(dict.fromkeys(re.findall(r"\w+", text.lower())))
        if not words:
            return []
        query = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        return [r[0] for r in db.execute("SELECT code FROM docs WHERE docs MATCH ? ORDER BY bm25(docs)", (query,))]

    return rank


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--invmap", default=None, help="the invmap program (default: beside this Python)")
    ap.add_argument("--detail", action="store_true", help="print every case whose first level is not accepted")
    a = ap.parse_args()
    program = a.invmap or invmap_program()
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    rank = bm25_ranker(program)
    with ThreadPoolExecutor(max_workers=2) as pool:
        got = list(pool.map(lambda c: first_levels(program, c["title"]), cases))
    tool = sum(bool(g) and g[0] in c["accept"] for c, g in zip(cases, got))
    base = sum(bool(r) and r[0] in c["accept"] for c in cases for r in [rank(c["title"])])
    n = len(cases)
    if a.detail:
        for case, g in zip(cases, got):
            if not g or g[0] not in case["accept"]:
                print(f"miss {'/'.join(case['accept']):6s} got {' '.join(g) or '(nothing)':22s} {case['title'][:70]}")
        print()
    print(f"{n} real Chinese-language reports (tests/fixtures/chinese-reports.json), first level accepted:")
    print(f"  invmap triage  {tool:3d}/{n} = {tool / n:.1%}")
    print(f"  bm25 (score.py's way over `layers Lx`)  {base:3d}/{n} = {base / n:.1%}")


if __name__ == "__main__":
    main()
