"""Reading a benchmark's results into runs of common signals (latencies in milliseconds).

Formats, as their tools write them (read in the tools' own code):
- `vllm bench serve`: the `--save-result` JSON (`completed`, `failed`, `max_concurrency`, `request_rate`
  "inf" or a number, `mean_ttft_ms`, `median_ttft_ms`, `p99_ttft_ms`, ... for ttft, tpot, itl and e2el;
  `ttfts` per request with `--save-detailed`) and its printed "Serving Benchmark Result" block
  (vllm-project/vllm: vllm/benchmarks/serve.py);
- SGLang `bench_serving`: one JSON object a line in its `--output-file` (`completed`, `request_rate`,
  `max_concurrency`, `concurrency`, `mean_e2e_latency_ms`, ... `p99_itl_ms`, `accept_length`) and its printed
  block (sgl-project/sglang: python/sglang/bench_serving.py);
- GenAI-Perf: `*_genai_perf.json` (per metric `{unit, avg, min, max, p99, ..., p25}`, and `input_config`)
  and `*_genai_perf.csv` ("Metric,avg,min,max,p99,p95,p90,p75,p50,p25" rows, then "Metric,Value" rows)
  (triton-inference-server/perf_analyzer: genai-perf/genai_perf/export_data/, metrics/llm_metrics.py);
- `vllm bench throughput` (formerly benchmarks/benchmark_throughput.py), an offline run: its one
  printed line `Throughput: R requests/s, T tokens/s` (T counts prompt and output tokens: read at
  vllm-project/vllm@018efffdeb96c6d943927720528be877e0fe3f23:benchmarks/benchmark_throughput.py), since
  `..., T total tokens/s, O output tokens/s` with `Total num prompt tokens:` and `Total num output
  tokens:` lines after it (@1a91bc2dc0dd379cb803bfcadd8a312e0da5d45f:vllm/benchmarks/throughput.py), each
  such line a run, a Markdown list marker and a label before it (`Before: Throughput: ...`, `*  base(v0.2.1):
  Throughput: ...`, as pasted) allowed;
- GuideLLM: `benchmarks.json` (`benchmarks[].metrics.{time_to_first_token_ms, inter_token_latency_ms,
  request_latency, request_concurrency, ...}.successful.{mean, median, min, max, percentiles}` and
  `request_totals`) (GuideLLM's schemas: GenerativeMetrics, StatusDistributionSummary, Percentiles).

GenAI-Perf's `inter_token_latency` and GuideLLM's `inter_token_latency_ms` are per-request averages of
the time between tokens after the first (what vLLM calls TPOT), so they are read as TPOT: neither file
keeps the per-token gaps an ITL tail needs.

Every number a run holds has a declared range (benchfields.py: `FIELDS`, `FAMILIES`): request counts
are whole numbers from 0 (outside, the file is refused, exit 3), latencies from 0 ms, a fraction 0 to 1;
a value outside its range is left out with a note naming the file, line, key and value. Every value is
put through `_put`, which records where in the file it came from.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from invmap.errors import CatalogError
from invmap.inputfile import STREAM_HINT, read_capped
from invmap.measure.benchfields import checked
from invmap.measure.pasted import COMMANDS, SECTION, command_options, cut_short
from invmap.reading import utf8_text

MAX_BYTES = 256 * 2**20
MARK = "Serving Benchmark Result"
TOO_LONG = "holds an integer of more than 4,300 digits, which is no benchmark's number"
FIRST_TOKEN = 1e-6  # seconds: a first token faster than a microsecond is no measurement (a failed request's 0)
STATS = ("mean", "median", "p99", "min", "max")
_LATENCY = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2e", "E2E Latency": "e2e"}


class Bench:
    def __init__(self, source: str, tool: str, runs: list[dict[str, Any]]) -> None:
        self.source = source
        self.tool = tool
        self.runs = runs
        self.notes: list[str] = []  # numbers left out, each with where it was
        self.cut: list[str] = []  # what a block cut short lacks, said once


def read_path(path: str) -> Bench:
    data = read_capped(
        path,
        MAX_BYTES,
        "is a folder, not a benchmark result",
        "is larger than 256 MiB; not a benchmark result invmap reads",
        hint=STREAM_HINT,
        fifo=True,
    )
    return read(data, path)


def read(data: bytes, source: str) -> Bench:
    text = utf8_text(data, source, "line {line} is not UTF-8 text; not a benchmark result")
    return checked(_parsed(text, source), text)


def _parsed(text: str, source: str) -> Bench:
    stripped = text.lstrip()
    if MARK in text or SECTION.search(text) or _headless_start(text.splitlines()) is not None:
        return _summary(text, source)
    if stripped.startswith("Metric,"):
        return _genai_csv(text, source)
    if any(OFFLINE.match(line) for line in text.splitlines()):
        return _offline(text, source)
    if stripped.startswith(("{", "[")):
        return _json(text, source)
    first = next((n for n, line in enumerate(text.splitlines(), 1) if line.strip()), 1)
    raise CatalogError(
        source,
        [
            f"line {first} is not a benchmark result invmap reads (vllm bench serve or SGLang bench_serving JSON "
            "or their 'Serving Benchmark Result' summary, vllm bench throughput's 'Throughput:' line, GenAI-Perf JSON "
            "or CSV, GuideLLM JSON)"
        ],
    )


def _number(value: Any) -> float | None:
    """A number as a file writes it (`1,024`, `"inf"`, `NaN`, a 400-digit integer: infinite), or None
    where it is no number at all; its range (benchcheck.py) decides whether it can be used."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        raw = value.strip().replace(",", "")
        if raw.lower() in ("inf", "+inf", "infinity"):
            return math.inf
        try:
            return float(raw)
        except ValueError:
            return None
    return None


def _put(run: dict[str, Any], signal: str, value: float | None, origin: Any) -> None:
    """`value` into `run` under `signal`, with where it came from: a line number, or the keys that
    lead to it in a JSON document (benchcheck.py finds their line when a value must be named)."""
    if value is None:
        return
    run[signal] = value
    run.setdefault("_from", {})[signal] = origin


def _rate(run: dict[str, Any], value: Any, origin: Any) -> None:
    rate = _number(value)
    if rate is not None:
        _put(run, "request_rate", rate, origin)
        run["unbounded"] = math.isinf(rate) and rate > 0


# --- a format's numbers, declared -------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """One number of a format: the keys leading to it, the signal it fills (`x scale / per`, to
    milliseconds or a fraction); `keys`, the keys as the file writes them where `path` names a
    joined object (GuideLLM's request totals)."""

    path: tuple[str, ...]
    signal: str
    scale: float = 1.0
    per: float = 1.0
    keys: tuple[str, ...] = ()


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    """The value under `path` in nested objects (None where a step is missing or not an object)."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _fill(run: dict[str, Any], obj: Any, fields: tuple[Field, ...]) -> None:
    """Every declared number `obj` holds, into `run` under its signal."""
    for one in fields:
        value = _number(_at(obj, one.path))
        if value is not None:
            _put(run, one.signal, value * one.scale / one.per, ("key", one.keys or one.path))


# --- vLLM and SGLang ---------------------------------------------------------------------------

SERVING_COUNTS = tuple(
    Field((key,), key) for key in ("completed", "failed", "max_concurrency", "concurrency", "duration")
)
SERVING_FIGURES = (
    Field(("max_concurrent_requests",), "peak_concurrency"),  # vLLM: the most in flight at once
    Field(("total_input_tokens",), "input_tokens"),
    Field(("total_output_tokens",), "output_tokens"),
    Field(("request_throughput",), "request_throughput"),
    Field(("output_throughput",), "output_throughput"),
    *(
        Field((f"{stat}_{name}_ms",), f"{short}_{stat}")
        for short, names in (
            ("ttft", ("ttft",)),
            ("tpot", ("tpot",)),
            ("itl", ("itl",)),
            ("e2e", ("e2el", "e2e_latency")),
        )
        for name in names
        for stat in STATS
    ),
)
SERVING_ACCEPTANCE = (
    Field(("spec_decode_acceptance_rate",), "spec_acceptance", per=100),  # vLLM: a percentage
    Field(("spec_decode_acceptance_length",), "spec_length"),
    Field(("accept_length",), "spec_length"),  # SGLang
)


def _serving_json(obj: dict[str, Any], tool: str) -> dict[str, Any]:
    run: dict[str, Any] = {}
    _fill(run, obj, SERVING_COUNTS)
    _rate(run, obj.get("request_rate"), ("key", ("request_rate",)))
    _fill(run, obj, SERVING_FIGURES)
    fastest = _fastest_ttft(obj)
    if fastest is not None:
        _put(run, "ttft_min", fastest * 1000, ("key", ("ttfts",)))
    _fill(run, obj, SERVING_ACCEPTANCE)
    return run


def _fastest_ttft(obj: dict[str, Any]) -> float | None:
    """The fastest first token of the requests that succeeded, in seconds (vLLM --save-detailed;
    SGLang's output details), from `ttfts` per request."""
    ttfts = obj.get("ttfts")
    if not isinstance(ttfts, list):
        return None
    errors = obj.get("errors") if isinstance(obj.get("errors"), list) else []
    good = [
        _number(t)
        for i, t in enumerate(ttfts)
        if _number(t) and not (i < len(errors) and errors[i])  # a failed request's TTFT is 0
    ]
    good = [t for t in good if t is not None and FIRST_TOKEN <= t and math.isfinite(t)]
    return min(good) if good else None


SUMMARY_LABELS = {
    "Successful requests": "completed",
    "Failed requests": "failed",
    "Maximum request concurrency": "max_concurrency",
    "Max request concurrency": "max_concurrency",
    "Benchmark duration (s)": "duration",
    "Total input tokens": "input_tokens",
    "Total generated tokens": "output_tokens",
    "Request throughput (req/s)": "request_throughput",
    "Output token throughput (tok/s)": "output_throughput",
    "Concurrency": "concurrency",
    "Peak concurrent requests": "peak_concurrency",
}
RATE_LABELS = ("Request rate configured (RPS)", "Traffic request rate")
SPEC_LABELS = {"Acceptance rate (%)": ("spec_acceptance", 0.01), "Acceptance length": ("spec_length", 1.0),
               "Accept length": ("spec_length", 1.0)}  # fmt: skip


# The summary's own result lines: two of them, with no title or section rule, are a block whose top
# was cut off in the paste ("Successful requests: 300" ... "Request throughput (req/s): 3.97").
HEADLESS_LABELS = (
    "Successful requests",
    "Benchmark duration (s)",
    "Request throughput (req/s)",
    "Total generated tokens",
)


def _headless_start(lines: list[str]) -> int | None:
    """The line of the first result line of a summary pasted without its title, where at least two
    of the summary's own result lines are there; else None."""
    found: dict[str, int] = {}
    for n, line in enumerate(lines):
        label, colon, _ = _body(line).partition(":")
        if colon and label.strip() in HEADLESS_LABELS:
            found.setdefault(label.strip(), n)
    return min(found.values()) if len(found) >= 2 else None


def _summary(text: str, source: str) -> Bench:
    """Each 'Serving Benchmark Result' block (a sweep's log holds one a run), with the lines above it
    that name the rate."""
    lines = text.splitlines()
    starts = [n for n, line in enumerate(lines) if MARK in line]
    if not starts:  # a paste cut above the title: one block from its first section rule or result line
        rule = next((n for n, line in enumerate(lines) if SECTION.match(line)), None)
        headless = _headless_start(lines)
        starts = [min(n for n in (rule, headless) if n is not None) - 1]
    runs, sglang = [], False
    notes: list[str] = []
    for k, start in enumerate(starts):
        run, backend = _summary_block(
            lines[start + 1 : starts[k + 1] if k + 1 < len(starts) else len(lines)], start + 2
        )
        sglang = sglang or backend
        above = starts[k - 1] + 1 if k else 0
        _command_above(run, lines[above : max(start, 0)], above + 1)
        if "request_rate" not in run:  # vLLM prints the rate above the block (or, when bounded, inside it)
            _rate_above(run, lines[above : max(start, 0)], sglang, above + 1)
        _sent_not_done(run)
        notes += cut_short(run, lines, start, starts[k + 1] if k + 1 < len(starts) else len(lines), len(starts) > 1, k)
        if not any(k.endswith(("_mean", "_median")) for k in run) and not {"completed", "spec_acceptance"} & set(run):
            raise CatalogError(source, [f"line {start + 1} opens a '{MARK}' block that holds no result lines"])
        runs.append(run)
    _name_runs(runs)
    tool = "SGLang bench_serving summary" if sglang else "vllm bench serve summary"
    bench = Bench(source, tool, runs)
    bench.cut.extend(notes)
    return bench


def _command_above(run: dict[str, Any], lines: list[str], first: int) -> None:
    """The options of the benchmark command pasted above a block (its `\\` continuations joined): the
    prompts sent, the rate, the concurrency, the random lengths, the dataset. The block's own lines
    win where both say (they are filled first); with no --request-rate, vLLM's default sends every
    request at once (`inf`)."""
    at = next((i for i in range(len(lines) - 1, -1, -1) if COMMANDS.search(lines[i])), None)
    if at is None:
        return
    joined, given = command_options(lines, at)
    origin = ("line", first + at, "the command line")
    run["_command"] = " ".join(f"{k} {v}" for k, v in given.items())
    for key, value in given.items():
        if key == "dataset":
            run.setdefault("dataset", value[:80])
        elif key == "request_rate":
            if "request_rate" not in run:
                _rate(run, value, origin)
        elif key not in run:
            _put(run, key, _number(value), origin)
    vllm = re.search(r"vllm bench serve|benchmark_serving\.py", joined)
    if vllm and "request_rate" not in given and "request_rate" not in run:
        # its default (vllm/benchmarks/serve.py: "--request-rate ... Default inf"): every request at once
        run["request_rate"], run["unbounded"] = math.inf, True


def _sent_not_done(run: dict[str, Any]) -> None:
    """Requests sent (the command's --num-prompts) less those that succeeded are the failed ones,
    where the block does not print a failed count."""
    sent, done = run.get("num_prompts"), run.get("completed")
    if "failed" not in run and isinstance(sent, float) and isinstance(done, float) and sent >= done:
        _put(run, "failed", sent - done, run.get("_from", {}).get("num_prompts"))
        run["failed_from_sent"] = True


def _body(line: str) -> str:
    return line.strip().lstrip("#").strip()  # summaries pasted into scripts keep a leading '#'


def _summary_block(lines: list[str], first: int) -> tuple[dict[str, Any], bool]:
    """One block's run (its first line is line `first` of the file), and whether it names a backend
    (SGLang's summary does)."""
    run: dict[str, Any] = {}
    backend = False
    for n, line in enumerate(lines, first):
        body = _body(line)
        if body.startswith("=" * 10):
            break
        label, colon, value = body.rpartition(":")
        if colon:
            backend = backend or label.strip() == "Backend"
            _summary_line(run, label.strip(), value.strip(), ("line", n, label.strip()))
    return run, backend


def _rate_above(run: dict[str, Any], lines: list[str], sglang: bool, first: int) -> None:
    for n, line in enumerate(lines, first):
        body = _body(line)
        if body.startswith("Traffic request rate:"):
            _rate(run, body.partition(":")[2], ("line", n, "Traffic request rate"))
    if "request_rate" not in run and not sglang and "completed" in run and "failed" in run:
        run["request_rate"], run["unbounded"] = math.inf, True  # vLLM prints the rate only when finite


def _summary_line(run: dict[str, Any], label: str, value: str, origin: Any) -> None:
    number = _number(value)
    if label in RATE_LABELS:
        _rate(run, value, origin)
        return
    if number is None:
        return
    if label in SPEC_LABELS:
        key, scale = SPEC_LABELS[label]
        _put(run, key, number * scale, origin)
    elif label.startswith("Position ") and label[len("Position ") :].isdigit():
        _put(run, f"spec_position_{label[len('Position ') :]}", number / 100, origin)
    elif label in SUMMARY_LABELS:
        _put(run, SUMMARY_LABELS[label], number, origin)
    elif label.endswith("(ms)"):
        stat, _, metric = label[: -len("(ms)")].strip().partition(" ")
        short = _LATENCY.get(metric.strip())
        stat = stat.lower()
        if short and (stat in ("mean", "median", "min", "max") or stat.startswith("p")):
            _put(run, f"{short}_{stat}", number, origin)


def _name_runs(runs: list[dict[str, Any]]) -> None:
    if len(runs) > 1:
        for n, run in enumerate(runs, 1):
            run["label"] = f"run {n}"


# --- vllm bench throughput (offline) ---------------------------------------------------------------

NUM = r"(\d[\d,]*(?:\.\d+)?)"
OFFLINE = re.compile(  # a list marker and a label ("*  base(v0.2.1): ") if pasted so, then the benchmark's line
    rf"^\s*(?:[*+-]\s+)?(?:[A-Za-z][\w .()+-]{{0,40}}:\s*)?Throughput:\s*{NUM} requests/s,\s*{NUM} (?:total )?tokens/s"
    rf"(?:,\s*{NUM} output tokens/s)?\s*$"
)
OFFLINE_TOKENS = {"Total num prompt tokens": "input_tokens", "Total num output tokens": "output_tokens"}


def _offline(text: str, source: str) -> Bench:
    """Each `Throughput:` line of an offline run is a run: requests a second, tokens a second (prompt
    and output), output tokens a second where printed, and the token totals printed under it."""
    runs: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        found = OFFLINE.match(line)
        if found:
            run: dict[str, Any] = {}
            for value, signal in zip(found.groups(), ("request_throughput", "total_throughput", "output_throughput")):
                _put(run, signal, _number(value), ("line", n, "Throughput"))
            runs.append(run)
            continue
        label, colon, value = _body(line).partition(":")
        if runs and colon and label.strip() in OFFLINE_TOKENS:
            _put(runs[-1], OFFLINE_TOKENS[label.strip()], _number(value), ("line", n, label.strip()))
    _name_runs(runs)
    return Bench(source, "vllm bench throughput", runs)


# --- GenAI-Perf --------------------------------------------------------------------------------

_GENAI = {
    "time_to_first_token": "ttft",
    "inter_token_latency": "tpot",  # a per-request average after the first token
    "request_latency": "e2e",
    "output_sequence_length": "output_len",
    "input_sequence_length": "input_len",
}
_UNIT = {"ms": 1.0, "s": 1000.0, "us": 0.001, "ns": 1e-6}
GENAI_FIELDS = (
    Field(("request_throughput", "avg"), "request_throughput"),
    Field(("output_token_throughput", "avg"), "output_throughput"),
)


def _genai_json(obj: dict[str, Any], rows: dict[str, int] | None = None) -> dict[str, Any]:
    """A GenAI-Perf run from its JSON export (or its CSV's rows, `rows` naming each metric's line)."""
    run: dict[str, Any] = {}
    for name, short in _GENAI.items():
        stats = obj.get(name)
        if isinstance(stats, dict):
            _genai_stats(run, short, stats, name, rows)
    _fill(run, obj, GENAI_FIELDS)
    config = obj.get("input_config")
    concurrency = _number(_find(config, "concurrency"))
    if concurrency is not None:
        _put(run, "max_concurrency", concurrency, ("key", ("input_config", "concurrency")))
    rate = _find(config, "request_rate")
    if rate is not None:
        _rate(run, rate, ("key", ("input_config", "request_rate")))
    return run


def _genai_stats(
    run: dict[str, Any], short: str, stats: dict[str, Any], name: str, rows: dict[str, int] | None
) -> None:
    """One metric's `{unit, avg, min, max, p99, ...}`, latencies to milliseconds."""
    scale = _UNIT.get(str(stats.get("unit", "ms")).lower(), 1.0) if short in ("ttft", "tpot", "e2e") else 1.0
    for stat, value in stats.items():
        number = _number(value)
        if number is None or stat == "unit":
            continue
        origin = ("line", rows[name], f"{name} {stat}") if rows and name in rows else ("key", (name, stat))
        stat = {"avg": "mean", "p50": "median"}.get(stat, stat)
        _put(run, f"{short}_{stat}", number * scale, origin)
        if stat == "median":
            _put(run, f"{short}_p50", number * scale, origin)


def _find(obj: Any, key: str, depth: int = 0) -> Any:
    """The first value under `key` in nested dicts (newer GenAI-Perf nests its configuration)."""
    if depth > 8 or not isinstance(obj, dict):
        return None
    if key in obj and obj[key] is not None:
        return obj[key]
    for value in obj.values():
        found = _find(value, key, depth + 1)
        if found is not None:
            return found
    return None


def _genai_csv(text: str, source: str) -> Bench:
    stats: dict[str, dict[str, Any]] = {}
    rows: dict[str, int] = {}  # metric -> the line of its row
    header: list[str] = []
    for n, row in _csv_rows(text, source):
        if not row or not any(cell.strip() for cell in row):
            header = []
            continue
        if row[0] == "Metric":
            header = [h.strip() for h in row]
            continue
        if not header:
            raise CatalogError(source, [f"line {n} is not a GenAI-Perf CSV row (no 'Metric,...' header above it)"])
        name = row[0].split("(")[0].strip().lower().replace(" ", "_")
        unit = row[0].partition("(")[2].rstrip(")").strip() if "(" in row[0] else ""
        values = dict(zip(header[1:], row[1:]))
        rows[name] = n
        if header[1:] == ["Value"]:
            stats[name] = {"unit": unit, "avg": values.get("Value")}
        else:
            stats[name] = {"unit": unit or "ms", **values}
    run = _genai_json(stats, rows)
    if not run:
        raise CatalogError(source, ["line 1 opens a CSV with none of GenAI-Perf's metrics (Time To First Token, ...)"])
    return Bench(source, "GenAI-Perf CSV export", [run])


def _csv_rows(text: str, source: str) -> Any:
    """(line, row) for each CSV row; a field past the csv module's limit (128 KiB) or a broken
    quote is the file's problem, named by its line."""
    reader = csv.reader(io.StringIO(text))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CatalogError(source, [f"line {reader.line_num} is not a GenAI-Perf CSV row ({exc})"]) from None
        yield reader.line_num, row


# --- GuideLLM ----------------------------------------------------------------------------------

_GUIDE = {
    "time_to_first_token_ms": ("ttft", 1.0),
    "inter_token_latency_ms": ("tpot", 1.0),  # decode-only time per output token, per request
    "request_latency": ("e2e", 1000.0),  # seconds
}
# Paths inside one benchmark, read as {"metrics": its metrics, "totals": its request totals}.
GUIDELLM_FIELDS = (
    *(
        Field(("metrics", name, "successful", *inside), f"{short}_{inside[-1]}", scale)
        for name, (short, scale) in _GUIDE.items()
        for inside in (
            *((stat,) for stat in ("mean", "median", "min", "max")),
            *(("percentiles", stat) for stat in ("p50", "p90", "p95", "p99")),
        )
    ),
    Field(("metrics", "request_concurrency", "successful", "mean"), "concurrency"),
    Field(("totals", "successful"), "completed", keys=("request_totals", "successful")),
    Field(("totals", "errored"), "failed", keys=("request_totals", "errored")),
)


def _guidellm(obj: dict[str, Any], starts: list[int]) -> list[dict[str, Any]]:
    """Each benchmark's run (`starts`: where each benchmark begins in the text, for naming lines)."""
    benchmarks = obj.get("benchmarks")
    runs: list[dict[str, Any]] = []
    for n, bench in enumerate(benchmarks if isinstance(benchmarks, list) else [], 1):
        if not isinstance(bench, dict):
            continue
        metrics = bench.get("metrics") if isinstance(bench.get("metrics"), dict) else {}
        run: dict[str, Any] = {}
        totals = metrics.get("request_totals") or bench.get("request_totals") or {}
        _fill(run, {"metrics": metrics, "totals": totals if isinstance(totals, dict) else {}}, GUIDELLM_FIELDS)
        _strategy(run, bench, n)
        run["_start"] = starts[n - 1] if n - 1 < len(starts) else 0
        runs.append(run)
    return runs


def _strategy(run: dict[str, Any], bench: dict[str, Any], n: int) -> None:
    """How GuideLLM sent the requests: unbounded (`throughput`), one at a time, or so many streams."""
    strategy = _find(bench.get("config"), "strategy") or _find(bench.get("args"), "strategy") or {}
    kind = strategy.get("type_") if isinstance(strategy, dict) else None
    if not kind:
        run["label"] = f"benchmark {n}"
        return
    run["unbounded"] = kind == "throughput"
    if kind == "synchronous":
        run["max_concurrency"] = 1.0
    else:
        _put(run, "max_concurrency", _number(strategy.get("streams")), ("key", ("strategy", "streams")))
    rate = _number(strategy.get("rate"))
    shown = f" {rate:g} req/s" if rate and math.isfinite(rate) and 0 < rate < 1e12 else ""
    run["label"] = f"benchmark {n} ({str(kind)[:40]}{shown})"


# --- JSON dispatch -----------------------------------------------------------------------------


def _json(text: str, source: str) -> Bench:
    objs, starts = _json_objects(text, source)
    first = objs[0]
    if "benchmarks" in first:
        at = text.find('"benchmarks"')
        runs = _guidellm(first, element_starts(text, at) if at >= 0 else [])
        if not runs:
            raise CatalogError(source, ["key 'benchmarks' holds no benchmark (a GuideLLM report lists them)"])
        return Bench(source, "GuideLLM report", runs)
    if "time_to_first_token" in first or "request_latency" in first:
        return Bench(source, "GenAI-Perf JSON export", [_genai_json(first)])
    if "completed" in first:
        sglang = any("e2e_latency_ms" in k for k in first) or "accept_length" in first
        tool = "SGLang bench_serving result" if sglang else "vllm bench serve result"
        runs = [_serving_json(o, tool) for o in objs]
        for run, start in zip(runs, starts):
            run["_start"] = start
        _name_runs(runs)
        return Bench(source, tool, runs)
    raise CatalogError(
        source,
        [
            "is JSON but not a benchmark result invmap reads: no key 'completed' (vllm bench serve, SGLang "
            "bench_serving), 'benchmarks' (GuideLLM) or 'time_to_first_token' (GenAI-Perf)"
        ],
    )


def _json_objects(text: str, source: str) -> tuple[list[dict[str, Any]], list[int]]:
    """One JSON document's objects (a list of them, or one), or a JSON-lines file's (SGLang appends
    one object per run); and where each begins in the text."""
    try:
        objs, starts = [json.loads(text)], [0]
    except json.JSONDecodeError as first:
        objs, starts = _json_lines(text, source, first)
    except RecursionError:
        raise CatalogError(source, ["is nested too deeply to be a benchmark result"]) from None
    except ValueError:  # an integer of more digits than Python converts (4,300)
        raise CatalogError(source, [TOO_LONG]) from None
    if len(objs) == 1 and isinstance(objs[0], list):
        objs, starts = objs[0], element_starts(text, 0)
    if not objs or not all(isinstance(o, dict) for o in objs):
        raise CatalogError(source, ["holds JSON that is not an object (a benchmark result is one)"])
    return objs, starts


def _json_lines(text: str, source: str, first: json.JSONDecodeError) -> tuple[list[Any], list[int]]:
    objs: list[Any] = []
    starts: list[int] = []
    offset = 0
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        at, offset = offset, offset + len(line)
        if not line.strip():
            continue
        try:
            objs.append(json.loads(line))
            starts.append(at)
        except json.JSONDecodeError:
            if not objs:
                raise CatalogError(
                    source, [f"line {first.lineno} column {first.colno} is not JSON ({first.msg})"]
                ) from None
            raise CatalogError(
                source, [f"line {n} is not a JSON object (a JSON-lines result has one a line)"]
            ) from None
        except RecursionError:
            raise CatalogError(source, [f"line {n} is nested too deeply to be a benchmark result"]) from None
        except ValueError:
            raise CatalogError(source, [f"line {n} {TOO_LONG}"]) from None
    return objs, starts


def element_starts(text: str, at: int) -> list[int]:
    """Where each element of the JSON array that opens at or after `at` begins (strings skipped)."""
    starts: list[int] = []
    i = text.find("[", at)
    if i < 0:
        return starts
    depth, expecting, end = 0, False, len(text)
    while i < end:
        c = text[i]
        if depth == 1 and expecting and not c.isspace() and c not in ",]":
            starts.append(i)
            expecting = False
        if c == '"':
            i += 1
            while i < end and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "[{":
            depth += 1
            expecting = depth == 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                break
        elif c == "," and depth == 1:
            expecting = True
        i += 1
    return starts
