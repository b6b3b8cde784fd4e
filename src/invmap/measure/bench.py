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
- GuideLLM: `benchmarks.json` (`benchmarks[].metrics.{time_to_first_token_ms, inter_token_latency_ms,
  request_latency, request_concurrency, ...}.successful.{mean, median, min, max, percentiles}` and
  `request_totals`) (GuideLLM's schemas: GenerativeMetrics, StatusDistributionSummary, Percentiles).

GenAI-Perf's `inter_token_latency` and GuideLLM's `inter_token_latency_ms` are per-request averages of
the time between tokens after the first (what vLLM calls TPOT), so they are read as TPOT: neither file
keeps the per-token gaps an ITL tail needs.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from invmap.errors import CatalogError

MAX_BYTES = 256 * 2**20
MARK = "Serving Benchmark Result"
STATS = ("mean", "median", "p99", "min", "max")
_LATENCY = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2e", "E2E Latency": "e2e"}


class Bench:
    def __init__(self, source: str, tool: str, runs: list[dict[str, Any]]) -> None:
        self.source = source
        self.tool = tool
        self.runs = runs


def read_path(path: str) -> Bench:
    try:
        with open(path, "rb") as stream:
            data = stream.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise CatalogError(path, ["no such file"]) from None
    except IsADirectoryError:
        raise CatalogError(path, ["is a folder, not a benchmark result"]) from None
    except PermissionError:
        raise CatalogError(path, ["cannot be read (permission denied)"]) from None
    except OSError as exc:
        raise CatalogError(path, [f"cannot be read: {exc.strerror or exc}"]) from None
    if len(data) > MAX_BYTES:
        raise CatalogError(path, ["is larger than 256 MiB; not a benchmark result invmap reads"])
    return read(data, path)


def read(data: bytes, source: str) -> Bench:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CatalogError(source, [f"line {line} is not UTF-8 text; not a benchmark result"]) from None
    stripped = text.lstrip()
    if MARK in text:
        return _summary(text, source)
    if stripped.startswith("Metric,"):
        return _genai_csv(text, source)
    if stripped.startswith(("{", "[")):
        return _json(text, source)
    first = next((n for n, line in enumerate(text.splitlines(), 1) if line.strip()), 1)
    raise CatalogError(
        source,
        [
            f"line {first} is not a benchmark result invmap reads (vllm bench serve or SGLang bench_serving JSON "
            "or their 'Serving Benchmark Result' summary, GenAI-Perf JSON or CSV, GuideLLM JSON)"
        ],
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        raw = value.strip().replace(",", "")
        if raw.lower() in ("inf", "+inf", "infinity"):
            return math.inf
        try:
            return float(raw)
        except ValueError:
            return None
    return None


def _rate(run: dict[str, Any], value: Any) -> None:
    rate = _number(value)
    if rate is not None:
        run["request_rate"] = rate
        run["unbounded"] = math.isinf(rate)


# --- vLLM and SGLang ---------------------------------------------------------------------------


def _serving_json(obj: dict[str, Any], tool: str) -> dict[str, Any]:
    run: dict[str, Any] = {}
    for key in ("completed", "failed", "max_concurrency", "concurrency", "duration"):
        value = _number(obj.get(key))
        if value is not None and not math.isinf(value):
            run[key] = value
    _rate(run, obj.get("request_rate"))
    run["peak_concurrency"] = _number(obj.get("max_concurrent_requests"))  # vLLM: the most in flight at once
    run["input_tokens"] = _number(obj.get("total_input_tokens"))
    run["output_tokens"] = _number(obj.get("total_output_tokens"))
    run["request_throughput"] = _number(obj.get("request_throughput"))
    run["output_throughput"] = _number(obj.get("output_throughput"))
    for short, names in (("ttft", ("ttft",)), ("tpot", ("tpot",)), ("itl", ("itl",)), ("e2e", ("e2el", "e2e_latency"))):
        for name in names:
            for stat in STATS:
                value = _number(obj.get(f"{stat}_{name}_ms"))
                if value is not None and not math.isinf(value):
                    run[f"{short}_{stat}"] = value
    ttfts = obj.get("ttfts")
    if isinstance(ttfts, list):  # per request, in seconds (vLLM --save-detailed; SGLang's output details)
        errors = obj.get("errors") if isinstance(obj.get("errors"), list) else []
        good = [
            _number(t)
            for i, t in enumerate(ttfts)
            if _number(t) and not (i < len(errors) and errors[i])  # a failed request's TTFT is 0
        ]
        good = [t for t in good if t is not None and t > 0 and not math.isinf(t)]
        if good:
            run["ttft_min"] = min(good) * 1000
    acceptance = _number(obj.get("spec_decode_acceptance_rate"))  # vLLM: a percentage
    if acceptance is not None and not math.isinf(acceptance):
        run["spec_acceptance"] = acceptance / 100
    return {k: v for k, v in run.items() if v is not None}


def _summary(text: str, source: str) -> Bench:
    """Each 'Serving Benchmark Result' block (a sweep's log holds one a run), with the lines above it
    that name the rate."""
    lines = text.splitlines()
    starts = [n for n, line in enumerate(lines) if MARK in line]
    runs, sglang = [], False
    for k, start in enumerate(starts):
        run: dict[str, Any] = {}
        for line in lines[start + 1 : starts[k + 1] if k + 1 < len(starts) else len(lines)]:
            body = line.strip().lstrip("#").strip()  # summaries pasted into scripts keep a leading '#'
            if body.startswith("=" * 10):
                break
            label, colon, value = body.rpartition(":")
            if not colon:
                continue
            label = label.strip()
            if label == "Backend":
                sglang = True
            _summary_line(run, label, value.strip())
        if "request_rate" not in run:  # vLLM prints the rate above the block (or, when bounded, inside it)
            for line in lines[starts[k - 1] + 1 if k else 0 : start]:
                body = line.strip().lstrip("#").strip()
                if body.startswith("Traffic request rate:"):
                    _rate(run, body.partition(":")[2])
            if "request_rate" not in run and not sglang and "completed" in run and "failed" in run:
                run["request_rate"], run["unbounded"] = math.inf, True  # vLLM prints the rate only when finite
        if not any(k.endswith(("_mean", "_median")) for k in run) and "completed" not in run:
            raise CatalogError(source, [f"line {start + 1} opens a '{MARK}' block that holds no result lines"])
        runs.append(run)
    if len(runs) > 1:
        for n, run in enumerate(runs, 1):
            run["label"] = f"run {n}"
    tool = "SGLang bench_serving summary" if sglang else "vllm bench serve summary"
    return Bench(source, tool, runs)


def _summary_line(run: dict[str, Any], label: str, value: str) -> None:
    number = _number(value)
    simple = {
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
    if label in simple:
        if number is not None and not math.isinf(number):
            run[simple[label]] = number
        return
    if label in ("Request rate configured (RPS)", "Traffic request rate"):
        _rate(run, value)
        return
    if label.endswith("(ms)"):
        words = label[: -len("(ms)")].strip()
        stat, _, metric = words.partition(" ")
        short = _LATENCY.get(metric.strip())
        stat = stat.lower()
        if short and number is not None and not math.isinf(number):
            if stat in ("mean", "median", "min", "max"):
                run[f"{short}_{stat}"] = number
            elif stat.startswith("p"):
                run[f"{short}_{stat}"] = number


# --- GenAI-Perf --------------------------------------------------------------------------------

_GENAI = {
    "time_to_first_token": "ttft",
    "inter_token_latency": "tpot",  # a per-request average after the first token
    "request_latency": "e2e",
    "output_sequence_length": "output_len",
    "input_sequence_length": "input_len",
}
_UNIT = {"ms": 1.0, "s": 1000.0, "us": 0.001, "ns": 1e-6}


def _genai_json(obj: dict[str, Any]) -> dict[str, Any]:
    run: dict[str, Any] = {}
    for name, short in _GENAI.items():
        stats = obj.get(name)
        if not isinstance(stats, dict):
            continue
        scale = _UNIT.get(str(stats.get("unit", "ms")).lower(), 1.0) if short in ("ttft", "tpot", "e2e") else 1.0
        for stat, value in stats.items():
            number = _number(value)
            if number is None or math.isinf(number) or stat == "unit":
                continue
            stat = {"avg": "mean", "p50": "median"}.get(stat, stat)
            run[f"{short}_{stat}"] = number * scale
            if stat == "median":
                run[f"{short}_p50"] = number * scale
    for name, key in (("request_throughput", "request_throughput"), ("output_token_throughput", "output_throughput")):
        stats = obj.get(name)
        if isinstance(stats, dict) and _number(stats.get("avg")) is not None:
            run[key] = _number(stats.get("avg"))
    config = obj.get("input_config")
    concurrency = _find(config, "concurrency")
    if _number(concurrency) is not None:
        run["max_concurrency"] = _number(concurrency)
    rate = _find(config, "request_rate")
    if rate is not None:
        _rate(run, rate)
    return run


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
    header: list[str] = []
    for n, row in enumerate(csv.reader(io.StringIO(text)), 1):
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
        if header[1:] == ["Value"]:
            stats[name] = {"unit": unit, "avg": values.get("Value")}
        else:
            stats[name] = {"unit": unit or "ms", **values}
    run = _genai_json(stats)
    if not run:
        raise CatalogError(source, ["line 1 opens a CSV with none of GenAI-Perf's metrics (Time To First Token, ...)"])
    return Bench(source, "GenAI-Perf CSV export", [run])


# --- GuideLLM ----------------------------------------------------------------------------------

_GUIDE = {
    "time_to_first_token_ms": ("ttft", 1.0),
    "inter_token_latency_ms": ("tpot", 1.0),  # decode-only time per output token, per request
    "request_latency": ("e2e", 1000.0),  # seconds
}


def _guidellm(obj: dict[str, Any]) -> list[dict[str, Any]]:
    runs = []
    for n, bench in enumerate(obj.get("benchmarks") or [], 1):
        if not isinstance(bench, dict):
            continue
        metrics = bench.get("metrics") if isinstance(bench.get("metrics"), dict) else {}
        run: dict[str, Any] = {}
        for name, (short, scale) in _GUIDE.items():
            dist = metrics.get(name, {})
            good = dist.get("successful") if isinstance(dist, dict) else None
            if not isinstance(good, dict):
                continue
            for stat in ("mean", "median", "min", "max"):
                value = _number(good.get(stat))
                if value is not None and not math.isinf(value):
                    run[f"{short}_{stat}"] = value * scale
            percentiles = good.get("percentiles") if isinstance(good.get("percentiles"), dict) else {}
            for stat in ("p50", "p90", "p95", "p99"):
                value = _number(percentiles.get(stat))
                if value is not None and not math.isinf(value):
                    run[f"{short}_{stat}"] = value * scale
        concurrency = metrics.get("request_concurrency", {})
        good = concurrency.get("successful") if isinstance(concurrency, dict) else None
        if isinstance(good, dict) and _number(good.get("mean")) is not None:
            run["concurrency"] = _number(good.get("mean"))
        totals = metrics.get("request_totals") or bench.get("request_totals") or {}
        if isinstance(totals, dict):
            if _number(totals.get("successful")) is not None:
                run["completed"] = _number(totals.get("successful"))
            if _number(totals.get("errored")) is not None:
                run["failed"] = _number(totals.get("errored"))
        strategy = _find(bench.get("config"), "strategy") or _find(bench.get("args"), "strategy") or {}
        kind = strategy.get("type_") if isinstance(strategy, dict) else None
        if kind:
            run["unbounded"] = kind == "throughput"
            if kind == "synchronous":
                run["max_concurrency"] = 1.0
            elif _number(strategy.get("streams")) is not None:
                run["max_concurrency"] = _number(strategy.get("streams"))
            rate = _number(strategy.get("rate"))
            run["label"] = f"benchmark {n} ({kind}{f' {rate:g} req/s' if rate else ''})"
        else:
            run["label"] = f"benchmark {n}"
        runs.append(run)
    return runs


# --- JSON dispatch -----------------------------------------------------------------------------


def _json(text: str, source: str) -> Bench:
    try:
        objs = [json.loads(text)]
    except json.JSONDecodeError as first:
        objs = []  # JSON lines (SGLang appends one object per run)
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                objs.append(json.loads(line))
            except json.JSONDecodeError:
                where = first if not objs else None
                if where is not None:
                    raise CatalogError(
                        source, [f"line {where.lineno} column {where.colno} is not JSON ({where.msg})"]
                    ) from None
                raise CatalogError(
                    source, [f"line {n} is not a JSON object (a JSON-lines result has one a line)"]
                ) from None
    except RecursionError:
        raise CatalogError(source, ["is nested too deeply to be a benchmark result"]) from None
    if len(objs) == 1 and isinstance(objs[0], list):
        objs = objs[0]
    if not objs or not all(isinstance(o, dict) for o in objs):
        raise CatalogError(source, ["holds JSON that is not an object (a benchmark result is one)"])
    first = objs[0]
    if "benchmarks" in first:
        runs = _guidellm(first)
        if not runs:
            raise CatalogError(source, ["key 'benchmarks' holds no benchmark (a GuideLLM report lists them)"])
        return Bench(source, "GuideLLM report", runs)
    if "time_to_first_token" in first or "request_latency" in first:
        return Bench(source, "GenAI-Perf JSON export", [_genai_json(first)])
    if "completed" in first:
        sglang = any("e2e_latency_ms" in k for k in first) or "accept_length" in first
        tool = "SGLang bench_serving result" if sglang else "vllm bench serve result"
        runs = [_serving_json(o, tool) for o in objs]
        if len(runs) > 1:
            for n, run in enumerate(runs, 1):
                run["label"] = f"run {n}"
        return Bench(source, tool, runs)
    raise CatalogError(
        source,
        [
            "is JSON but not a benchmark result invmap reads: no key 'completed' (vllm bench serve, SGLang "
            "bench_serving), 'benchmarks' (GuideLLM) or 'time_to_first_token' (GenAI-Perf)"
        ],
    )
