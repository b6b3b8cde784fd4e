"""triage from measurements (issue: metrics): an engine's /metrics scrape, once or as a window, and a
benchmark's results, read against the rules declared in invmap/measure/rules.py."""

from __future__ import annotations

import json
import math

import pytest
import scrapes

from invmap import triage as triage_keys
from invmap.cli import shortcuts
from invmap.measure import names, rules
from invmap.measure.view import Hist

GOOD_ITL = [0.02] * 990 + [0.03] * 10  # a tight inter-token distribution
PROMPTS = 48_000


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(cli, *args: str, input: str | None = None):
    result = cli("triage", *args, "--json", input=input)
    assert "Traceback" not in result.err
    return result


def levels(result) -> list[dict]:
    assert result.code == 0, result.err
    return json.loads(result.out)


def evidence(items: list[dict], code: str) -> list[str]:
    return [e["text"] for item in items if item["code"] == code for e in item["evidence"]]


def kv_pressure(kv: float, preempted: float, prompts: float = 0) -> str:
    return (
        scrapes.vllm()
        .gauge("vllm:num_requests_running", 12)
        .gauge("vllm:num_requests_waiting", 3)
        .gauge("vllm:kv_cache_usage_perc", kv)
        .counter("vllm:num_preemptions", preempted)
        .counter("vllm:prompt_tokens", prompts)
        .text()
    )


# --- a window between two scrapes ----------------------------------------------------------------


def test_a_window_between_two_scrapes_names_the_level_with_the_numbers_that_fired_it(cli, tmp_path):
    before = write(tmp_path, "before.prom", kv_pressure(0.80, 2))
    after = write(tmp_path, "after.prom", kv_pressure(0.97, 50))
    result = run(cli, "--metrics", before, "--metrics", after, "--interval", "60s")
    items = levels(result)
    assert [i["code"] for i in items] == ["L3"]
    first = items[0]
    assert tuple(first) == triage_keys.KEYS
    assert (first["title"], first["confidence"], first["matched"]) == ("Cache management", "high", [])
    assert first["evidence"] == [
        {
            "rule": "kv-full-preempting",
            "text": "kv usage 0.97 (>= 0.90) and 48 preemptions in 60 s",
            "signals": {"kv_usage": 0.97, "preemptions": 48, "window_s": 60.0},
        }
    ]
    assert first["question"].startswith("Where does each request's KV state live")
    assert "pagedattention" in [s["id"] for s in first["sources"]]
    assert "window: 60 s (vLLM)" in result.err.splitlines()


def test_one_scrape_is_totals_since_the_engine_started_and_says_so(cli, tmp_path):
    result = run(cli, "--metrics", write(tmp_path, "now.prom", kv_pressure(0.97, 48)))
    items = levels(result)
    assert evidence(items, "L3") == ["kv usage 0.97 (>= 0.90) and 48 preemptions since the engine started"]
    assert items[0]["confidence"] == "medium"  # totals blur what is happening now
    assert (
        "totals since the engine started (vLLM, one scrape); give --metrics twice (or a URL with --interval) for a window"
        in result.err.splitlines()
    )


def test_a_counter_that_went_down_means_a_restart_and_the_second_scrape_alone(cli, tmp_path):
    before = write(tmp_path, "before.prom", kv_pressure(0.97, 500))
    after = write(tmp_path, "after.prom", kv_pressure(0.97, 7))
    result = run(cli, "--metrics", before, "--metrics", after)
    assert evidence(levels(result), "L3") == ["kv usage 0.97 (>= 0.90) and 7 preemptions since the engine started"]
    assert "a counter went down between the two scrapes (the engine restarted)" in result.err


def test_a_window_without_interval_says_between_the_two_scrapes(cli, tmp_path):
    before = write(tmp_path, "b.prom", kv_pressure(0.95, 1))
    after = write(tmp_path, "a.prom", kv_pressure(0.95, 4))
    assert evidence(levels(run(cli, "--metrics", before, "--metrics", after)), "L3") == [
        "kv usage 0.95 (>= 0.90) and 3 preemptions between the two scrapes"
    ]


# --- each rule fires on the shape it describes ----------------------------------------------------


def _itl_tail() -> str:
    return (
        scrapes.vllm()
        .histogram("vllm:inter_token_latency_seconds", [0.02] * 980 + [0.6] * 20)
        .counter("vllm:prompt_tokens", PROMPTS)
        .text()
    )


def _queue() -> str:
    return (
        scrapes.vllm()
        .histogram("vllm:time_to_first_token_seconds", [2.0] * 100)
        .histogram("vllm:request_queue_time_seconds", [1.6] * 100)
        .text()
    )


def _waiting() -> str:
    return scrapes.vllm().gauge("vllm:num_requests_waiting", 9).gauge("vllm:kv_cache_usage_perc", 0.21).text()


def _prefill() -> str:
    return scrapes.llamacpp(prompt_tokens=2000, prompt_seconds=60.0, predicted=2000, predicted_seconds=50.0)


def _lora() -> str:
    return (
        scrapes.vllm().gauge("vllm:num_requests_waiting", 4).text()
        + "# HELP vllm:lora_requests_info Running stats on lora requests.\n# TYPE vllm:lora_requests_info gauge\n"
        'vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql,chat",waiting_lora_adapters="legal"} 1.7e9\n'
    )


def _transfer() -> str:
    before = scrapes.sglang().counter("sglang:num_transfer_failed_reqs_total", 3)
    return before.counter("sglang:num_bootstrap_failed_reqs_total", 1).text()


def _ranks() -> str:
    text = ""
    for engine, tokens in (("0", 12000), ("1", 3100)):
        text += scrapes.vllm(engine=engine).counter("vllm:generation_tokens", tokens).text()
    return text


def _spec() -> str:
    return (
        scrapes.vllm()
        .counter("vllm:spec_decode_num_drafts", 5000)
        .counter("vllm:spec_decode_num_draft_tokens", 10000)
        .counter("vllm:spec_decode_num_accepted_tokens", 3100)
        .text()
    )


def _failed() -> str:
    """Issue 48's case: 10 of 200 finished requests aborted (6) or failed (4), two series of one counter."""
    reg = scrapes.vllm()
    for reason, count in (("stop", 150), ("length", 40), ("abort", 6), ("error", 4)):
        reg.counter("vllm:request_success", count, finished_reason=reason)
    return reg.text()


def _spec_positions() -> str:
    reg = scrapes.vllm().counter("vllm:spec_decode_num_drafts", 1000)
    for position, accepted in (("0", 700), ("1", 300), ("2", 60)):
        reg.counter("vllm:spec_decode_num_accepted_tokens_per_pos", accepted, position=position)
    return reg.text()


def _cold_cache() -> str:
    return scrapes.vllm().counter("vllm:prefix_cache_queries", 200_000).counter("vllm:prefix_cache_hits", 4_000).text()


FIRES = {
    "spec-position": (
        _spec_positions,
        "RL",
        "draft position 2 accepted in under 10% of drafts over 1,000 drafts since the engine started (by position "
        "0: 70%, 1: 30%, 2: 6%)",
    ),
    "prefix-cache-cold": (
        _cold_cache,
        "L3",
        "prefix cache hit rate 2.0% (< 10%): 4,000 of 200,000 prompt tokens found since the engine started; whether",
    ),
    "failed-requests": (_failed, "L2", "10 of 200 finished requests were aborted or failed (5.0%, >= 5%)"),
    "kv-full-preempting": (lambda: kv_pressure(0.97, 48), "L3", "kv usage 0.97 (>= 0.90) and 48 preemptions"),
    "preempting": (
        lambda: kv_pressure(0.42, 48),
        "L3",
        "48 preemptions since the engine started while kv usage reads 0.42",
    ),
    "waiting-with-room": (_waiting, "L2", "9 requests waiting while kv usage is 0.21 (< 0.50)"),
    "queue-in-ttft": (_queue, "L2", "queue time is 0.80 of TTFT (mean 1.6 s of 2 s, >= 0.50) over 100 requests"),
    "itl-tail-with-prefill": (
        _itl_tail,
        "L2",
        "ITL p99 625 ms (between 500 ms and 750 ms) is 35x its median 17.7 ms (>= 5x) while 48,000 prompt tokens",
    ),
    "prefill-slower-than-decode": (
        _prefill,
        "L1",
        "prefill takes 30 ms per prompt token, decode 25 ms per output token",
    ),
    "multiplexed": (_lora, "L4", "LoRA adapters sql, chat running and legal waiting (max_lora 2)"),
    "kv-transfer": (
        _transfer,
        "L5",
        "4 KV transfers between prefill and decode servers failed since the engine started",
    ),
    "rank-imbalance": (_ranks, "L5", "data-parallel ranks generated 12,000 (engine 0) to 3,100 (engine 1) tokens"),
    "spec-acceptance": (_spec, "RL", "speculative acceptance 0.31 (< 0.50): 3,100 of 10,000 draft tokens accepted"),
}
NEVER_FIRES = {"decode-near-bandwidth"}  # needs --model and a bandwidth: tested below


def test_every_metrics_rule_has_a_scrape_that_fires_it():
    assert set(FIRES) | NEVER_FIRES == {r.id for r in rules.RULES if r.kind == "metrics"}


@pytest.mark.parametrize("rule", sorted(FIRES))
def test_each_rule_fires_on_the_shape_it_describes_and_points_to_its_level(cli, tmp_path, rule):
    build, level, text = FIRES[rule]
    items = levels(run(cli, "--metrics", write(tmp_path, "s.prom", build())))
    fired = [(i["code"], e["rule"], e["text"]) for i in items for e in i["evidence"]]
    assert any(code == level and r == rule and t.startswith(text) for code, r, t in fired), fired


def test_a_wait_for_the_next_step_is_no_queue(cli, tmp_path):
    quick = scrapes.vllm().gauge("vllm:num_requests_waiting", 2).gauge("vllm:kv_cache_usage_perc", 0.2)
    quick.histogram("vllm:request_queue_time_seconds", [0.01] * 50)
    assert levels(run(cli, "--metrics", write(tmp_path, "q.prom", quick.text()))) == []
    slow = scrapes.vllm().gauge("vllm:num_requests_waiting", 2).gauge("vllm:kv_cache_usage_perc", 0.2)
    slow.histogram("vllm:request_queue_time_seconds", [0.4] * 50)
    assert evidence(levels(run(cli, "--metrics", write(tmp_path, "s.prom", slow.text()))), "L2") == [
        "2 requests waiting while kv usage is 0.20 (< 0.50), mean queue time 400 ms: memory is not what holds them "
        "back, the scheduler's batch limits are"
    ]
    passing = write(
        tmp_path,
        "p.prom",
        scrapes.vllm().gauge("vllm:num_requests_waiting", 0).gauge("vllm:kv_cache_usage_perc", 0.2).text(),
    )
    assert levels(run(cli, "--metrics", passing, "--metrics", write(tmp_path, "w.prom", _waiting()))) == []


def test_short_prompts_are_not_compared_per_token(cli, tmp_path):
    def phases(prompt: int, prefill_s: float) -> str:
        reg = scrapes.vllm()
        reg.histogram("vllm:request_prefill_time_seconds", [prefill_s] * 100)
        reg.histogram("vllm:request_decode_time_seconds", [2.0] * 100)
        reg.histogram("vllm:request_prompt_tokens", [prompt] * 100)
        reg.histogram("vllm:request_generation_tokens", [100] * 100)
        return reg.text()

    # vLLM's phase histograms: 25 ms per prompt token against 20 ms per output token fires, unless
    # the prompts are so short that a prefill is one step, as a decode is
    assert evidence(levels(run(cli, "--metrics", write(tmp_path, "slow.prom", phases(200, 5.0)))), "L1") == [
        "prefill takes 25 ms per prompt token, decode 20 ms per output token (prefill >= 1x decode per token) "
        "since the engine started"
    ]
    assert levels(run(cli, "--metrics", write(tmp_path, "short.prom", phases(10, 0.25)))) == []
    assert levels(run(cli, "--metrics", write(tmp_path, "fine.prom", phases(200, 0.5)))) == []


def test_speculative_acceptance_points_to_the_runtime_levers(cli, tmp_path):
    item = levels(run(cli, "--metrics", write(tmp_path, "s.prom", _spec())))[0]
    assert (item["code"], item["title"]) == ("RL", "Runtime levers")
    assert item["question"] and item["sources"]


def test_a_level_the_catalog_lacks_is_shown_and_said(cli, tmp_path):
    from conftest import ASSETS

    catalog = ASSETS / "mini.toml"  # its [layers] describe L3 alone
    result = cli("--catalog", str(catalog), "triage", "--metrics", write(tmp_path, "s.prom", _spec()), "--json")
    item = levels(result)[0]
    assert (item["code"], item["title"], item["question"], item["sources"]) == ("RL", "RL", None, [])
    assert "this catalog has no level RL; its evidence is shown without sources" in result.err


def test_the_bandwidth_rule_says_what_it_lacks(cli, tmp_path):
    result = run(cli, "--metrics", write(tmp_path, "s.prom", _itl_tail()), "--verbose")
    assert (
        "not checked: the model's size and the GPU's memory bandwidth (--model, and --gpu or --bandwidth) "
        "(decode-near-bandwidth)" in result.err.splitlines()
    )


def _decoding(tpot: float) -> str:
    reg = scrapes.vllm().gauge("vllm:num_requests_running", 4)
    reg.histogram("vllm:request_time_per_output_token_seconds", [tpot] * 200)
    reg.histogram("vllm:request_prompt_tokens", [1000] * 200)
    reg.histogram("vllm:request_generation_tokens", [200] * 200)
    return reg.text()


def test_decode_near_the_bandwidth_bound_points_to_l1(cli, tmp_path):
    """Llama 3.1 8B (BF16, ~16 GB of weights) at 3.35 TB/s: a step of 4 requests of 1,100 tokens reads
    them and the KV in ~4.97 ms (invmap estimate roofline); a TPOT of 5.5 ms is at that roof."""
    path = write(tmp_path, "s.prom", _decoding(0.0055))
    args = ("--metrics", path, "--model", "llama-3.1-8b", "--bandwidth", "3.35e12")
    assert evidence(levels(run(cli, *args)), "L1") == [
        "decode takes 5.5 ms per token (TPOT mean), within 1.2x of the 4.97 ms a step needs to read Llama 3.1 8B's "
        "weights and the KV of 4 requests of 1,100 tokens at 3.35 TB/s: decode is memory-bandwidth bound"
    ]
    slower = write(tmp_path, "slow.prom", _decoding(0.04))
    assert levels(run(cli, "--metrics", slower, "--model", "llama-3.1-8b", "--bandwidth", "3.35e12")) == []
    fast = write(tmp_path, "f.prom", _decoding(0.001))
    faster = run(cli, "--metrics", fast, "--model", "llama-3.1-8b", "--bandwidth", "3.35e12")
    assert levels(faster) == [] and "is faster than the 4.97 ms bound for Llama 3.1 8B at 3.35 TB/s" in faster.err


@pytest.mark.parametrize(
    "args, message",
    [
        (("--gpu", "h100-sxm"), "--gpu, --bandwidth and --efficiency go with --model"),
        (("--efficiency", "0.8"), "--gpu, --bandwidth and --efficiency go with --model"),
        (
            ("--model", "llama-3.1-8b", "--gpu", "a10g"),
            "--model needs a memory bandwidth: invmap's table has no memory bandwidth for A10G (no source it accepts "
            "gives one); give --bandwidth (bytes per second)",
        ),
        (("--model", "llama-3.1-8b", "--gpu", "h100"), "GPU 'h100' is ambiguous: it could be h100-sxm (H100 SXM)"),
        (("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--efficiency", "0"), "--efficiency must be a fraction"),
        (("--model", "llama-3.1-8b"), "--model needs a memory bandwidth: no GPU given; give --bandwidth"),
        (("--model", "llama-3.1-8b", "--bandwidth", "-1"), "--bandwidth-bytes-per-second must be a positive finite"),
    ],
)
def test_the_bandwidth_bound_needs_a_model_and_a_bandwidth(cli, tmp_path, args, message):
    result = cli("triage", "--metrics", write(tmp_path, "s.prom", _decoding(0.005)), *args)
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith(f"Error: {message}"), result.err


def test_several_models_on_one_engine_with_their_own_queues_point_to_l4(cli, tmp_path):
    text = scrapes.vllm(model="a").gauge("vllm:num_requests_waiting", 5).text()
    text += scrapes.vllm(model="b").gauge("vllm:num_requests_waiting", 0).text()
    assert evidence(levels(run(cli, "--metrics", write(tmp_path, "s.prom", text))), "L4") == [
        "2 models share one engine, each with its own queue (a: 5 waiting, b: 0 waiting)"
    ]


def test_a_percentile_past_the_last_finite_bucket_is_never_a_number(cli, tmp_path):
    text = (
        scrapes.vllm()
        .histogram("vllm:inter_token_latency_seconds", [0.02] * 980 + [200.0] * 20)
        .counter("vllm:prompt_tokens", PROMPTS)
        .text()
    )
    [found] = evidence(levels(run(cli, "--metrics", write(tmp_path, "s.prom", text))), "L2")
    assert found.startswith("ITL p99 above 80 s (the last finite bucket) is at least 4532x its median 17.7 ms")


def test_histogram_quantile_estimates_as_promql_does():
    # buckets le=1:10, le=2:20, le=4:40, +Inf:40 -> p50 = 2 + (4-2) * (20-20)/20 = 2.0; p25 = 1 + 1 * 0 = 1..2
    hist = Hist([(1.0, 10.0), (2.0, 20.0), (4.0, 40.0), (math.inf, 40.0)], 0.0, 40.0)
    assert hist.quantile(0.5).value == 2.0
    assert (hist.quantile(0.75).value, hist.quantile(0.75).lower, hist.quantile(0.75).upper) == (3.0, 2.0, 4.0)
    assert hist.quantile(0.1).value == 0.4 and hist.quantile(0.1).lower == 0.0  # the first bucket starts at 0
    assert Hist([(1.0, 1.0), (math.inf, 10.0)], 0.0, 10.0).quantile(0.99).above
    assert Hist([(math.inf, 0.0)], 0.0, 0.0).quantile(0.5) is None  # nothing observed: no number


# --- engines and their names ----------------------------------------------------------------------


def _one_sample(name: names.Name, kind: str) -> str:
    labels = ",".join(f'{k}="{v}"' for k, v in name.labels)
    if kind == "histogram":
        sep = "," if labels else ""
        return (
            f"# TYPE {name.metric} histogram\n"
            f'{name.metric}_bucket{{{labels}{sep}le="1"}} 1\n{name.metric}_bucket{{{labels}{sep}le="+Inf"}} 1\n'
            f"{name.metric}_sum{{{labels}}} 0.5\n{name.metric}_count{{{labels}}} 1\n"
        )
    typ = "counter" if kind == "counter" else "gauge"
    return f"# TYPE {name.metric} {typ}\n{name.metric}{{{labels}}} 1\n"


EVERY_NAME = [(s, n) for s in names.SIGNALS for n in s.names]


@pytest.mark.parametrize("signal, name", EVERY_NAME, ids=[f"{s.key}:{n.metric}" for s, n in EVERY_NAME])
def test_every_declared_name_is_recognised_as_its_engine(cli, tmp_path, signal, name):
    result = run(cli, "--metrics", write(tmp_path, "s.prom", _one_sample(name, signal.kind)))
    assert result.code == 0, result.err
    assert f"({names.BY_KEY[name.engine].title}, one scrape)" in result.err


def test_old_vllm_names_are_read_as_the_new_ones(cli, tmp_path):
    text = (
        scrapes.vllm()
        .gauge("vllm:gpu_cache_usage_perc", 0.97)
        .counter("vllm:num_preemptions", 48)
        .histogram("vllm:time_per_output_token_seconds", [0.02] * 980 + [0.6] * 20)
        .counter("vllm:prompt_tokens", PROMPTS)
        .text()
    )
    items = levels(run(cli, "--metrics", write(tmp_path, "s.prom", text)))
    assert {e["rule"] for i in items for e in i["evidence"]} >= {"kv-full-preempting", "itl-tail-with-prefill"}


def test_sglang_retractions_and_its_router_re_export_with_underscores(cli, tmp_path):
    text = scrapes.sglang().gauge("sglang:token_usage", 0.98).counter("sglang:num_retracted_requests_total", 12).text()
    for body in (text, text.replace("sglang:", "sglang_")):
        assert evidence(levels(run(cli, "--metrics", write(tmp_path, "s.prom", body))), "L3") == [
            "kv usage 0.98 (>= 0.90) and 12 retractions since the engine started"
        ]


def test_trtllm_serve_without_a_prefix_is_known_by_its_engine_type_label(cli, tmp_path):
    text = scrapes.trtllm().histogram("time_to_first_token_seconds", [2.0] * 50).text()
    text += scrapes.trtllm().histogram("request_queue_time_seconds", [1.8] * 50).text()
    result = run(cli, "--metrics", write(tmp_path, "s.prom", text))
    assert evidence(levels(result), "L2")[0].startswith("queue time is 0.90 of TTFT")
    assert "(trtllm-serve, one scrape)" in result.err


def test_triton_tensorrt_llm_gauges(cli, tmp_path):
    result = run(cli, "--metrics", write(tmp_path, "s.prom", scrapes.triton(waiting=6, active=2, fraction=0.1)))
    assert evidence(levels(result), "L2") == [
        "6 requests waiting while kv usage is 0.10 (< 0.50): memory is not what holds them back, the scheduler's "
        "batch limits are"
    ]


def test_triton_without_a_fraction_reads_used_over_max_blocks(cli, tmp_path):
    text = scrapes.triton(waiting=6, active=2, fraction=0.1).replace('kv_cache_block_type="fraction"', 'x="y"')
    result = run(cli, "--metrics", write(tmp_path, "s.prom", text))
    assert evidence(levels(result), "L2")[0].startswith("6 requests waiting while kv usage is 0.02 (< 0.50)")


def test_tgi_counters_without_total(cli, tmp_path):
    result = run(cli, "--metrics", write(tmp_path, "s.prom", scrapes.tgi(queue=0, batch=2, requests=9, success=9)))
    assert levels(result) == []
    assert "(TGI, one scrape)" in result.err


# --- nothing to say ---------------------------------------------------------------------------------


def test_no_rule_fires_healthy_by_these_signals_with_the_key_numbers(cli, tmp_path):
    text = (
        scrapes.vllm()
        .gauge("vllm:num_requests_running", 4)
        .gauge("vllm:num_requests_waiting", 0)
        .gauge("vllm:kv_cache_usage_perc", 0.35)
        .counter("vllm:num_preemptions", 0)
        .counter("vllm:prompt_tokens", PROMPTS)
        .histogram("vllm:inter_token_latency_seconds", GOOD_ITL)
        .histogram("vllm:time_to_first_token_seconds", [0.09] * 100)
        .histogram("vllm:request_queue_time_seconds", [0.01] * 100)
        .text()
    )
    result = run(cli, "--metrics", write(tmp_path, "s.prom", text))
    assert (result.code, result.out) == (0, "[]\n")
    assert (
        "healthy by these signals: 4 running, 0 waiting, kv usage 0.35, 0 preemptions, TTFT p50 90 ms (between "
        "80 ms and 100 ms), TTFT p99 99.8 ms (between 80 ms and 100 ms), ITL p50 17.6 ms (between 10 ms and 25 ms), "
        "ITL p99 25 ms (between 10 ms and 25 ms)" in result.err.splitlines()
    )
    plain = cli("triage", "--metrics", write(tmp_path, "s.prom", text))
    assert (plain.code, plain.out) == (0, "")


def test_an_idle_engine_is_not_enough_signal_and_says_what_is_missing(cli, tmp_path):
    text = (
        scrapes.vllm()
        .gauge("vllm:num_requests_running", 0)
        .counter("vllm:request_success", 0, finished_reason="stop")
        .histogram("vllm:time_to_first_token_seconds", [])
        .text()
    )
    result = run(cli, "--metrics", write(tmp_path, "s.prom", text))
    assert (result.code, result.out) == (0, "[]\n")
    lines = result.err.splitlines()
    assert "no request has finished since the engine started" in lines
    [verdict] = [line for line in lines if line.startswith("not enough signal: ")]
    assert "a KV usage metric" in verdict and "a preemption (retraction) counter" in verdict


def test_a_scrape_of_no_known_engine_is_not_enough_signal(cli, tmp_path):
    text = "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n"
    result = run(cli, "--metrics", write(tmp_path, "s.prom", text))
    assert (result.code, result.out) == (0, "[]\n")
    assert "holds 1 samples but none of a known engine (vLLM, SGLang, TGI, llama.cpp server" in result.err
    empty = run(cli, "--metrics", write(tmp_path, "e.prom", ""))
    assert (empty.code, empty.out) == (0, "[]\n") and "e.prom holds no samples" in empty.err


# --- words and numbers ---------------------------------------------------------------------------------


def test_words_and_measurements_each_shown_and_measurements_outweigh_words(cli, tmp_path):
    path = write(tmp_path, "s.prom", kv_pressure(0.97, 48))
    result = run(cli, "TTFT", "p99", "climbs", "when", "long", "prompts", "arrive", "--metrics", path)
    items = levels(result)
    assert items[0]["code"] == "L3" and items[0]["evidence"]
    worded = next(i for i in items if i["code"] == "L2")
    assert worded["matched"] and not worded["evidence"] and worded["confidence"] == "low"
    assert "the measurements point to L3, the words first to L2: measurements outweigh words" in result.err


def test_words_that_agree_with_the_measurements_join_them(cli, tmp_path):
    path = write(tmp_path, "s.prom", kv_pressure(0.97, 48))
    result = run(cli, "requests", "preempted", "because", "the", "KV", "cache", "is", "full", "--metrics", path)
    first = levels(result)[0]
    assert first["code"] == "L3" and first["matched"] and first["evidence"]
    assert "outweigh" not in result.err


def test_plain_and_table_show_the_evidence(cli, tmp_path):
    path = write(tmp_path, "s.prom", kv_pressure(0.97, 48))
    plain = cli("triage", "--metrics", path)
    assert plain.out.split("\n")[0].split("\t") == [
        "L3",
        "Cache management",
        "94.0",
        "medium",
        "",
        "kv usage 0.97 (>= 0.90) and 48 preemptions since the engine started",
        "none",  # coverage: no source's own words are in a scrape
        "",
    ]
    from conftest import on_terminal

    shown = on_terminal(["triage", "--metrics", path], 80)
    assert "  saw  kv usage 0.97 (>= 0.90) and 48 preemptions since the engine started" in shown


# --- bad input -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, where, message",
    [
        ('{"completed": 10}\n', "1:1", "not Prometheus text exposition: a line is a comment (#), a sample"),
        (
            "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\nvllm:num_requests_running{a=1} 2\n",
            "3:27",
            'not Prometheus text exposition: expected a label (name="value") or a closing brace',
        ),
        ("other_metric 1\n<html><body>502 Bad Gateway</body></html>\n", "2:1", "not Prometheus text exposition"),
        ("vllm:num_requests_running{} one\n", "1:29", "not Prometheus text exposition: 'one' is not a sample value"),
        ("hello world\n", "1:7", "not Prometheus text exposition: 'world' is not a sample value"),
        (
            '# TYPE x gauge\nx 1\nx{a="b" c="d"} 1\n',
            "3:9",
            "not Prometheus text exposition: expected a comma or a closing brace after a label",
        ),
        (
            "up 1\nup 1 17 extra\n",
            "2:9",
            "not Prometheus text exposition: after the value only a timestamp (whole milliseconds) may follow",
        ),
        (
            "process_cpu_seconds_total\n",
            "1:26",
            "not Prometheus text exposition: a sample's name (and labels) must be followed by a space and a value",
        ),
    ],
)
def test_text_that_is_not_prometheus_names_its_line_and_column(cli, tmp_path, text, where, message):
    """Parsed or skipped by its name, a line that is neither a comment, a sample nor blank is refused."""
    path = write(tmp_path, "bad.prom", text)
    result = run(cli, "--metrics", path)
    assert (result.code, result.out) == (3, "")
    assert result.err.startswith(f"Error: {path}:{where}: {message}")


def test_text_with_comments_but_no_sample_is_refused(cli, tmp_path):
    path = write(tmp_path, "c.prom", "# HELP nothing here\n# just a note\n")
    result = run(cli, "--metrics", path)
    assert (result.code, result.out, result.err) == (
        3,
        "",
        f"Error: {path}: holds 2 comment lines and not one sample line; not Prometheus text exposition\n",
    )


def test_the_syntax_check_echoes_no_control_character(cli, tmp_path):
    path = write(tmp_path, "esc.prom", "up \x1b[31mred\n")
    result = run(cli, "--metrics", path)
    assert result.code == 3 and "\x1b" not in result.err and "'\\x1b[31mred'" in result.err


def test_a_missing_or_binary_scrape_is_exit_3(cli, tmp_path):
    missing = run(cli, "--metrics", str(tmp_path / "nope.prom"))
    assert (missing.code, missing.err) == (3, f"Error: {tmp_path / 'nope.prom'}: no such file\n")
    binary = tmp_path / "bin.prom"
    binary.write_bytes(b"vllm:x 1\n\xff\xfe\x00\n")
    result = run(cli, "--metrics", str(binary))
    assert (result.code, result.err) == (
        3,
        f"Error: {binary}: line 2 is not UTF-8 text (byte 1); not a Prometheus scrape\n",
    )


def test_nan_inf_escaped_labels_empty_families_and_repeats_are_handled(cli, tmp_path):
    text = (
        "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
        "# TYPE vllm:num_requests_waiting gauge\n"
        'vllm:num_requests_waiting{engine="0",model_name="a\\"quoted\\\\model\\nx"} 5\n'
        'vllm:num_requests_waiting{engine="0",model_name="b"} 1\n'
        'vllm:num_requests_waiting{engine="0",model_name="b"} 0\n'
        "# HELP vllm:kv_cache_usage_perc KV-cache usage.\n# TYPE vllm:kv_cache_usage_perc gauge\n"
        'vllm:kv_cache_usage_perc{engine="0",model_name="b"} NaN\n'
        'vllm:kv_cache_usage_perc{engine="1",model_name="b"} +Inf\n'
        "# HELP vllm:num_preemptions_total Cumulative number of preemption.\n# TYPE vllm:num_preemptions_total counter\n"
    )
    result = run(cli, "--metrics", write(tmp_path, "odd.prom", text))
    items = levels(result)
    assert evidence(items, "L4") == [
        '2 models share one engine, each with its own queue (a"quoted\\model\nx: 5 waiting, b: 0 waiting)'
    ]
    assert (
        'vllm:num_requests_waiting{engine="0",model_name="b"} appears more than once: the last value is used'
        in result.err
    )
    assert "2 NaN or infinite values ignored" in result.err
    table = cli("triage", "--metrics", write(tmp_path, "odd.prom", text))
    assert table.out.count("\n") == 1 and "x: 5 waiting" in table.out  # a newline in a label never splits a row


def test_a_line_longer_than_a_mebibyte_is_refused(cli, tmp_path):
    path = write(tmp_path, "long.prom", "vllm:num_requests_waiting " + "1" * (1 << 20) + "\n")
    result = run(cli, "--metrics", path)
    assert (result.code, result.err) == (3, f"Error: {path}: line 1 is longer than 1 MiB; not a Prometheus scrape\n")


# --- stdin and usage ---------------------------------------------------------------------------------------


def test_a_scrape_on_stdin(cli):
    result = run(cli, "--metrics", "-", input=kv_pressure(0.97, 48))
    assert evidence(levels(result), "L3") == ["kv usage 0.97 (>= 0.90) and 48 preemptions since the engine started"]


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "triage needs a SYMPTOM, --metrics SOURCE or --bench FILE"),
        (("--metrics", "a", "--metrics", "b", "--metrics", "c"), "--metrics takes at most two scrapes"),
        (("--metrics", "-", "--metrics", "-"), "--metrics - reads stdin once"),
        (("--metrics", "a.prom", "--interval", "30s"), "--interval with one --metrics needs a URL to scrape twice"),
        (("--metrics", "http://127.0.0.1:9/metrics", "--interval", "soon"), "--interval takes a duration such as 30s"),
        (("--metrics", "http://127.0.0.1:9/metrics", "--interval", "2h"), "--interval 2h is longer than an hour"),
        (("--bench", "b.json", "--interval", "30s"), "--interval goes with --metrics"),
        (("--metrics", "a", "--bench", "b"), "give --metrics or --bench, not both"),
    ],
)
def test_usage_errors_are_exit_2(cli, args, message):
    result = cli("triage", *args)
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith(f"Error: {message}")


def test_stdin_cannot_be_both_the_catalog_and_the_scrape(cli):
    result = cli("--catalog", "-", "triage", "--metrics", "-", input="")
    assert (result.code, result.err) == (
        2,
        "Error: stdin is the catalog (--catalog -): the scrape cannot be read from it too\n",
    )


def test_a_200_mb_scrape_is_streamed_in_bounded_memory(tmp_path):
    """The scrape is read a line at a time and only the series invmap reads are kept: 200 MB of a
    node exporter's families around a vLLM scrape stay under 100 MiB of peak memory (README)."""
    import subprocess
    import sys

    from conftest import installed_invmap

    block = "".join(
        f"# HELP node_metric_{n} help\n# TYPE node_metric_{n} gauge\n"
        + "".join(f'node_metric_{n}{{cpu="{j}",instance="10.0.0.{j}:9100",job="node"}} {j * 1.5}\n' for j in range(64))
        for n in range(200)
    )
    path = tmp_path / "big.prom"
    with open(path, "w", encoding="utf-8") as out:
        out.write(kv_pressure(0.97, 48))
        size, n = 0, 0
        while size < 200 * 2**20:
            part = block.replace("node_metric_", f"node{n}_metric_")
            out.write(part)
            size, n = size + len(part), n + 1
    probe = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(done.stdout)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, installed_invmap(), "triage", "--metrics", str(path), "--json"],
        capture_output=True,
        text=True,
    )
    code, peak_kib = done.stdout.split("\n", 1)[0].split()
    assert code == "0"
    assert int(peak_kib) < 100 * 1024, f"peak {int(peak_kib) // 1024} MiB"
    items = json.loads(done.stdout.split("\n", 1)[1])
    assert evidence(items, "L3") == ["kv usage 0.97 (>= 0.90) and 48 preemptions since the engine started"]


def _imports(*args: str) -> set[str]:
    import subprocess
    import sys

    from conftest import installed_invmap

    program = installed_invmap()
    subprocess.run([program, "list"], capture_output=True, check=True)  # the index exists from now on
    done = subprocess.run([sys.executable, "-X", "importtime", program, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def test_words_alone_never_import_the_scrape_parser_and_a_file_scrape_no_network(tmp_path):
    assert not {
        m
        for m in _imports("triage", "kv", "cache", "full", "--json")
        if m.startswith(("prometheus_client", "invmap.measure"))
    }
    path = write(tmp_path, "s.prom", kv_pressure(0.97, 48))
    imported = _imports("triage", "--metrics", path, "--json")
    assert "invmap.measure.scrape" in imported and "prometheus_client.metrics_core" in imported
    unwanted = ("httpx", "invmap.net", "prometheus_client.exposition")
    if shortcuts.ENABLED:  # with the Typer shortcuts off, Typer itself imports pydantic
        unwanted += ("pydantic",)
    assert not {m for m in imported if m.startswith(unwanted)}


def test_the_parser_is_loaded_without_the_client_and_leaves_it_importable():
    """The scrape parser is imported without prometheus_client's `__init__` (start-up time), and a
    later `import prometheus_client` in the same process is whole."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from invmap.measure import scrape\n"
        "import io\n"
        "print(scrape.read(io.BytesIO(b'vllm:num_requests_waiting 3\\n'), 'x').series)\n"
        "print('prometheus_client.exposition' in sys.modules)\n"
        "import prometheus_client.parser\n"
        "print(prometheus_client.parser.text_string_to_metric_families.__name__, bool(prometheus_client.Counter))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "{'vllm:num_requests_waiting': {(): 3.0}}",
        "False",
        "text_string_to_metric_families True",
    ]


def test_the_installed_program_reads_a_scrape_piped_to_it(sh):
    done = sh("triage", "--metrics", "-", "--json", input=kv_pressure(0.97, 48))
    assert done.code == 0, done.err
    assert evidence(json.loads(done.out), "L3") == [
        "kv usage 0.97 (>= 0.90) and 48 preemptions since the engine started"
    ]
    closed = sh("triage", "--metrics", "-", input="")
    assert (closed.code, closed.out) == (0, "") and "stdin holds no samples" in closed.err


def test_words_with_healthy_measurements_say_the_levels_are_the_words_alone(cli, tmp_path):
    path = write(
        tmp_path,
        "s.prom",
        scrapes.vllm().gauge("vllm:num_requests_waiting", 0).gauge("vllm:kv_cache_usage_perc", 0.2).text(),
    )
    result = run(cli, "kv", "cache", "full", "--metrics", path)
    items = levels(result)
    assert items and all(not i["evidence"] for i in items)
    assert "no rule fired on the measurements: the levels below are the words' alone" in result.err


def test_levels_past_the_limit_are_never_left_out_silently(cli, tmp_path):
    text = kv_pressure(0.97, 48) + _spec()
    result = cli("triage", "--metrics", write(tmp_path, "s.prom", text), "--limit", "1", "--json")
    assert [i["code"] for i in json.loads(result.out)] == ["L3"]
    assert "1 more level not shown (--limit 1)" in result.err


def test_every_rule_is_declared_whole_and_documented_on_the_measurements_page():
    from conftest import REPO

    readme = (REPO / "docs" / "measurements.md").read_text(encoding="utf-8")
    for rule in rules.RULES:
        assert f"| `{rule.id}` |" in readme, rule.id
        assert rule.levels and rule.why.endswith((".", ")")) and rule.signals, rule.id
        assert rule.thresholds and all(t.rationale for t in rule.thresholds), rule.id
        assert all(s in names.BY_SIGNAL or rule.kind in ("bench", "compare") for s in rule.signals), rule.id


def test_every_declared_name_says_where_it_was_read():
    for signal in names.SIGNALS:
        for name in signal.names:
            assert name.engine in names.BY_KEY and name.doc, (signal.key, name.metric)
            assert name.metric.startswith(names.BY_KEY[name.engine].prefixes), name.metric


@pytest.mark.parametrize("engine", [e.key for e in names.ENGINES])
def test_every_signal_at_zero_divides_by_nothing(cli, tmp_path, engine):
    """Every declared name of one engine present with zero counts, zero gauges and empty histograms
    (an engine that has served nothing): no rule fires, none divides by zero."""
    text = ""
    for signal in names.SIGNALS:
        for name in signal.names:
            if name.engine != engine:
                continue
            labels = ",".join(f'{k}="{v}"' for k, v in name.labels)
            if signal.kind == "histogram":
                sep = "," if labels else ""
                text += (
                    f'{name.metric}_bucket{{{labels}{sep}le="1"}} 0\n{name.metric}_bucket{{{labels}{sep}le="+Inf"}} 0\n'
                )
                text += f"{name.metric}_sum{{{labels}}} 0\n{name.metric}_count{{{labels}}} 0\n"
            else:
                text += f"{name.metric}{{{labels}}} 0\n"
    before = write(tmp_path, "before.prom", text)
    result = run(cli, "--metrics", before, "--metrics", write(tmp_path, "after.prom", text), "--interval", "10s")
    assert (result.code, result.out) == (0, "[]\n"), result.err


# --- issue 41: structure read from labels, gauges per rank, a P/D server's aborts --------------------------------


def _sglang_ranks(values: dict[str, float], metric: str = "sglang:gen_throughput") -> str:
    return "".join(scrapes.sglang(dp_rank=rank).gauge(metric, v).text() for rank, v in values.items())


def test_rank_imbalance_reads_gauges_per_rank(cli, tmp_path):
    """The aibrix#1614 shape: gen_throughput ~141 tok/s on some ranks, ~35 on others, queues empty."""
    text = _sglang_ranks({"0": 35.4, "1": 35.4, "2": 141.7, "3": 141.7})
    items = levels(run(cli, "--metrics", write(tmp_path, "r.prom", text)))
    assert [(i["code"], i["confidence"]) for i in items] == [("L5", "medium")]
    assert items[0]["evidence"][0]["text"] == (
        "data-parallel ranks read generation throughput of 142 (dp_rank 2) to 35 (dp_rank 0) at the scrape: 4.0x "
        "(>= 2x) (dp_rank 0: 35, dp_rank 1: 35, dp_rank 2: 142, dp_rank 3: 142)"
    )
    assert items[0]["evidence"][0]["signals"] == {
        "gen_throughput_by_rank": {"0": 35.4, "1": 35.4, "2": 141.7, "3": 141.7}
    }
    even = _sglang_ranks({"0": 120.0, "1": 100.0})
    assert levels(run(cli, "--metrics", write(tmp_path, "e.prom", even))) == []
    idle = _sglang_ranks({"0": 0.0, "1": 6.0})  # under 10 tok/s everywhere: nothing to split
    assert levels(run(cli, "--metrics", write(tmp_path, "i.prom", idle))) == []


def test_several_models_on_one_engine_are_l4_structure_with_numbers_per_model(cli, tmp_path):
    text = (
        scrapes.vllm(model="meta-llama/Llama-2-7b-hf").counter("vllm:request_success", 2, finished_reason="stop").text()
        + scrapes.vllm(model="sql-lora").counter("vllm:request_success", 1, finished_reason="stop").text()
    )
    items = levels(run(cli, "--metrics", write(tmp_path, "m.prom", text)))
    assert [(i["code"], i["confidence"]) for i in items] == [("L4", "low")]
    assert items[0]["evidence"][0]["text"].startswith(
        "2 models share one engine (requests finished since the engine started: meta-llama/Llama-2-7b-hf: 2, "
        "sql-lora: 1)"
    )


def test_aborts_on_a_disaggregated_server_point_to_the_hand_off(cli, tmp_path):
    reg = scrapes.sglang().counter("sglang:num_requests", 217).counter("sglang:num_aborted_requests", 157)
    reg.histogram("sglang:kv_transfer_latency_ms", [])
    items = levels(run(cli, "--metrics", write(tmp_path, "pd.prom", reg.text())))
    assert items[0]["code"] == "L5" and items[0]["evidence"][0]["rule"] == "failed-requests"
    assert (
        "on a disaggregated prefill/decode server (it exposes sglang:kv_transfer_latency_ms)"
        in (items[0]["evidence"][0]["text"])
    )
    alone = scrapes.sglang().counter("sglang:num_requests", 217).counter("sglang:num_aborted_requests", 157)
    assert [i["code"] for i in levels(run(cli, "--metrics", write(tmp_path, "a.prom", alone.text())))] == ["L2", "L6"]


def test_a_long_speculative_draft_that_pays_is_not_low_acceptance(cli, tmp_path):
    """The MTP-8 shape of vllm#48892: 44% of draft tokens accepted, yet 4.5 tokens a step."""
    reg = scrapes.vllm().counter("vllm:spec_decode_num_drafts", 11043)
    reg.counter("vllm:spec_decode_num_draft_tokens", 88344).counter("vllm:spec_decode_num_accepted_tokens", 38611)
    assert levels(run(cli, "--metrics", write(tmp_path, "s.prom", reg.text()))) == []


def test_a_components_scrape_is_recognised_not_diagnosed(cli, tmp_path):
    result = run(cli, "--metrics", write(tmp_path, "l.prom", "lmcache:num_retrieve_requests_total 0\n"))
    assert (result.code, result.out) == (0, "[]\n")
    assert "holds samples of a component beside an engine (1 of LMCache): recognised, but no rule reads it" in (
        result.err
    )


def test_the_measurements_pages_refusal_and_comparison_examples_are_what_invmap_says(cli):
    from conftest import REPO

    page = (REPO / "docs" / "measurements.md").read_text(encoding="utf-8")
    refused = cli("triage", "--metrics", "-", input="hello world\n")
    assert refused.code == 3 and f"  {refused.err.strip()}\n" in page
    fixtures = REPO / "tests" / "fixtures" / "measurements"
    compared = cli(
        "triage",
        "--bench",
        str(fixtures / "vllm-kimi-k2-fp8-dcp8-1.txt"),
        "--bench",
        str(fixtures / "vllm-kimi-k2-fp8-tp-1.txt"),
        "--json",
    )
    shown = [f"  {i['code']}  {e['rule']}  {e['text']}" for i in json.loads(compared.out) for e in i["evidence"]]
    assert shown and all(f"{line}\n" in page for line in shown), shown
    regressed = cli("triage", "--bench", str(fixtures / "vllm-sched-refactor-before-1.txt"),
                    "--bench", str(fixtures / "vllm-sched-refactor-after-1.txt"), "--json")  # fmt: skip
    shown = [f"  {i['code']}  {e['rule']}  {e['text']}" for i in json.loads(regressed.out) for e in i["evidence"]]
    assert len(shown) == 1 and f"{shown[0]}\n" in page, shown
    small = cli("triage", "--bench", str(fixtures / "vllm-padding-scheduler-before-1.txt"),
                "--bench", str(fixtures / "vllm-padding-scheduler-after-1.txt"))  # fmt: skip
    said = small.err.splitlines()[-2:]
    assert said[1].startswith("throughput fell: ") and "".join(f"  {line}\n" for line in said) in page, said


def test_histograms_that_contradict_the_scrape_are_flagged_not_diagnosed(cli, tmp_path):
    """Issue 41 section 3: a TTFT sum implying microsecond first tokens, or far more first tokens than prompts,
    is left out with the reason, so queue-in-ttft (which would fire on these numbers) does not."""
    micro = scrapes.vllm().histogram("vllm:time_to_first_token_seconds", [0.000001] * 100)
    micro.histogram("vllm:request_queue_time_seconds", [0.0000008] * 100)
    result = run(cli, "--metrics", write(tmp_path, "u.prom", micro.text()))
    assert levels(result) == []
    assert "inconsistent: its sum implies a mean TTFT of 1 us over 100 requests, which no engine gives" in result.err
    more = scrapes.vllm().histogram("vllm:time_to_first_token_seconds", [2.0] * 500)
    more.histogram("vllm:request_prompt_tokens", [100] * 100).histogram("vllm:request_queue_time_seconds", [1.6] * 500)
    result = run(cli, "--metrics", write(tmp_path, "m.prom", more.text()))
    assert levels(result) == []
    assert "inconsistent: 500 first tokens observed but 100 prompts (vllm:request_prompt_tokens)" in result.err
    alike = scrapes.vllm().histogram("vllm:time_to_first_token_seconds", [2.0] * 100)
    alike.histogram("vllm:request_prompt_tokens", [100] * 100).histogram("vllm:request_queue_time_seconds", [1.6] * 100)
    assert [i["code"] for i in levels(run(cli, "--metrics", write(tmp_path, "a.prom", alike.text())))] == ["L2"]


def test_not_checked_comes_after_the_verdict_one_line_a_family_and_all_with_verbose(cli, tmp_path):
    path = write(tmp_path, "w.prom", _waiting())
    short = run(cli, "--metrics", path).err.splitlines()
    full = run(cli, "--metrics", path, "--verbose").err.splitlines()
    unchecked = [line for line in full if line.startswith("not checked: ")]
    assert len(unchecked) == len(set(unchecked)) > 3
    assert [line for line in short if line.startswith("not checked: ")] == [
        *unchecked[:3],
        f"not checked: {len(unchecked) - 3} more (families of signals; --verbose lists them)",
    ]
    assert all(line.startswith("not checked: ") for line in short[-4:])  # said last, after the verdict
    idle = run(cli, "--metrics", write(tmp_path, "i.prom", scrapes.vllm().gauge("vllm:num_requests_running", 0).text()))
    said = idle.err.splitlines()
    verdict = next(n for n, line in enumerate(said) if line.startswith(("healthy by", "not enough signal")))
    assert [n for n, line in enumerate(said) if line.startswith("not checked: ")] == list(range(verdict + 1, len(said)))


def test_the_bandwidth_bound_of_one_request_is_said_in_the_singular(cli, tmp_path):
    reg = scrapes.vllm().gauge("vllm:num_requests_running", 1)
    reg.histogram("vllm:request_time_per_output_token_seconds", [0.0055] * 200)
    reg.histogram("vllm:request_prompt_tokens", [1000] * 200)
    reg.histogram("vllm:request_generation_tokens", [200] * 200)
    path = write(tmp_path, "one.prom", reg.text())
    found = evidence(levels(run(cli, "--metrics", path, "--model", "llama-3.1-8b", "--bandwidth", "3.35e12")), "L1")
    assert len(found) == 1 and "weights and the KV of 1 request of 1,100 tokens at 3.35 TB/s" in found[0], found


@pytest.mark.parametrize("prompt", [1000, 9.5e8])  # 9.5e8 + 2e8 / 2 tokens: past the roofline's context bound
def test_a_config_the_bound_cannot_read_is_exit_3_whatever_context_is_measured(cli, tmp_path, prompt):
    reg = scrapes.vllm().gauge("vllm:num_requests_running", 4)
    reg.histogram("vllm:request_time_per_output_token_seconds", [0.0055] * 200)
    reg.histogram("vllm:request_prompt_tokens", [prompt] * 200)
    reg.histogram("vllm:request_generation_tokens", [2e8] * 200)
    config = tmp_path / "config.json"
    shape = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": "big", "intermediate_size": 14336, **shape}))
    result = cli(
        "triage", "--metrics", write(tmp_path, "s.prom", reg.text()), "--model", str(config), "--bandwidth", "3.35e12"
    )
    assert (result.code, result.out) == (3, "")
    assert result.err == f"Error: {config}: 'hidden_size' must be a positive integer, not \"big\"\n"
