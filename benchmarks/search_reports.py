"""Search on real reports' words: `python benchmarks/search_reports.py [--invmap PATH] [--reports GLOB]`.

For every real report that names at least one source (the shipped ones, from `invmap reports
--json`, or JSON arrays of {id, title, primary, sources, ...} given with `--reports GLOB`: symptom
reports copied from public issue trackers, each labelled with the map's sources that address its
mechanism; search never reads them), it runs `invmap search -- TITLE --json --limit 3` as a new process and counts a
hit when one of those sources is in the top 3. It prints the share, the target (>= 80%) and every
miss with what came first instead; `--all` prints the hits too. Run it with the Python invmap is
installed in, or give `--invmap`.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TARGET = 0.80
TOP = 3


def invmap_program() -> str:
    """The invmap beside this Python (its venv), else the first on PATH."""
    found = shutil.which("invmap", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    return found or sys.exit("benchmarks/search_reports.py: install invmap first (pip install .), or give --invmap")


def top(program: str, title: str) -> tuple[list[str], str]:
    """The ids `invmap search -- TITLE` ranks first (and its stderr, when it said anything)."""
    proc = subprocess.run(
        [program, "search", "--json", "--limit", str(TOP), "--", title], capture_output=True, text=True
    )
    try:
        return [hit["id"] for hit in json.loads(proc.stdout or "[]")], proc.stderr.strip()
    except (ValueError, KeyError, TypeError):
        return [], f"exit {proc.returncode}: {proc.stderr.strip()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--invmap", default=None, help="the invmap program (default: beside this Python)")
    ap.add_argument("--reports", default=None, help="a glob of JSON report files (default: the shipped reports)")
    ap.add_argument("--all", action="store_true", help="print every report, hits too")
    a = ap.parse_args()
    program = a.invmap or invmap_program()
    if a.reports:
        files = sorted(glob.glob(a.reports))
        if not files:
            sys.exit(f"benchmarks/search_reports.py: no report files match {a.reports}")
        every = [r for f in files for r in json.loads(Path(f).read_text(encoding="utf-8"))]
    else:
        every = json.loads(subprocess.run([program, "reports", "--json"], capture_output=True, text=True).stdout)
    reports = [r for r in every if r.get("sources")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(lambda r: top(program, r["title"]), reports))
    hits = 0
    by_level: dict[str, list[int]] = {}
    for report, (ids, err) in zip(reports, answers):
        hit = bool(set(ids) & set(report["sources"]))
        hits += hit
        tally = by_level.setdefault(report.get("primary") or "?", [0, 0])
        tally[0] += hit
        tally[1] += 1
        if not hit or a.all:
            mark = "hit " if hit else "miss"
            print(f"{mark} {report['id']:24s} {report['title'][:70]!r}")
            print(f"       wanted {', '.join(report['sources'])}; got {', '.join(ids) or '(nothing)'}")
            if err:
                print(f"       stderr: {err}")
    share = hits / len(reports)
    print()
    print("by level: " + ", ".join(f"{k} {h}/{n}" for k, (h, n) in sorted(by_level.items())))
    verdict = "ok" if share >= TARGET else "below target"
    print(f"a named source in the top {TOP}: {hits}/{len(reports)} = {share:.1%} (target >= {TARGET:.0%}: {verdict})")


if __name__ == "__main__":
    main()
