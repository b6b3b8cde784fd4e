"""Time `invmap simulate`: `python benchmarks/simulate.py [--runs N] [--sizes 1000,10000,100000,1000000]`.

Targets (issue "simulate"): each simulation of the default traces (`simulate batching --json`,
`simulate kv --json`) <= 1.5x `invmap list --json`, whole processes, medians of interleaved runs; and
10^5 requests simulated in <= 10 s. The growth from 10^3 to 10^6 requests is measured twice: the
core alone (`batching.simulate`, each strategy, in this process) and the whole command on a Vidur
CSV trace (`--trace FILE --json > /dev/null`, all three strategies). The trace repeats the field
guide's built-in r1..r8 every 24 ticks, a load the default configuration keeps up with, so the
work grows with the requests and not with a queue.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from invmap.simulate import batching  # noqa: E402
from invmap.simulate.workload import BUILT_IN_REQUESTS, Request  # noqa: E402

TICK_MS = 10  # the trace's times are written so that they fall on the ticks below
ENGINE = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]  # the millisecond mode's engine


def requests(count: int) -> list[Request]:
    width = len(str(count))
    out = []
    for n in range(count):
        base = BUILT_IN_REQUESTS[n % 8]
        out.append(
            Request(f"r{n + 1:0{width}d}", (n // 8) * 24 + base.arrival_tick, base.input_tokens, base.output_tokens, 0)
        )
    return out


def write_csv(path: Path, trace: list[Request]) -> None:
    with open(path, "w") as out:
        out.write("arrived_at,num_prefill_tokens,num_decode_tokens\n")
        for r in trace:
            out.write(f"{r.arrival_tick * TICK_MS / 1000 + 0.0001:.4f},{r.input_tokens},{r.output_tokens}\n")


def run_once(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def cpu_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one whole process: on a shared machine the CPU
    time is what the process itself cost."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = run_once(argv, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def default_traces(program: str, env: dict[str, str], runs: int) -> None:
    commands = {
        "list --json": [program, "list", "--json"],
        "simulate batching --json": [program, "simulate", "batching", "--json"],
        "simulate kv --json": [program, "simulate", "kv", "--json"],
        "simulate batching --events (text)": [program, "simulate", "batching", "--events"],
        "simulate batching --model --gpu --json": [program, "simulate", "batching", *ENGINE, "--json"],
    }
    times: dict[str, list[float]] = {label: [] for label in commands}
    for argv in commands.values():
        run_once(argv, env)  # the index is built, bytecode compiled
    for _ in range(runs):  # round-robin: the machine's load touches every command alike
        for label, argv in commands.items():
            times[label].append(run_once(argv, env) * 1000)
    medians = {label: statistics.median(t) for label, t in times.items()}
    listing = medians["list --json"]
    print(f"default traces: {runs} interleaved runs each (median), {os.cpu_count()} cores")
    for label, median in medians.items():
        ratio = median / listing
        verdict = "" if label == "list --json" else f"  {ratio:.2f}x list; {'ok' if ratio <= 1.5 else 'OVER'} (<= 1.5x)"
        print(f"  {label:<36} {median:7.1f} ms{verdict}")


def growth(program: str, env: dict[str, str], sizes: list[int], work: Path) -> None:
    config = batching.check_config({"max_ticks": 10**9})
    print("growth: the core per strategy (CPU s), the whole command on a CSV trace, all three strategies, --json")
    print(
        f"  {'requests':>9}  {'static':>8}  {'continuous':>10}  {'chunked':>8}  {'steps/ticks':>11}  {'wall s':>8}  {'CPU s':>7}"
    )
    for count in sizes:
        trace = requests(count)
        seconds, steps, ticks = [], 0, 0
        for strategy in batching.STRATEGIES:
            start = time.process_time()
            run = batching.simulate(config, trace, strategy)
            seconds.append(time.process_time() - start)
            steps, ticks = steps + run.steps, ticks + run.ticks
        path = work / f"trace-{count}.csv"
        write_csv(path, trace)
        argv = [program, "simulate", "batching", "--trace", str(path), "--max-ticks", str(10**9), "--json"]
        wall, cpu = cpu_once(argv, env)
        verdict = f"  {'ok' if cpu <= 10 else 'OVER'} (<= 10 s of CPU)" if count == 100_000 else ""
        print(
            f"  {count:>9,}  {seconds[0]:8.2f}  {seconds[1]:10.2f}  {seconds[2]:8.2f}  {steps / ticks:11.2f}  {wall:8.2f}  "
            f"{cpu:7.2f}{verdict}"
        )


def engine_growth(program: str, env: dict[str, str], sizes: list[int], work: Path) -> None:
    """The millisecond mode on the same CSV traces (their times kept), all three strategies, --json."""
    print(f"engine steps ({' '.join(ENGINE)}): the whole command on a CSV trace, all three strategies, --json")
    print(f"  {'requests':>9}  {'wall s':>8}  {'CPU s':>7}")
    for count in sizes:
        path = work / f"trace-{count}.csv"
        if not path.exists():
            write_csv(path, requests(count))
        argv = [program, "simulate", "batching", *ENGINE, "--trace", str(path), "--tick-ms", str(TICK_MS)]
        argv += ["--max-ticks", str(10**9), "--json"]  # 10^5 requests span 3,000 s: read at 10 ms a tick
        wall, cpu = cpu_once(argv, env)
        print(f"  {count:>9,}  {wall:8.2f}  {cpu:7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--engine-sizes", default="1000,10000,100000")
    args = parser.parse_args()
    program = str(Path(sys.executable).with_name("invmap"))
    work = Path(tempfile.mkdtemp(prefix="invmap-simulate-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    env.pop("INVMAP_CATALOG", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    default_traces(program, env, args.runs)
    growth(program, env, [int(s) for s in args.sizes.split(",") if s], work)
    engine_growth(program, env, [int(s) for s in args.engine_sizes.split(",") if s], work)


if __name__ == "__main__":
    main()
