"""How often triage is right on real measurements: `python benchmarks/measurements.py [--json]`.

Runs the installed `invmap triage --metrics FILE --json` (scrapes) or `--bench FILE --json` (benchmark
outputs) over every file of tests/fixtures/measurements, and each before/after pair as `--bench A
--bench B`, and prints, for the development half and the held-out half separately: the share of
labelled fixtures whose first level is the label, the share of healthy / not-enough-signal ones that
get no high-confidence level, and every miss (file, label, what invmap said). A run that exits non-zero
counts as a miss either way: these are real pastes, and refusing one is not an answer. Targets (issue
measure): on the held-out half >= 80% first level right, >= 85% of the quiet ones with no
high-confidence level. The labels were set from the threads before invmap read any file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import tomli

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "fixtures" / "measurements"
QUIET = ("healthy", "not-enough-signal")
OPTION = {"scrape": "--metrics", "bench": "--bench"}
TARGETS = {"levels": 0.80, "quiet": 0.85}
TIMEOUT_S = 60
VERDICTS = ("healthy by these signals", "not enough signal", "no change beyond", "Error")


def program() -> str:
    beside = Path(sys.executable).with_name("invmap")
    return str(beside) if beside.exists() else "invmap"


def triage(argv: list[str], env: dict[str, str]) -> dict:
    """One run: exit code, the levels (code and confidence) and the first line of stderr."""
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"code": None, "levels": [], "note": f"no answer in {TIMEOUT_S} s"}
    levels = []
    if done.returncode == 0:
        levels = [{"code": lv["code"], "confidence": lv["confidence"]} for lv in json.loads(done.stdout)]
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    verdicts = [line for line in lines if line.startswith(VERDICTS)]  # the outcome line, else the first
    note = (verdicts or lines or [""])[0]
    return {"code": done.returncode, "levels": levels, "note": note}


def said(run: dict) -> str:
    if run["code"] != 0:
        return f"exit {run['code']}: {run['note']}"
    if not run["levels"]:
        return f"no level ({run['note']})" if run["note"] else "no level"
    return ", ".join(f"{lv['code']} ({lv['confidence'] or '-'})" for lv in run["levels"])


def right(entry: dict, run: dict) -> bool:
    if run["code"] != 0:
        return False
    if entry["label"] in QUIET:
        return all(lv["confidence"] != "high" for lv in run["levels"])
    return bool(run["levels"]) and run["levels"][0]["code"] == entry["label"]


def summary(entries: list[dict], runs: dict[str, dict]) -> dict:
    levels = [e for e in entries if e["label"] not in QUIET]
    quiet = [e for e in entries if e["label"] in QUIET]
    return {
        "levels": (sum(right(e, runs[e["file"]]) for e in levels), len(levels)),
        "quiet": (sum(right(e, runs[e["file"]]) for e in quiet), len(quiet)),
        "misses": [
            {"file": e["file"], "label": e["label"], "said": said(runs[e["file"]])}
            for e in entries
            if not right(e, runs[e["file"]])
        ],
    }


def share(pair: tuple[int, int]) -> str:
    done, total = pair
    return f"{done}/{total} ({done / total:.0%})" if total else "0/0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures and misses as JSON")
    args = parser.parse_args()
    entries = tomli.loads((FIXTURES / "index.toml").read_text(encoding="utf-8"))["measurement"]
    work = Path(tempfile.mkdtemp(prefix="invmap-measurements-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    env.pop("INVMAP_CATALOG", None)
    invmap = program()
    runs = {
        e["file"]: triage([invmap, "triage", OPTION[e["kind"]], str(FIXTURES / e["file"]), "--json"], env)
        for e in entries
    }
    pairs: dict[str, dict[str, dict]] = {}
    for e in entries:
        if "pair" in e:
            pairs.setdefault(e["pair"], {})[e["side"]] = e
    compared = {
        name: triage(
            [
                invmap,
                "triage",
                "--bench",
                str(FIXTURES / sides["before"]["file"]),
                "--bench",
                str(FIXTURES / sides["after"]["file"]),
                "--json",
            ],
            env,
        )  # fmt: skip
        for name, sides in pairs.items()
    }
    halves = {
        "development": summary([e for e in entries if not e["held_out"]], runs),
        "held-out": summary([e for e in entries if e["held_out"]], runs),
    }
    if args.json:
        report = {"halves": halves, "pairs": {name: said(run) for name, run in compared.items()}}
        print(json.dumps(report, indent=2))
        return
    print(f"invmap triage on {len(entries)} real measurements ({FIXTURES.relative_to(HERE.parent)})")
    for name, half in halves.items():
        levels, quiet = half["levels"], half["quiet"]
        print(f"\n{name} half")
        print(f"  first level right             {share(levels):>14}  target {TARGETS['levels']:.0%}")
        print(f"  quiet with no high confidence {share(quiet):>14}  target {TARGETS['quiet']:.0%}")
        for miss in half["misses"]:
            print(f"  miss  {miss['file']:<40} {miss['label']:<18} said {miss['said']}")
    for name, run in compared.items():
        print(f"\npair {name} (--bench before --bench after): {said(run)}")


if __name__ == "__main__":
    main()
