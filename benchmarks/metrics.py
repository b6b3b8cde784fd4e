"""Time `triage --metrics` on realistic vLLM scrapes: `python benchmarks/metrics.py [--runs N]`.

The scrapes are what vLLM's PrometheusStatLogger registers (vllm/v1/metrics/loggers.py: its gauges,
counters and histograms with their bucket bounds, labels model_name and engine), written by
prometheus_client itself, one set of series per data-parallel engine, plus the process and GC
metrics prometheus_client adds: 200 KB is ~5 engines, 2 MB ~50. Targets (issue "metrics"): a 200 KB
scrape <= 2x `invmap list --json`, since issue "measure" <= 1.5x (measured 2026-12-05, 11 runs, load ~8 on
2 cores: 1.58x before the search engine was imported lazily, 1.42x after); a 2 MB scrape <= 1 s; and the peak memory of a 200 MB file. Issue
"bounds": a 1 GB scrape refused at the 256 MiB cap (as a file: before a byte is read; on stdin: after
reading to the cap; from a URL: at the cap, the body spooled to a temporary file) or read in under
100 MB, and 52 MB of distinct series of one metric in bounded memory (`--bounds` runs only these).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import scrapes  # noqa: E402  (the tests' builders: the engines' names, labels and buckets)

COUNTERS = ("vllm:num_preemptions", "vllm:prompt_tokens", "vllm:generation_tokens", "vllm:prefix_cache_queries",
            "vllm:prefix_cache_hits")  # fmt: skip
HISTOGRAMS = {
    "vllm:time_to_first_token_seconds": scrapes.VLLM_TTFT,
    "vllm:inter_token_latency_seconds": scrapes.VLLM_ITL,
    "vllm:request_time_per_output_token_seconds": scrapes.VLLM_ITL,
    "vllm:e2e_request_latency_seconds": scrapes.VLLM_REQUEST,
    "vllm:request_queue_time_seconds": scrapes.VLLM_REQUEST,
    "vllm:request_inference_time_seconds": scrapes.VLLM_REQUEST,
    "vllm:request_prefill_time_seconds": scrapes.VLLM_REQUEST,
    "vllm:request_decode_time_seconds": scrapes.VLLM_REQUEST,
    "vllm:request_prompt_tokens": scrapes.VLLM_TOKENS,
    "vllm:request_generation_tokens": scrapes.VLLM_TOKENS,
    "vllm:request_max_num_generation_tokens": scrapes.VLLM_TOKENS,
    "vllm:request_params_max_tokens": scrapes.VLLM_TOKENS,
    "vllm:iteration_tokens_total": [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384],
}


def scrape(engines: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    parts = []
    for engine in range(engines):
        reg = scrapes.vllm(engine=str(engine))
        reg.gauge("vllm:num_requests_running", rng.randint(0, 64)).gauge("vllm:num_requests_waiting", rng.randint(0, 8))
        reg.gauge("vllm:kv_cache_usage_perc", rng.random())
        for name in COUNTERS:
            reg.counter(name, rng.randint(0, 10**6))
        for reason in ("stop", "length", "abort"):
            reg.counter("vllm:request_success", rng.randint(0, 10**4), finished_reason=reason)
        for name, bounds in HISTOGRAMS.items():
            reg.histogram(name, [rng.choice(bounds) * rng.random() for _ in range(200)], buckets=bounds)
        parts.append(reg.text())
    return "".join(parts)


def sized(target: int, work: Path, name: str) -> Path:
    engines = 1
    while len(scrape(engines)) < target:
        engines *= 2
    low, high = engines // 2, engines
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if len(scrape(mid)) < target else (low, mid)
    path = work / name
    path.write_text(scrape(high))
    return path


def run_once(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def peak_of(argv: list[str], env: dict[str, str], stdin: object = None) -> tuple[float, float, int]:
    """Seconds, peak resident MiB and exit code of one run (in a child of its own, so the peak is its)."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "start = time.perf_counter()\n"
        "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
        "print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, code)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, *argv], env=env, stdin=stdin, capture_output=True, text=True)
    seconds, peak, code = done.stdout.split()
    return float(seconds), float(peak), int(code)


def bounds(program: str, work: Path, env: dict[str, str]) -> None:
    """Issue 38's figures: a 1 GB scrape (a file, and stdin) and 52 MB of distinct series."""
    big = work / "1g.prom"
    with open(big, "wb") as out:
        out.truncate(2**30)  # a file's size is read before its bytes
    seconds, peak, code = peak_of([program, "triage", "--metrics", str(big), "--json"], env)
    print(f"  1 GB scrape file (refused: exit {code})     {seconds:7.2f} s   peak {peak:.0f} MiB")
    feeder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nblock = b'other_metric{a=\"1\"} 1\\n' * 65536\n"
         "try:\n    [sys.stdout.buffer.write(block) for _ in range(2**30 // len(block))]\nexcept BrokenPipeError:\n    pass\n"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    seconds, peak, code = peak_of([program, "triage", "--metrics", "-", "--json"], env, stdin=feeder.stdout)
    feeder.kill()
    print(f"  1 GB scrape on stdin (refused: exit {code})   {seconds:7.2f} s   peak {peak:.0f} MiB")
    distinct = work / "distinct.prom"
    with open(distinct, "w") as out:
        out.write("# TYPE vllm:num_requests_running gauge\n")
        n = 0
        while out.tell() < 52 * 2**20:
            out.write("".join(f'vllm:num_requests_running{{engine="{i}"}} 1\n' for i in range(n, n + 10_000)))
            n += 10_000
    seconds, peak, code = peak_of([program, "triage", "--metrics", str(distinct), "--json"], env)
    print(f"  52 MB of {n:,} distinct series (exit {code})  {seconds:7.2f} s   peak {peak:.0f} MiB")
    over_http(program, env)


def gzipped_scrape(size: int) -> bytes:
    """An HTTP answer whose gzip body decodes to `size` bytes: 1 KB lines of a metric invmap does not
    read, then one vLLM gauge (the body on the wire is a few MB; the cap counts decoded bytes)."""
    import zlib

    from misbehaving import answer

    line = b'other_metric{a="' + b"x" * 1000 + b'"} 1\n'
    block = line * (2**20 // len(line))
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    body = b"".join(packer.compress(block) for _ in range(size // len(block)))
    body += packer.compress(b"vllm:num_requests_waiting 0\n") + packer.flush()
    return answer(body, headers={"Content-Encoding": "gzip", "Content-Type": "text/plain"})


def over_http(program: str, env: dict[str, str]) -> None:
    """A 1 GB scrape from a URL (refused at the 256 MiB cap) and a 250 MB one (read): the body is
    spooled to a temporary file as it arrives, never held whole (before: 296 MiB and 520 MiB peaks)."""
    from misbehaving import Server, fixed

    for size, label in ((2**30, "1 GB"), (250 * 2**20, "250 MB")):
        with Server(fixed(gzipped_scrape(size))) as server:
            seconds, peak, code = peak_of([program, "triage", "--metrics", server.url + "/metrics", "--json"], env)
        verdict = "refused" if code == 4 else "read" if code == 0 else "failed"
        print(f"  {label} scrape over HTTP ({verdict}: exit {code})  {seconds:7.2f} s   peak {peak:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--bounds", action="store_true", help="only the size and series-cap figures (issue 38)")
    args = parser.parse_args()
    program = str(Path(sys.executable).with_name("invmap"))
    work = Path(tempfile.mkdtemp(prefix="invmap-metrics-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    env.pop("INVMAP_CATALOG", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.bounds:
        bounds(program, work, env)
        return
    small, large = sized(200_000, work, "200k.prom"), sized(2_000_000, work, "2m.prom")
    commands = {
        "list --json": [program, "list", "--json"],
        f"triage --metrics {small.stat().st_size // 1000} KB": [program, "triage", "--metrics", str(small), "--json"],
        f"triage --metrics {large.stat().st_size / 1e6:.1f} MB": [program, "triage", "--metrics", str(large), "--json"],
    }
    times: dict[str, list[float]] = {label: [] for label in commands}
    for argv in commands.values():
        run_once(argv, env)  # the index is built, bytecode compiled
    for _ in range(args.runs):  # round-robin: the machine's load touches every command alike
        for label, argv in commands.items():
            times[label].append(run_once(argv, env) * 1000)
    medians = {label: statistics.median(t) for label, t in times.items()}
    listing, (small_label, large_label) = medians["list --json"], list(commands)[1:]
    print(f"invmap triage --metrics: {args.runs} runs each (median), {os.cpu_count()} cores")
    print(f"  list --json                       {listing:7.1f} ms")
    verdict = "ok" if medians[small_label] <= 1.5 * listing else "OVER"
    print(
        f"  {small_label:<33} {medians[small_label]:7.1f} ms  {medians[small_label] / listing:.2f}x list; {verdict} (<= 1.5x)"
    )
    verdict = "ok" if medians[large_label] <= 1000 else "OVER"
    print(f"  {large_label:<33} {medians[large_label]:7.1f} ms  {verdict} (<= 1000 ms)")
    big = work / "200m.prom"
    block = large.read_text()
    with open(big, "w") as out:
        while out.tell() < 200 * 2**20:
            out.write(block.replace("vllm:", "other_"))  # 200 MB of families invmap does not read
        out.write(small.read_text())
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    seconds = run_once([program, "triage", "--metrics", str(big), "--json"], env)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"  triage --metrics 200 MB            {seconds:7.1f} s   peak {max(peak, before) / 1024:.0f} MiB")
    bounds(program, work, env)


if __name__ == "__main__":
    main()
