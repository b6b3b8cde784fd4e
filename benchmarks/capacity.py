"""The engine model against real start-up logs (issue 42, capacity): `python benchmarks/capacity.py`.

Prints, for every log of tests/fixtures/startup-logs, the available KV memory `estimate memory
--engine` gives and the one the engine logged (or why the log is not judged), then the median and
p90 of the absolute error on the development and held-out halves, and how many are within the target
(5% or 0.5 GiB, whichever is larger). Then the cost: each estimate as a new process of the installed
`invmap`, as the ratio of its median wall time to `invmap list --json`'s, the commands taking turns
in each round (target <= 1.5x).
"""

from __future__ import annotations

import collections
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import startup_cases  # noqa: E402
from program import invmap_program  # noqa: E402

RUNS = 7
ESTIMATES = {
    "memory --engine vllm": ["estimate", "memory", "--engine", "vllm", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"],
    "memory --engine sglang": [
        "estimate",
        "memory",
        "--engine",
        "sglang",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
    ],
    "fit": [
        "estimate",
        "fit",
        "--model",
        "llama-3-70b-instruct",
        "--gpu",
        "h100-sxm",
        "--concurrency",
        "32",
        "--max-model-len",
        "8k",
    ],
}


def p90(values: list[float]) -> float:
    """The nearest-rank 90th percentile: the smallest value at least 90% of the values do not exceed."""
    ordered = sorted(values)
    return ordered[math.ceil(0.9 * len(ordered)) - 1]


def errors() -> None:
    judged = [startup_cases.judge(c) for c in startup_cases.cases()]
    for j in judged:
        half = "held-out" if j.case.log["held_out"] else "dev"
        if j.error is None:
            print(f"  {j.case.name:48} {half:8} not judged: {j.refusal or j.case.skipped}")
        else:
            mark = "within" if j.ok else "OUTSIDE"
            print(
                f"  {j.case.name:48} {half:8} {j.estimated:7.2f} GiB vs {j.logged:7.2f} GiB {100 * j.error:+7.1f}% {mark}"
            )
    for held_out in (False, True):
        half = [j for j in judged if j.error is not None and j.case.log["held_out"] == held_out]
        absolute = [abs(j.error) for j in half]
        name = "held-out" if held_out else "development"
        print(
            f"{name}: {len(half)} judged, {sum(j.ok for j in half)} within the target; "
            f"median |error| {100 * statistics.median(absolute):.1f}%, p90 {100 * p90(absolute):.1f}%"
        )
    # Many logs come from one sweep (one machine, one release): the count without the largest source.
    scored = [j for j in judged if j.error is not None]
    origins = collections.Counter(origin(j.case.log["source"]) for j in scored)
    largest, count = origins.most_common(1)[0]
    rest = [j for j in scored if origin(j.case.log["source"]) != largest]
    print(
        f"{count} judged logs come from {largest} ({sum(j.ok for j in scored if j not in rest)} within); "
        f"of the {len(rest)} from elsewhere, {sum(j.ok for j in rest)} are within the target"
    )


def origin(source: str) -> str:
    """The GitHub repository (owner/name) or the host a log was read from."""
    parts = source.split("/")
    return "/".join(parts[3:5]) if parts[2] == "github.com" else parts[2]


def once(program: str, args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([program, *args, "--json"], capture_output=True, check=True)
    return time.perf_counter() - start


def cost() -> None:
    """Each command once per round, the rounds repeated, so a change in the machine's load falls on
    every command alike; medians per command."""
    program = invmap_program("capacity.py")
    commands = {"list": ["list"], **{f"estimate {name}": args for name, args in ESTIMATES.items()}}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(RUNS):
        for name, args in commands.items():
            times[name].append(once(program, args))
    baseline = statistics.median(times.pop("list"))
    print(f"invmap list --json: median {baseline * 1e3:.0f} ms")
    for name, taken in times.items():
        took = statistics.median(taken)
        print(f"{name}: median {took * 1e3:.0f} ms, {took / baseline:.2f}x list (target <= 1.5x)")


if __name__ == "__main__":
    errors()
    cost()
