"""What a benchmark's printed block is pasted with, and what a paste cut short lacks: the benchmark
command above the block (`vllm bench serve ...`, `python -m sglang.bench_serving ...`,
`benchmark_serving.py`, `genai-perf profile ...`, `guidellm benchmark ...`), its options by the run's
field each fills, and the sections a block that stops early does not have. bench.py puts the values in
the run (the block's own lines win)."""

from __future__ import annotations

import re
import shlex
from typing import Any

# A section rule of the printed block ("-----Time to First Token-----"): a paste cut above the title.
SECTION = re.compile(r"^[ \t#]*-{3,}(Time to First Token|Time per Output Token.*|Inter-token Latency|"
                     r"Speculative Decoding|End-to-end Latency)-{3,}[ \t]*$", re.M)  # fmt: skip
# What a whole block holds, by section: said once when a paste stops before one.
SECTIONS = (("ttft_median", "TTFT"), ("tpot_median", "TPOT"), ("itl_median", "ITL"))
# The benchmark commands whose options a block is pasted with, and the options read from them.
COMMANDS = re.compile(r"vllm bench serve|sglang\.bench_serving|bench_serving\.py|benchmark_serving\.py|"
                      r"genai-perf profile|guidellm benchmark")  # fmt: skip
OPTIONS = {
    "--num-prompts": "num_prompts",
    "--request-rate": "request_rate",
    "--rate": "request_rate",  # guidellm
    "--max-concurrency": "max_concurrency",
    "--concurrency": "max_concurrency",  # genai-perf
    "--random-input-len": "random_input_len",
    "--random-output-len": "random_output_len",
    "--dataset-name": "dataset",
    "--dataset-path": "dataset",
    "--dataset": "dataset",
    "--data": "dataset",  # guidellm
}


def command_options(lines: list[str], at: int) -> tuple[str, dict[str, str]]:
    """The command starting at line `at` (continuations joined) and the declared options it gives."""
    joined = _joined(lines, at)
    return joined, _options(joined)


def _joined(lines: list[str], at: int) -> str:
    """The command starting at line `at`, its `\\` continuations joined."""
    joined, n = lines[at], at
    while joined.rstrip().endswith("\\") and n + 1 < len(lines):
        n += 1
        joined = joined.rstrip()[:-1] + " " + lines[n]
    return joined


def _options(joined: str) -> dict[str, str]:
    """The declared options (`OPTIONS`) a command line gives, by the field each fills."""
    start = COMMANDS.search(joined)
    try:
        words = shlex.split(joined[start.start() if start else 0 :], comments=True)
    except ValueError:  # an unclosed quote: split on spaces
        words = joined.split()
    given: dict[str, str] = {}
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if flag in OPTIONS and (eq or i + 1 < len(words)):
            given[OPTIONS[flag]] = value if eq else words[i + 1]
    return given


def cut_short(run: dict[str, Any], lines: list[str], start: int, end: int, several: bool, k: int) -> list[str]:
    """A block that stops before its sections end (a paste cut after 'Mean TTFT'): what it lacks, once."""
    closed = any(line.strip().lstrip("#").strip().startswith("=" * 10) for line in lines[start + 1 : end])
    lacks = [name for key, name in SECTIONS if key not in run]
    if closed or not lacks or not any(k2.endswith(("_mean", "_median", "_p99")) for k2 in run):
        return []
    last = next((line.strip() for line in reversed(lines[start + 1 : end]) if line.strip()), "")
    of = f"run {k + 1}: " if several else ""
    return [f"{of}the block stops at {last[:60]!r}: no {', '.join(lacks)} lines; read for what it has"]
