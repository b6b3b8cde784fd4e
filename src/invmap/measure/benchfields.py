"""The numbers a benchmark's run holds, declared once with their ranges (`FIELDS`, and `FAMILIES` for a
latency's or length's statistics: `ttft_p99`), and each run checked against them (`checked`): a
value outside its range is left out with a note naming the file, line, key and value, or, for a field
declared `refuse` (the request counts), refuses the file (exit 3). bench.py fills the runs; the rules'
benchmark halves read these fields by name."""

from __future__ import annotations

from typing import Any

from invmap.errors import CatalogError
from invmap.measure.bounds import MOST, Range

# --- the range of every number a run holds ---------------------------------------------------

COUNT = Range(0, 1e12, "requests", integer=True, invalid="refuse")  # what the run is: never guessed at
LATENCY = Range(0, 1e9, "ms")  # 1e9 ms: eleven days
LENGTH = Range(0, 1e9, "tokens")  # a statistic of requests' lengths (a mean is no whole number)
FIELDS: dict[str, Range] = {
    "completed": COUNT,
    "failed": COUNT,
    "max_concurrency": Range(0, 1e9, "requests"),
    "peak_concurrency": Range(0, 1e9, "requests"),
    "concurrency": Range(0, 1e9, "requests"),
    "duration": Range(0, 1e9, "s"),
    "request_rate": Range(0, 1e12, "requests/s", infinite=True),  # "inf": as fast as possible
    "input_tokens": Range(0, MOST, "tokens", integer=True),
    "output_tokens": Range(0, MOST, "tokens", integer=True),
    "request_throughput": Range(0, 1e12, "requests/s"),
    "output_throughput": Range(0, MOST, "tokens/s"),
    "total_throughput": Range(0, MOST, "tokens/s"),  # prompt and output tokens a second (an offline run)
    "spec_acceptance": Range(0, 1, "fraction", tolerance=0.001),
    "spec_length": Range(0, 1e6, "tokens"),  # tokens a verification step yields, on average
    "num_prompts": COUNT,  # requests sent, from the command line pasted above a block
    "random_input_len": LENGTH,
    "random_output_len": LENGTH,
}
FAMILIES: dict[str, Range] = {"ttft": LATENCY, "tpot": LATENCY, "itl": LATENCY, "e2e": LATENCY,
                              "input_len": LENGTH, "output_len": LENGTH,
                              "spec_position": Range(0, 1, "fraction", tolerance=0.001)}  # fmt: skip  # spec_position_0: per position


def field_range(name: str) -> Range | None:
    """The range of a run's number `name` (`completed`, `ttft_p99`, ...); None: no such field."""
    if name in FIELDS:
        return FIELDS[name]
    family, _, stat = name.rpartition("_")
    return FAMILIES.get(family) if stat else None


FLAGS = (
    "label",
    "unbounded",
    "dataset",
    "failed_from_sent",
    "_command",
)  # a run's entries that are not numbers read from the file


# --- numbers of one run that contradict each other ---------------------------------------------
# Each is left out with a note, never diagnosed: what the run says cannot be what happened.
PER_TOKEN = ("tpot", "itl")  # gaps between a request's tokens: none exist where each request yields one
ORDERED = ("ttft", "tpot", "itl", "e2e")  # latency families whose p99 cannot lie below their median


def _contradictions(run: dict[str, Any]) -> list[tuple[list[str], str]]:
    """The keys of `run` its own numbers contradict, each group with the sentence saying why."""
    out: list[tuple[list[str], str]] = []
    generated, completed = run.get("output_tokens"), run.get("completed")
    if isinstance(generated, float) and isinstance(completed, float) and completed > 0 and generated <= completed:
        keys = [k for k in run if k.rpartition("_")[0] in PER_TOKEN]
        if keys:
            out.append((keys, f"{generated:g} tokens generated for {completed:g} requests, at most one each, "
                              "so no request had a gap between tokens to time"))  # fmt: skip
    for family in ORDERED:
        median, p99 = run.get(f"{family}_median"), run.get(f"{family}_p99")
        if isinstance(median, float) and isinstance(p99, float) and p99 < median:
            keys = [k for k in run if k.rpartition("_")[0] == family]
            out.append((keys, f"its p99 {p99:g} ms is below its median {median:g} ms, which no set of requests has"))
    return out


def checked(bench: Any, text: str) -> Any:
    """`bench` with each run's numbers within their ranges, and none its own numbers contradict (the
    rest left out, each with a note)."""
    for run in bench.runs:
        origins = run.pop("_from", {})
        start = run.pop("_start", 0)
        of = f"{run['label']}: " if len(bench.runs) > 1 and run.get("label") else ""  # which run a note is of
        for key in [k for k in run if k not in FLAGS]:
            limits = field_range(key)
            value = run[key]
            if limits is None or not isinstance(value, float):
                continue
            used, problem = limits.read(value)
            if problem is None:
                run[key] = used
                continue
            where, label = _where(bench.source, text, start, origins.get(key))
            said = f"{label} {problem}"
            if limits.invalid == "refuse":
                raise CatalogError(where, [said])
            del run[key]
            if key == "request_rate":
                run.pop("unbounded", None)
            bench.notes.append(f"left out: {of}{key}: {where}: {said}")
        for keys, why in _contradictions(run):
            for key in keys:
                run.pop(key, None)
            family = sorted({k.rpartition("_")[0].upper() for k in keys})
            bench.notes.append(f"left out: {of}{' and '.join(family)}: {bench.source}: {why}")
    return bench


def _where(source: str, text: str, start: int, origin: Any) -> tuple[str, str]:
    """`FILE:LINE` and the key as the file writes it, from where a value came (`bench._put`)."""
    if origin and origin[0] == "line":
        return f"{source}:{origin[1]}", origin[2]
    if origin and origin[0] == "key":
        keys = origin[1]
        at = start
        for key in keys:
            found = text.find(f'"{key}"', at)
            if found < 0:
                break
            at = found
        else:
            return f"{source}:{text.count(chr(10), 0, at) + 1}", ".".join(keys)
        return source, ".".join(keys)
    return source, "a value"
