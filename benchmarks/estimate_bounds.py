"""A config's numbers bounded as their options (issue 38, item 2): `python benchmarks/estimate_bounds.py`.

Before, a config.json with `num_hidden_layers` of 10^9 took 153 s and 15.6 GB before exiting 0, and
10^12 ended in a MemoryError. Now the key is refused (exit 3, naming the file and the key) before
anything is built from it. Each figure is the median wall time and the peak resident memory of the
installed `invmap` as a new process, beside the same estimate of a well-formed config in the same run.
Target: the refusal costs no more than the estimate of a real config (<= 1.1x its time and memory).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# The Llama-3.1-8B-shaped config the tests use too (one copy, in tests/fixtures).
LLAMA = json.loads((Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llama-like.json").read_text())


def one_run(argv: list[str]) -> tuple[float, int, int]:
    """(wall seconds, peak resident KiB, exit status) of one process: a child of its own, so that its
    peak is not another's."""
    probe = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "code = subprocess.run(sys.argv[1:], capture_output=True).returncode; "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)"
    )
    out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True).stdout
    seconds, peak, code = out.split()
    return float(seconds), int(peak), int(code)


def main() -> int:
    program = str(Path(sys.executable).with_name("invmap"))
    runs = 7
    with tempfile.TemporaryDirectory() as tmp:
        cases = {}
        for label, layers in (("32 layers (a real config)", 32), ("10^9 layers", 10**9), ("10^12 layers", 10**12)):
            folder = Path(tmp) / str(layers)
            folder.mkdir()
            (folder / "config.json").write_text(json.dumps({**LLAMA, "num_hidden_layers": layers}), encoding="utf-8")
            cases[label] = [program, "estimate", "memory", "--model", str(folder), "--gpu", "h100-sxm", "--json"]
        figures: dict[str, list[tuple[float, int, int]]] = {label: [] for label in cases}
        for _ in range(runs):  # round-robin: the machine's load touches every case alike
            for label, argv in cases.items():
                figures[label].append(one_run(argv))
    base_time = statistics.median(f[0] for f in figures["32 layers (a real config)"])
    base_peak = statistics.median(f[1] for f in figures["32 layers (a real config)"])
    print(f"invmap estimate memory --gpu h100-sxm, {runs} runs each (median); peak RSS of the process")
    for label, runs_of in figures.items():
        seconds = statistics.median(f[0] for f in runs_of)
        peak = statistics.median(f[1] for f in runs_of)
        codes = sorted({f[2] for f in runs_of})
        verdict = "ok" if seconds <= base_time * 1.1 and peak <= base_peak * 1.1 else "OVER"
        print(
            f"  {label:<28} {seconds * 1000:7.1f} ms {peak / 1024:6.1f} MiB  exit {codes}  "
            f"{seconds / base_time:.2f}x time, {peak / base_peak:.2f}x memory  {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
