"""triage --bench (issue: metrics): benchmark results in the shapes their tools write them (read in
vllm/benchmarks/serve.py, sglang/bench_serving.py, genai-perf's exporters and GuideLLM's schemas)."""

from __future__ import annotations

import json

import pytest

from conftest import ASSETS
from invmap.measure import rules

BENCH = ASSETS / "bench"


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def bench(cli, path: str):
    result = cli("triage", "--bench", path, "--json")
    assert "Traceback" not in result.err
    return result


def fired(result) -> list[tuple[str, str, str]]:
    assert result.code == 0, result.err
    return [(i["code"], e["rule"], e["text"]) for i in json.loads(result.out) for e in i["evidence"]]


def vllm_result(**over) -> dict:
    """`vllm bench serve --save-result` (keys as serve.py writes them; latencies in ms)."""
    result = {
        "date": "20261201-101500",
        "endpoint_type": "openai",
        "backend": "openai",
        "label": None,
        "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
        "num_prompts": 1000,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": None,
        "duration": 120.5,
        "completed": 1000,
        "failed": 0,
        "total_input_tokens": 1024000,
        "total_output_tokens": 128000,
        "request_throughput": 8.3,
        "request_goodput": None,
        "output_throughput": 1062.2,
        "total_token_throughput": 9560.1,
        "max_output_tokens_per_s": 1900.0,
        "max_concurrent_requests": 1000,
        "mean_ttft_ms": 2500.0,
        "median_ttft_ms": 2400.0,
        "std_ttft_ms": 800.0,
        "p99_ttft_ms": 4100.0,
        "mean_tpot_ms": 30.0,
        "median_tpot_ms": 29.0,
        "std_tpot_ms": 2.0,
        "p99_tpot_ms": 33.0,
        "mean_itl_ms": 30.0,
        "median_itl_ms": 28.0,
        "std_itl_ms": 5.0,
        "p99_itl_ms": 41.0,
        "mean_e2el_ms": 6300.0,
        "median_e2el_ms": 6200.0,
        "std_e2el_ms": 900.0,
        "p99_e2el_ms": 8400.0,
    }
    result.update(over)
    return result


VLLM_SUMMARY = (BENCH / "vllm-summary.txt").read_text(encoding="utf-8")

SGLANG_SUMMARY = (BENCH / "sglang-summary.txt").read_text(encoding="utf-8")


def sglang_line(**over) -> str:
    """One line of bench_serving's --output-file (JSON lines; keys as bench_serving.py writes them)."""
    row = {
        "backend": "sglang",
        "dataset_name": "random",
        "request_rate": 16.0,
        "max_concurrency": None,
        "sharegpt_output_len": None,
        "random_input_len": 1024,
        "random_output_len": 256,
        "random_range_ratio": 0.0,
        "duration": 70.31,
        "completed": 1000,
        "total_input_tokens": 300000,
        "total_output_tokens": 200000,
        "total_output_tokens_retokenized": 199800,
        "request_throughput": 14.22,
        "input_throughput": 4266.8,
        "output_throughput": 2844.5,
        "mean_e2e_latency_ms": 2897.5,
        "median_e2e_latency_ms": 2701.1,
        "std_e2e_latency_ms": 400.0,
        "p99_e2e_latency_ms": 4400.0,
        "mean_ttft_ms": 120.3,
        "median_ttft_ms": 98.2,
        "std_ttft_ms": 60.0,
        "p99_ttft_ms": 640.0,
        "mean_tpot_ms": 14.1,
        "median_tpot_ms": 13.8,
        "std_tpot_ms": 2.0,
        "p99_tpot_ms": 25.4,
        "mean_itl_ms": 14.2,
        "median_itl_ms": 11.0,
        "std_itl_ms": 20.0,
        "p95_itl_ms": 30.1,
        "p99_itl_ms": 162.0,
        "concurrency": 41.2,
        "accept_length": None,
    }
    row.update(over)
    return json.dumps(row)


def genai_json(concurrency: int = 1) -> str:
    """`*_genai_perf.json`: per metric {unit, avg, p99, ..., min, max, std}, then `input_config`."""

    def stats(unit: str, avg: float, spread: float) -> dict:
        return {
            "unit": unit,
            "avg": avg,
            "p99": avg * spread,
            "p95": avg * spread,
            "p90": avg,
            "p75": avg,
            "p50": avg,
            "p25": avg,
            "min": avg * 0.9,
            "max": avg * spread,
            "std": 0.1,
        }

    return json.dumps(
        {
            "request_throughput": {"unit": "requests/sec", "avg": 2.1},
            "request_latency": stats("ms", 470.0, 1.05),
            "time_to_first_token": stats("ms", 40.0, 1.1),
            "inter_token_latency": stats("ms", 12.0, 1.05),
            "output_token_throughput": {"unit": "tokens/sec", "avg": 80.0},
            "output_token_throughput_per_request": stats("tokens/sec", 80.0, 1.0),
            "output_sequence_length": stats("tokens", 38.0, 1.0),
            "input_sequence_length": stats("tokens", 550.0, 1.0),
            "input_config": {"model": ["llama"], "concurrency": concurrency, "streaming": True},
        }
    )


GENAI_CSV = (BENCH / "genai-perf.csv").read_text(encoding="utf-8")


def guidellm(errored: int, kind: str = "throughput") -> str:
    """GuideLLM's benchmarks.json: per benchmark, metrics as {successful, errored, incomplete, total}
    distributions (mean, median, min, max, percentiles), request_totals and the strategy."""

    def dist(mean: float, p99: float, low: float) -> dict:
        summary = {"mean": mean, "median": mean, "min": low, "max": p99, "percentiles": {"p50": mean, "p90": p99,
                                                                                           "p99": p99}}  # fmt: skip
        return {"successful": summary, "errored": summary, "incomplete": summary, "total": summary}

    return json.dumps(
        {
            "benchmarks": [
                {
                    "config": {"strategy": {"type_": kind}},
                    "metrics": {
                        "request_totals": {
                            "successful": 900,
                            "errored": errored,
                            "incomplete": 0,
                            "total": 900 + errored,
                        },
                        "request_concurrency": dist(250.0, 400.0, 10.0),
                        "request_latency": dist(12.0, 30.0, 1.0),
                        "time_to_first_token_ms": dist(3000.0, 9000.0, 150.0),
                        "inter_token_latency_ms": dist(40.0, 45.0, 35.0),
                        "time_per_output_token_ms": dist(60.0, 90.0, 40.0),
                    },
                }
            ]
        }
    )


FIRES = {
    "bench-ttft-spread": (
        "vllm.json",
        lambda: json.dumps(vllm_result(ttfts=[0.2] + [2.4] * 999, errors=[""] * 1000)),
        "L2",
        "TTFT median 2.4 s is 12x its minimum 200 ms (>= 5x) while TPOT stays flat (p99 33 ms, 1.14x its median",
    ),
    "bench-itl-tail": ("sglang.txt", lambda: SGLANG_SUMMARY, "L2", "ITL p99 162 ms is 15x its median 11 ms (>= 5x)"),
    "bench-single-stream": (
        "vllm.txt",
        lambda: VLLM_SUMMARY,
        "L1",
        "one request at a time (max concurrency 1) and TPOT p99 21.6 ms within 1.2x its median 20.1 ms",
    ),
    "bench-overload": (
        "guidellm.json",
        lambda: guidellm(errored=100),
        "L2",
        "100 of 1,000 requests failed (10.0%, >= 5%)",
    ),
    "bench-spec-acceptance": (
        "spec.json",
        lambda: json.dumps(vllm_result(spec_decode_acceptance_rate=31.0, spec_decode_acceptance_length=1.9)),
        "RL",
        "speculative acceptance 0.31 (< 0.50) over the benchmark",
    ),
    "bench-queue-share": (
        "queue.txt",
        lambda: (MEASURED / "vllm-max-num-seqs-queue-1.txt").read_text(encoding="utf-8"),
        "L2",
        "the median request waited 148 s for its first token, 48% of the 306.78 s run (>= 25%), with requests sent all "
        "at once",
    ),
    "bench-first-token-backlog": (
        "backlog.txt",
        lambda: (MEASURED / "vllm-rocm-paged-attn-upstream-1.txt").read_text(encoding="utf-8"),
        "L2",
        "10.34 req/s completed x TTFT mean 24.2 s = 251 requests waiting for a first token on average (Little's law, "
        ">= 32)",
    ),
    "bench-spec-position": (
        "positions.txt",
        lambda: SPEC_SECTION.replace("23.65", "7.10"),
        "RL",
        "draft position 7 accepted in under 10% of drafts over the benchmark (by position 0: 76%",
    ),
}
MEASURED = ASSETS.parent / "fixtures" / "measurements"
SPEC_SECTION = (MEASURED / "vllm-mtp8-acceptance-1.txt").read_text(encoding="utf-8")


def test_every_bench_rule_has_a_result_that_fires_it():
    assert set(FIRES) | {"bench-decode-near-bandwidth"} == {r.id for r in rules.RULES if r.kind == "bench"}


def test_a_benchmark_decoding_at_the_bandwidth_bound_points_to_l1(cli, tmp_path):
    text = json.dumps(vllm_result(max_concurrency=1, median_tpot_ms=5.0, p99_tpot_ms=5.2))
    path = write(tmp_path, "v.json", text)
    result = cli("triage", "--bench", path, "--model", "llama-3.1-8b", "--bandwidth", "3.35e12", "--json")
    found = [t for _, r, t in fired(result) if r == "bench-decode-near-bandwidth"]
    assert found == [
        "decode takes 5 ms per token (TPOT median), within 1.2x of the 4.84 ms a step needs to read Llama 3.1 8B's "
        "weights and the KV of 1 request of 1,088 tokens at 3.35 TB/s: decode is memory-bandwidth bound"
    ]
    unchecked = cli("triage", "--bench", path, "--verbose").err
    assert "not checked: the model's size and the GPU's memory bandwidth (--model, and --gpu or --bandwidth) (" in (
        unchecked
    )
    assert "bench-decode-near-bandwidth)" in unchecked


@pytest.mark.parametrize("rule", sorted(FIRES))
def test_each_bench_rule_fires_on_the_shape_it_describes(cli, tmp_path, rule):
    name, build, level, text = FIRES[rule]
    found = fired(bench(cli, write(tmp_path, name, build())))
    assert any(code == level and r == rule and t.startswith(text) for code, r, t in found), found


def test_overload_points_to_admission_and_to_control(cli, tmp_path):
    found = fired(bench(cli, write(tmp_path, "g.json", guidellm(errored=100))))
    assert [code for code, r, _ in found if r == "bench-overload"] == ["L2", "L6"]


@pytest.mark.parametrize(
    "name, build, tool",
    [
        ("v.json", lambda: json.dumps(vllm_result()), "vllm bench serve result"),
        ("v.txt", lambda: VLLM_SUMMARY, "vllm bench serve summary"),
        (
            "s.jsonl",
            lambda: sglang_line(request_rate=4.0) + "\n" + sglang_line() + "\n",
            "SGLang bench_serving result, 2 runs",
        ),
        ("s.txt", lambda: SGLANG_SUMMARY, "SGLang bench_serving summary"),
        ("g.json", lambda: genai_json(), "GenAI-Perf JSON export"),
        ("g.csv", lambda: GENAI_CSV, "GenAI-Perf CSV export"),
        ("guide.json", lambda: guidellm(errored=0, kind="synchronous"), "GuideLLM report"),
    ],
)
def test_every_format_is_read_and_named(cli, tmp_path, name, build, tool):
    result = bench(cli, write(tmp_path, name, build()))
    assert result.code == 0, result.err
    assert f"benchmark: {tool}" in result.err


def test_genai_perf_json_and_csv_read_alike(cli, tmp_path):
    one = fired(bench(cli, write(tmp_path, "g.json", genai_json(concurrency=1))))
    two = fired(bench(cli, write(tmp_path, "g.csv", GENAI_CSV)))
    assert [r for _, r, _ in one] == ["bench-single-stream"]
    assert [r for _, r, _ in two] == []  # the CSV does not say the concurrency
    assert "not checked: the concurrency (bench-single-stream)" in bench(cli, write(tmp_path, "g.csv", GENAI_CSV)).err


def test_a_healthy_benchmark_prints_nothing_and_says_so(cli, tmp_path):
    result = bench(cli, write(tmp_path, "v.json", json.dumps(vllm_result(request_rate=4.0, max_concurrency=64))))
    assert (result.code, result.out) == (0, "[]\n")
    assert "healthy by these signals: completed 1,000, failed 0, TTFT median 2.4 s, TTFT p99 4.1 s" in result.err


def test_each_run_of_a_json_lines_file_is_named(cli, tmp_path):
    text = sglang_line(median_itl_ms=11.0, p99_itl_ms=20.0) + "\n" + sglang_line() + "\n"
    found = fired(bench(cli, write(tmp_path, "s.jsonl", text)))
    assert [t.split(":")[0] for _, r, t in found if r == "bench-itl-tail"] == ["run 2"]


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"completed": 3,\n "failed": }\n', "line 2 column 12 is not JSON (Expecting value)"),
        ('{"model": "x"}', "is JSON but not a benchmark result invmap reads: no key 'completed'"),
        ("hello\n", "line 1 is not a benchmark result invmap reads"),
        ('{"benchmarks": []}', "key 'benchmarks' holds no benchmark"),
        ("[1, 2]", "holds JSON that is not an object"),
        (
            "=== Serving Benchmark Result ===\n=======================\n",
            "line 1 opens a 'Serving Benchmark Result' block that holds",
        ),
        ("Metric,avg\nTime To First Token (ms),1\n\nOops\n", "line 4 is not a GenAI-Perf CSV row"),
        ("Successful requests: 5\nhello\n", "line 1 is not a benchmark result invmap reads"),
    ],
)
def test_a_file_that_is_no_benchmark_result_says_where_it_stopped(cli, tmp_path, text, message):
    path = write(tmp_path, "bad.json", text)
    result = bench(cli, path)
    assert (result.code, result.out) == (3, "")
    assert result.err.startswith(f"Error: {path}: {message}"), result.err


def test_a_missing_benchmark_file_is_exit_3(cli, tmp_path):
    result = bench(cli, str(tmp_path / "none.json"))
    assert (result.code, result.err) == (3, f"Error: {tmp_path / 'none.json'}: no such file\n")


def test_a_benchmark_on_stdin(cli):
    result = cli("triage", "--bench", "-", "--json", input=VLLM_SUMMARY)
    assert [r for _, r, _ in fired(result)] == ["bench-single-stream"]


def test_a_peak_of_one_request_in_flight_is_one_at_a_time(cli, tmp_path):
    text = json.dumps(vllm_result(max_concurrent_requests=1, request_rate=0.5, median_tpot_ms=29.0, p99_tpot_ms=30.5))
    assert [t for _, r, t in fired(bench(cli, write(tmp_path, "v.json", text))) if r == "bench-single-stream"] == [
        "one request at a time (peak concurrency 1) and TPOT p99 30.5 ms within 1.2x its median 29 ms: no batching "
        "or queueing, so the time is the per-token cost itself"
    ]


def test_a_sweep_log_reads_every_block(cli, tmp_path):
    spread = VLLM_SUMMARY.replace(
        "P99 ITL (ms):                            21.47", "P99 ITL (ms):                            210.00"
    )
    result = bench(cli, write(tmp_path, "sweep.log", "warming up\n" + VLLM_SUMMARY + "next\n" + spread))
    assert "benchmark: vllm bench serve summary, 2 runs" in result.err
    assert [t.split(":")[0] for _, r, t in fired(result) if r == "bench-itl-tail"] == ["run 2"]


def test_a_benchmark_file_that_is_not_utf8_names_its_line(cli, tmp_path):
    path = tmp_path / "bench.txt"
    path.write_bytes(b"Mean TTFT (ms): 1\n\xff\xfe bad\n")
    result = cli("triage", "--bench", str(path))
    assert (result.code, result.out) == (3, "")
    assert result.err == f"Error: {path}: line 2 is not UTF-8 text; not a benchmark result\n"


def test_a_markdown_map_that_is_not_utf8_is_refused_and_writes_nothing(cli, tmp_path):
    path, target = tmp_path / "map.md", tmp_path / "out.toml"
    path.write_bytes(b"| a |\n\xff")
    result = cli("import", str(path), "-o", str(target))
    assert (result.code, result.out, result.err) == (3, "", f"Error: {path}: not UTF-8 text\n")
    assert not target.exists()


# --- benchmarks as pasted (issue 41, section 2) ----------------------------------------------------------------


def runs_of(path) -> list[dict]:
    from invmap.measure import bench as reading

    return reading.read_path(str(path)).runs


def test_the_command_pasted_above_a_block_is_read_and_the_block_wins(tmp_path):
    block = (MEASURED / "vllm-recipes-dsv32-tp8-1.txt").read_text(encoding="utf-8")
    command = (
        "vllm bench serve --model m --dataset-name random --random-input-len 2048 \\\n"
        "    --random-output-len 1024 --num-prompts 120 --request-rate 20 --max-concurrency 64\n"
    )
    [run] = runs_of(write(tmp_path, "b.txt", command + block))
    assert {k: run[k] for k in ("num_prompts", "random_input_len", "random_output_len", "max_concurrency")} == {
        "num_prompts": 120.0,
        "random_input_len": 2048.0,
        "random_output_len": 1024.0,
        "max_concurrency": 64.0,
    }
    assert run["dataset"] == "random"
    assert (run["request_rate"], run["completed"], run["failed"]) == (10.0, 100.0, 0.0)  # the block's own lines win


def test_requests_sent_less_those_that_succeeded_failed(cli, tmp_path):
    """The brief's case: 3,000 prompts at --request-rate inf, 1,648 successful, no failed line."""
    block = (MEASURED / "sglang-online-reference-1.txt").read_text(encoding="utf-8").splitlines()
    body = [line for line in block[1:] if not line.startswith(("Successful requests", "Traffic request rate"))]
    text = "\n".join(
        ["python3 -m sglang.bench_serving --backend sglang --num-prompts 3000 --request-rate inf", body[0],
         "Successful requests:                     1648", *body[1:]]
    ) + "\n"  # fmt: skip
    result = cli("triage", "--bench", write(tmp_path, "s.txt", text), "--json")
    [evidence] = {e for _, r, e in fired(result) if r == "bench-overload"}  # one finding, under L2 and L6
    assert evidence.startswith(
        "1,352 of 3,000 requests failed (sent 3,000 by the command's --num-prompts, 1,648 succeeded) (45.1%, >= 5%)"
    )


def test_a_block_cut_short_is_read_for_what_it_has_and_says_what_is_missing_once(cli, tmp_path):
    path = str(MEASURED / "vllm-max-num-seqs-queue-1.txt")
    result = cli("triage", "--bench", path, "--json")
    assert result.code == 0
    said = [line for line in result.err.splitlines() if "the block stops at" in line]
    assert said == ["the block stops at 'P99 TTFT (ms):                           286485.34': no TPOT, ITL lines; read "
                    "for what it has"]  # fmt: skip


def test_a_summary_pasted_without_its_title_is_read_from_its_first_result_line(cli, tmp_path):
    """A paste that starts at 'Successful requests:' (no title, no section rule) is the same block:
    the same signals as with its title above it."""
    body = (MEASURED / "vllm-tpu-pd-before-fix-1.txt").read_text(encoding="utf-8")
    titled = write(tmp_path, "titled.txt", "============ Serving Benchmark Result ============\n" + body)
    headless, whole = bench(cli, str(MEASURED / "vllm-tpu-pd-before-fix-1.txt")), bench(cli, titled)
    assert (headless.code, headless.out) == (0, "[]\n") == (whole.code, whole.out)
    plain = cli("triage", "--bench", str(MEASURED / "vllm-tpu-pd-before-fix-1.txt"))
    assert plain.err.splitlines()[:2] == [
        f"benchmark: vllm bench serve summary, 1 run ({MEASURED / 'vllm-tpu-pd-before-fix-1.txt'})",
        "healthy by these signals: completed 300, failed 0",
    ]


def test_a_speculative_section_alone_is_read(cli):
    result = cli("triage", "--bench", str(MEASURED / "vllm-mtp8-acceptance-1.txt"), "--json")
    assert (result.code, result.out) == (0, "[]\n")  # 44% of tokens accepted, but 4.5 tokens a step: it pays
    [run] = runs_of(MEASURED / "vllm-mtp8-acceptance-1.txt")
    assert [round(run[k], 4) for k in ("spec_acceptance", "spec_length", "spec_position_7")] == [0.4371, 4.5, 0.2365]


# --- two runs compared: the development set's three real A/B pairs ---------------------------------------------

PAIRS = [
    ("vllm-ascend-async-a-1.txt", "vllm-ascend-async-b-1.txt"),
    ("vllm-kimi-k2-thinking-tp8-1.txt", "vllm-kimi-k2-thinking-dcp8-1.txt"),
    ("vllm-kimi-k2-fp8-tp-1.txt", "vllm-kimi-k2-fp8-dcp8-1.txt"),
]


def compare(cli, before: str, after: str):
    result = cli("triage", "--bench", str(MEASURED / before), "--bench", str(MEASURED / after), "--json")
    assert result.code == 0, result.err
    return json.loads(result.out), result.err


# What each real pair, compared in its index order, prints on stderr after its "compared:" line. None is a
# version regression past the thresholds: the async-scheduling pair's TTFT median rises 19%, inside the
# 13% to 31% that the thread's own reruns of one build spread over (vllm-ascend issue 4110's table).
SAID = {
    "vllm-ascend-async-b-1.txt": [
        "no change beyond the declared thresholds (compare-* rules in data/rules.toml)",
        "largest rise: TTFT median 62.7 ms -> 74.5 ms (+19%; compare-ttft fires at +20%)",
    ],
    "vllm-kimi-k2-thinking-dcp8-1.txt": [
        "improved: TTFT p99 -34%",
        "no change beyond the declared thresholds (compare-* rules in data/rules.toml)",
        "largest rise: ITL median 38 ms -> 44 ms (+16%; compare-tpot fires at +20%)",
    ],
    "vllm-kimi-k2-fp8-dcp8-1.txt": [
        "improved: TTFT median -55%, TTFT p99 -39%, TPOT median -22%, TPOT p99 -24%, ITL p99 -43%",
        "no change beyond the declared thresholds (compare-* rules in data/rules.toml)",
    ],
}


@pytest.mark.parametrize("pair", PAIRS, ids=[p[1] for p in PAIRS])
def test_a_configuration_that_helps_is_no_regression_and_the_nearest_rise_is_said(cli, pair):
    """Each real pair in order: nothing past the thresholds, exit 0, no JSON items, and the statistic that
    rose most said with its numbers against the threshold of the rule that reads it (plain and --json alike)."""
    items, err = compare(cli, *pair)
    assert items == []
    before, after = pair
    head = f"compared: {MEASURED / before} (vllm bench serve summary) -> {MEASURED / after} (vllm bench serve summary)"
    assert err.splitlines() == [head, *SAID[after]]
    plain = cli("triage", "--bench", str(MEASURED / before), "--bench", str(MEASURED / after))
    assert (plain.code, plain.out, plain.err) == (0, "", err)


def cut_at_mean_ttft(tmp_path, name: str) -> str:
    """A real block pasted only down to its "Mean TTFT" line, as people cut them."""
    text = (MEASURED / name).read_text(encoding="utf-8")
    return write(tmp_path, name, text[: text.index("Median TTFT")])


def test_blocks_cut_after_the_mean_are_compared_on_the_mean(cli, tmp_path):
    """Where neither run prints a median, the mean stands in: the async-scheduling pair cut after "Mean
    TTFT" says its 15% rise against the threshold; the Kimi-K2 FP8 pair read backwards names TTFT mean."""
    result = cli("triage", "--bench", cut_at_mean_ttft(tmp_path, "vllm-ascend-async-a-1.txt"),
                 "--bench", cut_at_mean_ttft(tmp_path, "vllm-ascend-async-b-1.txt"))  # fmt: skip
    assert (result.code, result.out) == (0, "")
    assert result.err.splitlines()[-2:] == [
        "no change beyond the declared thresholds (compare-* rules in data/rules.toml)",
        "largest rise: TTFT mean 62 ms -> 71.3 ms (+15%; compare-ttft fires at +20%)",
    ]
    result = cli("triage", "--bench", cut_at_mean_ttft(tmp_path, "vllm-kimi-k2-fp8-dcp8-1.txt"),
                 "--bench", cut_at_mean_ttft(tmp_path, "vllm-kimi-k2-fp8-tp-1.txt"), "--json")  # fmt: skip
    assert result.code == 0
    got = {(i["code"], e["rule"]): (e["text"], e["signals"]) for i in json.loads(result.out) for e in i["evidence"]}
    assert got[("L2", "compare-ttft")] == (
        "TTFT mean 2.01 s -> 4.28 s (+113%) (>= +20%): requests wait longer for their first token",
        {"statistic": "ttft_mean", "before": 2007.87, "after": 4278.46, "change": 1.1308},
    )
    assert "not checked: TPOT or ITL in both runs (compare-tpot)" in result.err


def test_the_same_real_pair_read_backwards_names_each_change_and_its_level(cli):
    """Kimi-K2 FP8 with DCP8 as 'before' and without it as 'after' is a regression of the recipe's own numbers."""
    items, err = compare(cli, "vllm-kimi-k2-fp8-dcp8-1.txt", "vllm-kimi-k2-fp8-tp-1.txt")
    got = {(i["code"], e["rule"]): e["signals"] for i in items for e in i["evidence"]}
    assert got == {
        ("L1", "compare-tpot"): {"statistic": "itl_p99", "before": 52.01, "after": 91.18, "change": 0.7531},
        ("L1", "compare-throughput"): {
            "statistic": "output_throughput", "before": 339.38, "after": 254.99, "change": -0.2487},
        ("L2", "compare-ttft"): {"statistic": "ttft_median", "before": 1932.03, "after": 4285.54, "change": 1.2182},
    }  # fmt: skip
    tpot = next(e["text"] for i in items for e in i["evidence"] if e["rule"] == "compare-tpot")
    assert tpot.startswith("TPOT median 45.1 ms -> 58.2 ms (+29%); TPOT p99 46.5 ms -> 61.4 ms (+32%)")
    assert tpot.endswith("the median moved, so every request's tokens cost more: the per-token (kernel) cost")
    assert all(set(i) == set(__import__("invmap.triage", fromlist=["KEYS"]).KEYS) for i in items)


# --- a version regression from a tracker: vLLM issue 4210 (v0.4.0 -> v0.4.1, PR 3550's scheduler refactor) ---


def test_a_version_regression_from_a_tracker_names_the_change_and_the_level(cli):
    """The thread's two offline throughput lines, 'Before' and 'After' PR 3550: the token throughput fell
    12%; neither run prints a per-token time, so L2 (the thread's diagnosis: the scheduler's time per step,
    fixed by PR 4280) comes first and the kernels (L1) are named as the other reading."""
    items, err = compare(cli, "vllm-sched-refactor-before-1.txt", "vllm-sched-refactor-after-1.txt")
    assert [(i["code"], i["confidence"], i["evidence"]) for i in items] == [
        ("L2", "medium", [{
            "rule": "compare-throughput",
            "text": "token throughput (prompt and output) 10,308 -> 9,048 tok/s (-12%, a fall of >= 10%): neither "
                    "run prints a per-token time, so the runs cannot tell slower kernels (L1) from fewer requests a "
                    "step or more scheduler time between steps (L2, first: the map measures throughput at that layer)",
            "signals": {"statistic": "total_throughput", "before": 10308.29, "after": 9048.03, "change": -0.1223},
        }])
    ]  # fmt: skip
    head = (f"compared: {MEASURED / 'vllm-sched-refactor-before-1.txt'} (vllm bench throughput) -> "
            f"{MEASURED / 'vllm-sched-refactor-after-1.txt'} (vllm bench throughput)")  # fmt: skip
    assert err.splitlines() == [
        head,
        "not checked: TPOT or ITL in both runs (compare-tpot)",
        "not checked: TTFT in both runs (compare-ttft)",
        "not checked: completed and failed counts of at least 20 requests in both runs (compare-failures)",
    ]
    alone = cli("triage", "--bench", str(MEASURED / "vllm-sched-refactor-after-1.txt"), "--json")
    assert (alone.code, alone.out) == (0, "[]\n")  # one throughput line names no fault
    assert "not enough signal: " in alone.err


def test_a_small_version_regression_is_said_against_the_threshold_not_named(cli):
    """vLLM issue 1985's two lines, pasted as a Markdown list ('*  base(v0.2.1): ...', '*  new: ...'): the
    thread calls a 3% fall a regression of the scheduler; under compare-throughput's 10% it is no change,
    and the fall is said with its numbers against the threshold, as the largest latency rise is."""
    items, err = compare(cli, "vllm-padding-scheduler-before-1.txt", "vllm-padding-scheduler-after-1.txt")
    assert items == []
    assert err.splitlines()[-2:] == [
        "no change beyond the declared thresholds (compare-* rules in data/rules.toml)",
        "throughput fell: token throughput (prompt and output) 857 -> 830 tok/s (-3%; compare-throughput fires at -10%)",
    ]


@pytest.mark.parametrize(
    "text, run",
    [
        ("Before: Throughput: 20.13 requests/s, 10308.29 tokens/s\n",
         {"request_throughput": 20.13, "total_throughput": 10308.29}),
        ("Throughput: 13.00 requests/s, 6,000.50 total tokens/s, 3000.25 output tokens/s\n"
         "Total num prompt tokens:  1024000\nTotal num output tokens:  512000\n",
         {"request_throughput": 13.0, "total_throughput": 6000.5, "output_throughput": 3000.25,
          "input_tokens": 1024000.0, "output_tokens": 512000.0}),
    ],
)  # fmt: skip
def test_vllm_bench_throughput_lines_are_read_in_both_forms(tmp_path, text, run):
    """The line benchmark_throughput.py printed (tokens: prompt and output) and the one `vllm bench
    throughput` prints now (total and output tokens, then the token totals), each a run."""
    [got] = runs_of(write(tmp_path, "t.txt", text))
    assert got == run


def test_the_real_line_of_todays_vllm_bench_throughput_is_read():
    """The line as vLLM PR 8914 pasted it, total and output tokens a second apart."""
    [got] = runs_of(str(MEASURED / "vllm-throughput-total-output-1.txt"))
    assert got == {"request_throughput": 89.27, "total_throughput": 22853.37, "output_throughput": 11426.69}


def test_offline_runs_that_did_unlike_work_are_said(cli, tmp_path):
    before = write(tmp_path, "a.txt", "Throughput: 20.00 requests/s, 10240.00 tokens/s\n")
    after = write(tmp_path, "b.txt", "Throughput: 17.00 requests/s, 13056.00 tokens/s\n")  # 768 tokens a request
    result = cli("triage", "--bench", before, "--bench", after, "--json")
    assert "the runs were not driven alike (tokens a request 512 vs 768): a change may be the load's" in result.err
    assert [i["code"] for i in json.loads(result.out)] == []  # tokens a second rose: no fall to report


@pytest.mark.parametrize(
    ("tpot", "said"),
    [
        (23.2, "median 29 ms -> 23.2 ms (-20%) fell: tokens cost less"),
        (29.5, "median 29 ms -> 29.5 ms (+2%) held: tokens cost what they did"),
    ],
    ids=["tpot-falls", "tpot-holds"],
)
def test_throughput_down_while_the_per_token_time_does_not_rise_points_to_the_batches(cli, tmp_path, tpot, said):
    """Fewer tokens a second while TPOT holds or falls: each step carried fewer requests (L2), not slower
    kernels, and the text says whether the per-token time held or fell."""
    before = write(tmp_path, "a.json", json.dumps(vllm_result()))
    after = write(tmp_path, "b.json", json.dumps(vllm_result(output_throughput=850.0, median_tpot_ms=tpot)))
    result = cli("triage", "--bench", before, "--bench", after, "--json")
    assert [(i["code"], e["rule"], e["text"]) for i in json.loads(result.out) for e in i["evidence"]] == [
        ("L2", "compare-throughput", f"output throughput 1,062 -> 850 tok/s (-20%, a fall of >= 10%): while TPOT "
         f"{said}, so fewer requests shared each step (the batches the scheduler forms)"),
    ]  # fmt: skip


def test_only_the_tail_rising_points_to_interference_first(cli, tmp_path):
    before = write(tmp_path, "a.json", json.dumps(vllm_result()))
    slower = vllm_result()
    slower["p99_tpot_ms"] = slower["p99_tpot_ms"] * 1.85
    after = write(tmp_path, "b.json", json.dumps(slower))
    result = cli("triage", "--bench", before, "--bench", after, "--json")
    items = json.loads(result.out)
    assert [i["code"] for i in items] == ["L2"]
    assert (
        "(+85%) (>= +20%) while TTFT median 2.4 s -> 2.4 s (+0%) is flat: only the tail moved"
        in (items[0]["evidence"][0]["text"])
    )


def test_three_benchmarks_are_a_usage_error(cli, tmp_path):
    path = write(tmp_path, "a.json", json.dumps(vllm_result()))
    result = cli("triage", "--bench", path, "--bench", path, "--bench", path)
    assert (result.code, result.out) == (2, "")
    assert "--bench takes at most two results (before and after), not 3" in result.err


def test_a_change_from_almost_nothing_is_no_infinite_ratio(cli, tmp_path):
    """A before of 1e-300 ms (within the range) and an after of 1e9 ms make no ratio: nothing is said about
    that statistic, and the JSON stays finite (the cli fixture parses it strictly)."""
    tiny, huge = vllm_result(), vllm_result()
    tiny["median_tpot_ms"], huge["median_tpot_ms"] = 1e-300, 1e9
    result = cli("triage", "--bench", write(tmp_path, "a.json", json.dumps(tiny)), "--bench",
                 write(tmp_path, "b.json", json.dumps(huge)), "--json")  # fmt: skip
    assert result.code == 0 and "tpot_median" not in result.out


# --- numbers a run's own lines contradict, and a queue at a rate the server cannot keep -------------------


def test_a_rate_offered_above_what_completes_queues_at_a_tenth_of_the_run(cli, tmp_path):
    """Offered 10 req/s, 3.34 completed: the median request waits (N/2)(1/X - 1/R), about a sixth of
    the run; a TTFT median of 17.5% of it is that queue, though short of the quarter a burst needs."""
    result = bench(cli, str(MEASURED / "vllm-uccl-p2p-rate10-1.txt"))
    assert fired(result) == [
        (
            "L2",
            "bench-queue-share",
            "the median request waited 10.5 s for its first token, 17% of the 59.8 s run (>= 10%), with requests sent "
            "at 10 req/s against 3.34 req/s completed: they queue for a place in the batch",
        )
    ]
    assert json.loads(result.out)[0]["confidence"] == "medium"


def test_a_rate_the_server_keeps_up_with_is_no_queue_however_long_the_first_token(cli, tmp_path):
    text = (MEASURED / "vllm-uccl-p2p-rate10-1.txt").read_text(encoding="utf-8")
    kept = text.replace(
        "Request rate configured (RPS):           10.00", "Request rate configured (RPS):           4.00"
    )
    result = bench(cli, write(tmp_path, "kept.txt", kept))
    assert fired(result) == []


@pytest.mark.parametrize("generated", ["768", "700"])
def test_per_token_latencies_of_one_token_requests_are_left_out_not_read(cli, tmp_path, generated):
    text = (MEASURED / "vllm-multimodal-burst-1.txt").read_text(encoding="utf-8")
    text = text.replace(
        "Total generated tokens:                  768", f"Total generated tokens:                  {generated}"
    )
    text += "Median ITL (ms):                         0.03\nP99 ITL (ms):                            1.65\n"
    result = bench(cli, write(tmp_path, "one.txt", text))
    assert "bench-itl-tail" not in [rule for _, rule, _ in fired(result)]
    assert (
        f"left out: ITL: {tmp_path / 'one.txt'}: {generated} tokens generated for 768 requests, at most one each"
        in (result.err)
    )


def test_two_tokens_a_request_keep_their_gaps(cli, tmp_path):
    text = (MEASURED / "sglang-fa4-long-prefill-1.txt").read_text(encoding="utf-8")  # 101 tokens for 64 requests
    result = bench(cli, write(tmp_path, "two.txt", text))
    assert "left out" not in result.err


def test_a_p99_below_its_median_leaves_that_latency_out(cli, tmp_path):
    path = str(MEASURED / "sglang-flashinfer-indices-ci-1.txt")
    result = bench(cli, path)
    assert f"left out: TTFT: {path}: its p99 66.38 ms is below its median 33951.9 ms, which no set of requests has" in (
        result.err
    )
    verdict = next(line for line in result.err.splitlines() if line.startswith("healthy by these signals"))
    assert "TTFT" not in verdict and "TPOT median 57.2 ms" in verdict
    assert fired(result) == []


def test_a_first_token_backlog_is_a_lead_and_no_backlog_at_a_rate_the_server_keeps(cli, tmp_path):
    text = (MEASURED / "vllm-rocm-paged-attn-upstream-1.txt").read_text(encoding="utf-8")
    result = bench(cli, write(tmp_path, "burst.txt", text))
    assert [(lv["code"], lv["confidence"]) for lv in json.loads(result.out)] == [("L2", "medium")]
    kept = text.replace(
        "Successful requests:                     1000\n",
        "Successful requests:                     1000\nRequest rate configured (RPS):           12.00\n",
    )
    result = bench(cli, write(tmp_path, "kept.txt", kept))
    assert "bench-first-token-backlog" not in [rule for _, rule, _ in fired(result)]
