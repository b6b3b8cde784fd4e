"""`invmap simulate batching --model M --gpu G`: ticks as engine steps in milliseconds.

A step's time is `estimate roofline`'s bound on the same work, so the references are the roofline's
own answers through the CLI: one request's prefill is its TTFT, one decode step is its TPOT, and B
requests decoding together take the roofline's decode bound at batch B. The budget's defaults are
vLLM's for the GPU, and the tick model's options an engine's budget replaces are refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import on_terminal
from invmap.estimate import gpus, load_model, parameters_of
from invmap.quantities import ENGINE_BUDGET, vllm_serve_batch
from invmap.render.simulate_json import json_pieces
from invmap.simulate import engine, runs
from invmap.simulate.knobs import STRATEGIES


def counted_models() -> list[str]:
    """The shipped models whose parameters invmap counts (a step's operations need them)."""
    from invmap.estimate import model_names

    return [name for name in model_names() if parameters_of(load_model(name)) is not None]


def run_json(cli, *args: str) -> dict:
    result = cli(*args, "--json")
    assert result.code == 0 and result.err == "", (args, result.err)
    return json.loads(result.out)


def trace(tmp_path: Path, *requests: tuple[str, int, int, int]) -> str:
    """A field-guide trace of (id, arrival tick, prompt tokens, output tokens)."""
    path = tmp_path / "requests.json"
    rows = [dict(request_id=r, arrival_tick=a, input_tokens=p, output_tokens=o) for r, a, p, o in requests]
    path.write_text(json.dumps({"requests": rows}), encoding="utf-8")
    return str(path)


def roofline_ms(cli, model: str, gpu: str, *args: str) -> float:
    out = run_json(cli, "estimate", "roofline", "--model", model, "--gpu", gpu, *args)
    return out["results"]["step_time_lower_bound_seconds"] * 1e3


# --- the step is the roofline's bound --------------------------------------------------------------


@pytest.mark.parametrize("model", counted_models())
def test_one_requests_decode_step_is_the_roofline_decode_bound_at_batch_1(cli, tmp_path, model):
    """The prompt of 6,000 tokens passes mistral's 4,096-token window, so its sliding layers count too."""
    path = trace(tmp_path, ("only", 0, 6000, 2))
    for efficiency in ("1", "0.5"):
        out = run_json(
            cli, "simulate", "batching", "--model", model, "--gpu", "h100-sxm", "--efficiency", efficiency,
            "--trace", path,
        )  # fmt: skip
        decode = roofline_ms(
            cli, model, "h100-sxm", "--scenario", "decode", "--batch-size", "1", "--context-tokens", "6000",
            "--efficiency", efficiency,
        )  # fmt: skip
        prefill = roofline_ms(
            cli, model, "h100-sxm", "--scenario", "prefill", "--prompt-tokens", "6000", "--efficiency", efficiency
        )
        for strategy in STRATEGIES:
            row = out["results"][strategy]["per_request"][0]
            # the step that finishes the prompt emits the first token; static first waits for a batch
            waited = 20.0 if strategy == "static" else 0.0  # static_max_wait_ticks 2 of 10 ms
            assert row["queue_ms"] == waited and row["ttft_ms"] == pytest.approx(waited + prefill, rel=1e-12)
            if not waited:
                assert row["ttft_ms"] == prefill
            assert row["tpot_ms"] == pytest.approx(decode, rel=1e-12)
            assert row["completion_latency_ms"] == pytest.approx(waited + prefill + decode, rel=1e-12)
            assert out["results"][strategy]["aggregate"]["steps"] == 2


def test_requests_decoding_together_take_the_roofline_bound_at_their_batch(cli, tmp_path):
    path = trace(tmp_path, *((f"r{n}", 0, 1000, 2) for n in range(4)))
    out = run_json(cli, "simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", path)
    prefill_4 = roofline_ms(cli, "llama-3.1-8b", "h100-sxm", "--scenario", "prefill", "--prompt-tokens", "1000")
    decode_4 = roofline_ms(
        cli, "llama-3.1-8b", "h100-sxm", "--scenario", "decode", "--batch-size", "4", "--context-tokens", "1000"
    )
    rows = out["results"]["continuous"]["per_request"]
    assert [r["tpot_ms"] for r in rows] == pytest.approx([decode_4] * 4, rel=1e-12)
    # the four prompts share one step; a prefill of 1,000 tokens is compute-bound, so the step takes
    # four prefills' operations at the peak (the weights, read once, are not what limits it)
    limit = run_json(
        cli, "estimate", "roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--prompt-tokens", "1000"
    )
    assert limit["limiting_resource"] == "compute"
    assert [r["ttft_ms"] for r in rows] == pytest.approx([4 * prefill_4] * 4, rel=1e-12)


def test_a_later_decode_reads_a_longer_context(cli, tmp_path):
    out = run_json(
        cli, "simulate", "batching", "--strategy", "continuous", "--model", "qwen3-8b", "--gpu", "h200",
        "--trace", trace(tmp_path, ("r", 0, 500, 4)),
    )  # fmt: skip
    row = out["results"]["continuous"]["per_request"][0]
    steps = [
        roofline_ms(cli, "qwen3-8b", "h200", "--scenario", "decode", "--batch-size", "1", "--context-tokens", str(c))
        for c in (500, 501, 502)
    ]
    assert row["completion_ms"] - row["first_token_ms"] == pytest.approx(sum(steps), rel=1e-12)
    assert row["tpot_ms"] == pytest.approx(sum(steps) / 3, rel=1e-12)


def test_runs_of_decodes_worked_as_sums_give_the_step_by_step_answers():
    """The fast path (a run of decode-only steps as sums) against every step worked one at a time, on
    random traces and budgets: the same rows and aggregates, to the bit; and it did take runs."""
    import random

    from invmap.estimate import find_gpu
    from invmap.estimate.roofline_estimate import engine_roofs
    from invmap.simulate.workload import Request

    roofs = engine_roofs({}, load_model("llama-3.1-8b"), find_gpu("h100-sxm"))
    rng = random.Random(43)
    jumped = 0
    for _ in range(40):
        n = rng.randint(1, 24)
        reqs = [Request(f"q{k:02d}", 0, rng.randint(1, 3000), rng.randint(1, 300), rng.randint(0, 1)) for k in range(n)]
        arrivals = sorted(rng.uniform(0, 2) for _ in range(n))
        config = engine.check_config(
            {"max_ticks": 10**9, "static_max_wait_ticks": rng.randint(0, 5)},
            rng.choice([64, 512, 8192]),
            rng.choice([1, 2, 4, 256]),
            rng.choice([1, 10]),
        )
        for strategy in STRATEGIES:
            fast = engine.simulate(config, reqs, arrivals, strategy, roofs)
            slow = engine.simulate(config, reqs, arrivals, strategy, roofs, literal=True)
            assert fast.to_dict() == slow.to_dict() and fast.steps == slow.steps == slow.worked
            jumped += fast.worked < fast.steps
    assert jumped >= 60


# --- the engine's budget -----------------------------------------------------------------------------


@pytest.mark.parametrize("gpu", [g.name for g in gpus() if g.bf16_peak and g.bandwidth])
def test_the_budget_defaults_to_vllm_serves_for_the_gpu(cli, gpu):
    found = next(g for g in gpus() if g.name == gpu)
    out = run_json(cli, "simulate", "batching", "--strategy", "chunked", "--model", "llama-3.1-8b", "--gpu", gpu)
    config = out["results"]["chunked"]["config"]
    large = (found.memory_reported_bytes or found.memory_bytes or 0) >= 70 * 2**30 and "a100" not in gpu
    assert (config["max_num_batched_tokens"], config["max_num_seqs"]) == ((8192, 1024) if large else (2048, 256))
    assert (config["prefill_chunk_tokens"], config["decode_reserve_units"]) == (
        config["max_num_batched_tokens"],
        config["max_num_seqs"],
    )
    said = {i["name"]: i["from"] for i in out["engine"]["inputs"]}
    assert said["max_num_seqs"] == f"vLLM V1's vllm serve default for {found.display}"


def test_vllms_table_as_its_source_writes_it():
    assert vllm_serve_batch(80 * 10**9, "h100-sxm") == (8192, 1024)
    assert vllm_serve_batch(80 * 10**9, "NVIDIA A100-SXM4-80GB") == (2048, 256)
    assert vllm_serve_batch(48 * 10**9, "l40s") == (2048, 256)
    assert vllm_serve_batch(None, "") == (2048, 256)


def test_a_small_budget_spreads_a_prompt_over_steps_and_caps_the_running_requests(cli, tmp_path):
    path = trace(tmp_path, *((f"r{n}", 0, 300, 3) for n in range(3)))
    out = run_json(
        cli, "simulate", "batching", "--strategy", "chunked", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
        "--max-num-batched-tokens", "256", "--max-num-seqs", "2", "--trace", path,
    )  # fmt: skip
    run = out["results"]["chunked"]
    assert run["config"]["max_num_batched_tokens"] == 256 and run["config"]["max_num_seqs"] == 2
    rows = run["per_request"]
    assert rows[2]["queue_ms"] > 0 and rows[0]["queue_ms"] == rows[1]["queue_ms"] == 0
    # 600 prompt tokens at 256 a step: the first two prompts finish in the third step
    assert rows[0]["first_token_ms"] == rows[1]["first_token_ms"]
    said = {i["name"]: i["from"] for i in out["engine"]["inputs"]}
    assert said["max_num_batched_tokens"] == said["max_num_seqs"] == "option"


@pytest.mark.parametrize("name", sorted(engine.REPLACED))
def test_the_tick_models_budget_options_are_refused_with_the_engines_own(cli, name):
    flag = "--" + name.replace("_", "-")
    result = cli("simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", flag, "8")
    assert result.code == 2 and result.out == ""
    assert f"use {engine.REPLACED[name]}" in result.err and flag in result.err


@pytest.mark.parametrize("name", ["model", "gpu", *runs.ENGINE_ONLY])
def test_the_engines_options_alone_are_exit_2(cli, name):
    value = {"model": "llama-3.1-8b", "gpu": "h100-sxm"}.get(name, "1")
    flag = "--" + name.replace("_", "-")
    result = cli("simulate", "batching", flag, value)
    assert result.code == 2 and result.out == "" and result.err.startswith(f"Error: {flag} needs ")


@pytest.mark.parametrize("q", ENGINE_BUDGET, ids=lambda q: q.name)
def test_a_budget_past_its_bounds_is_exit_2_naming_the_option(cli, q):
    for value in ("0", str(q.bounds.high + 1)):
        result = cli("simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", q.flag, value)
        assert result.code == 2 and result.err.startswith(f"Error: {q.flag} must be"), result.err


def test_a_model_or_gpu_without_the_figures_is_refused_naming_what_to_give(cli):
    result = cli("simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "a10g")
    assert result.code == 2 and "--peak-operations-per-second" in result.err
    given = cli(
        "simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "a10g", "--peak", "1.25e14", "--bandwidth", "6e11"
    )
    assert given.code == 0, given.err


# --- times ---------------------------------------------------------------------------------------------


def test_a_trace_in_seconds_keeps_its_times(cli, tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,100,3\n0.0015,200,2\n2.25,50,1\n")
    out = run_json(cli, "simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", str(path))
    rows = out["results"]["continuous"]["per_request"]
    assert [r["arrival_ms"] for r in rows] == [0.0, 1.5, 2250.0]
    assert rows[2]["tpot_ms"] is None and rows[2]["completion_ms"] == rows[2]["first_token_ms"]
    assert out["engine"]["arrivals"] == "the trace's times, to 10 us" and "tick_ms" not in out["trace"]


def test_a_trace_past_its_reading_bound_is_exit_3_and_tick_ms_reads_it(cli, tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,100,3\n20000.0,100,3\n")
    engine_args = ("simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", str(path))
    refused = cli(*engine_args)
    assert refused.code == 3 and refused.out == ""
    assert refused.err.startswith(f"Error: {path}:3:") and "--tick-ms sets it" in refused.err
    out = run_json(cli, *engine_args, "--tick-ms", "1")
    assert out["engine"]["arrivals"] == "the trace's times, to 1 ms"
    assert [r["arrival_ms"] for r in out["results"]["chunked"]["per_request"]] == [0.0, 20_000_000.0]


def test_times_that_do_not_fall_on_a_tick_keep_every_strategy_going(cli, tmp_path):
    """The static batch's deadline, an arrival plus the wait, is the time it is admitted at, however
    the sum rounds (arrivals 0.2401 s and a 20 ms wait once stopped the loop)."""
    from invmap.simulate.workload import BUILT_IN_REQUESTS

    path = tmp_path / "trace.csv"
    rows = [
        f"{((n // 8) * 24 + r.arrival_tick) * 0.01 + 0.0001:.4f},{r.input_tokens},{r.output_tokens}"
        for n, r in ((n, BUILT_IN_REQUESTS[n % 8]) for n in range(80))
    ]
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n" + "\n".join(rows) + "\n")
    out = run_json(cli, "simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", str(path))
    for run in out["results"].values():
        assert run["aggregate"]["completed_requests"] == 80
        for r in run["per_request"]:
            assert r["arrival_ms"] <= r["admitted_ms"] < r["first_token_ms"] <= r["completion_ms"]


def test_a_trace_in_ticks_is_read_at_tick_ms(cli):
    out = run_json(cli, "simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tick-ms", "25")
    rows = out["results"]["static"]["per_request"]
    assert [r["arrival_ms"] for r in rows] == [25.0 * t for t in (0, 0, 1, 2, 3, 5, 6, 8)]
    assert out["results"]["static"]["config"]["tick_ms"] == 25


def test_roofs_so_low_the_clock_runs_past_its_bound_are_exit_2(cli):
    result = cli("simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--efficiency", "1e-300")
    assert result.code == 2 and result.out == "" and "the simulated clock passed 1e+12 s" in result.err
    slow = run_json(cli, "simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--efficiency", "1e-6")
    assert slow["results"]["static"]["aggregate"]["makespan_ms"] > 1e6  # slow, and still a number


def test_max_ticks_counts_engine_steps(cli):
    result = cli("simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--max-ticks", "5")
    assert result.code == 2 and "within --max-ticks 5 engine steps" in result.err


# --- output ----------------------------------------------------------------------------------------------


def test_the_json_is_labelled_and_lists_every_assumption(cli):
    out = run_json(cli, "simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--efficiency", "0.6")
    assert out["evidence"] == "simulated" and sorted(out["results"]) == sorted(STRATEGIES)
    said = " ".join(out["engine"]["limitations"] + out["engine"]["assumptions"])
    for words in ("No kernel launch gaps", "no CPU time", "Datasheet peaks", "derated by --efficiency 0.6"):
        assert words in said
    for run in out["results"].values():
        agg = run["aggregate"]
        assert agg["completed_requests"] == 8 and agg["completed_output_tokens"] == 63
        assert agg["output_tokens_per_second"] == pytest.approx(63 / agg["makespan_ms"] * 1e3)
        assert agg["p50_ttft_ms"] <= agg["p95_ttft_ms"] <= agg["p99_ttft_ms"]


def test_the_fast_json_is_the_standard_encoders_bytes(tmp_path):
    path = tmp_path / "trace.csv"  # a request of one output token: no TPOT (null)
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,100,3\n0.00123,200,1\n")
    for trace_path in (None, str(path)):
        sim = runs.run_batching({}, None, trace_path, None, {"model": "mistral-7b-instruct-v0.1", "gpu": "h200"})
        assert "".join(json_pieces(sim)) == json.dumps(sim.to_json(), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("events", [False, True])
def test_the_view_in_milliseconds_fits_the_terminal_and_splits_no_word(width, events):
    args = ["simulate", "batching", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", *(["--events"] if events else [])]
    lines = on_terminal(args, width)
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    text = " ".join(line.strip() for line in lines)
    assert lines[0].startswith("Batching simulation (simulated):")
    assert "engine steps of Llama 3.1 8B on H100 SXM: at most 8,192 tokens and 1,024 requests a step" in text
    assert "(times in ms)" in text and "No kernel launch gaps" in text and "leaves out:" in text
    header = next(line for line in lines if line.split() == list(STRATEGIES))
    labels = [" ".join(w for w in line.split() if not w[0].isdigit()) for line in lines[lines.index(header) + 1 :][:4]]
    assert labels == ["p50 TTFT", "p95 TTFT", "p50 TPOT", "p95 TPOT"]
    if events:
        assert "continuous: each request (ms)" in text
        assert "r8" in text


def test_the_record_in_milliseconds_is_valid_and_says_its_units(cli, tmp_path):
    target = tmp_path / "orca-ms.json"
    result = cli(
        "simulate", "batching", "--strategy", "continuous", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
        "--record", "orca", "-o", str(target),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert cli("record", "check", str(target)).code == 0
    record = json.loads(target.read_text())
    assert record["result_type"] == "simulated"
    assert {m["name"]: m["unit"] for m in record["derived_metrics"]} == {
        "p95_ttft": "ms",
        "p50_tpot": "ms",
        "output_throughput": "tokens per second",
    }
    assert "H100 SXM" in record["environment"]["hardware"]


def test_readme_names_every_option_of_the_millisecond_mode():
    from test_simulate import _readme_section

    from invmap.options import ENGINE_OPTS

    prose = " ".join(_readme_section().split())
    assert "## In milliseconds (`--model`, `--gpu`)" in _readme_section()
    for opt in ENGINE_OPTS:
        assert any(f"`{flag}`" in prose for flag in opt.flags), opt.flags
    for name in engine.REPLACED:
        assert f"`{'--' + name.replace('_', '-')}`" in prose


@pytest.mark.parametrize("engine", [[], ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]])
def test_one_unfinished_request_is_said_in_the_singular(cli, tmp_path, engine):
    one = tmp_path / "one.json"
    one.write_text('{"requests": [{"request_id": "a", "arrival_tick": 0, "input_tokens": 64, "output_tokens": 8}]}')
    result = cli("simulate", "batching", "--trace", str(one), "--strategy", "continuous", "--max-ticks", "1", *engine)
    steps = " engine steps" if engine else ""
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        f"Error: the simulation did not finish within --max-ticks 1{steps} (1 of 1 request unfinished under "
        "continuous); raise it (at most 1,000,000,000)\n"
    )
