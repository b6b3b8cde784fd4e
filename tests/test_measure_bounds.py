"""Numbers that cannot be (issue 38, the measurement items): every value read from a scrape, a
benchmark or a URL passes a declared range, memory is bounded by the work, malformed URLs and special
files are refused, and no answer holds NaN or Infinity. Each item through the CLI, then property
tests that throw extreme and malformed numbers at both readers."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import time

import pytest
import scrapes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from misbehaving import Server, answer, fixed

from conftest import REPO, installed_invmap
from invmap.measure import names, scrape


def write(tmp_path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def triage(cli, *args: str, input: str | None = None):
    result = cli("triage", *args, "--json", input=input)
    assert "Traceback" not in result.err
    return result


def rules_fired(result) -> list[str]:
    assert result.code == 0, result.err
    return [e["rule"] for item in json.loads(result.out) for e in item["evidence"]]


@pytest.fixture
def caps():
    """Run with small series caps (the mechanism, without a large file)."""
    shipped = names.DECLARED

    def use(per_metric: int, in_all: int = 100_000) -> None:
        names.use(dataclasses.replace(shipped, series_per_metric=per_metric, series_in_all=in_all))

    yield use
    names.use(shipped)


# --- 1. memory bounded by the work -------------------------------------------------------------------------


def _distinct(n: int, metric: str = "vllm:num_requests_waiting", value: float = 1) -> str:
    return f"# TYPE {metric} gauge\n" + "".join(f'{metric}{{engine="{i}"}} {value}\n' for i in range(n))


def test_series_past_the_per_metric_cap_are_counted_and_the_signal_left_out(cli, tmp_path, caps):
    caps(100)
    text = _distinct(150) + "vllm:kv_cache_usage_perc 0.1\n"
    result = triage(cli, "--metrics", write(tmp_path, "s.prom", text))
    assert rules_fired(result) == []  # 150 queues summed over 100 of them would be a wrong number
    warning = f"{tmp_path / 's.prom'}: vllm:num_requests_waiting has 50 more series past the first 100 (the most of one metric invmap keeps): counted, not read"
    assert warning in result.err.splitlines()
    assert f"left out: waiting (requests queued, not yet scheduled): {warning}" in result.err.splitlines()
    caps(1000)  # under the cap, the same scrape is read
    assert rules_fired(triage(cli, "--metrics", write(tmp_path, "s.prom", text))) == ["waiting-with-room"]


def test_series_past_the_cap_of_all_metrics_are_counted_too(cli, tmp_path, caps):
    caps(1000, in_all=120)
    text = _distinct(100) + _distinct(40, "vllm:num_requests_running")
    result = triage(cli, "--metrics", write(tmp_path, "s.prom", text))
    assert "vllm:num_requests_running has 20 more series past the first 20 (the most of all metrics, 120" in result.err
    assert "left out: running (requests in the running batch)" in result.err


def _peak(*args: str) -> tuple[int, int, str, str]:
    """Exit code, peak resident MiB, stdout and stderr of the installed invmap."""
    probe = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n"
        "print(done.stdout, end='')\n"
        "sys.stderr.write(done.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, installed_invmap(), *args], capture_output=True, text=True)
    head, _, out = done.stdout.partition("\n")
    code, peak = head.split()
    return int(code), int(peak), out, done.stderr


def test_a_scrape_of_endless_distinct_series_is_read_in_bounded_memory(tmp_path):
    """Issue 38 item 1: 52 MB of `vllm:num_requests_running{engine="N"} 1` took 445 MB; series past the
    cap are counted, and once a metric is past it its lines are not even parsed."""
    path = tmp_path / "distinct.prom"
    with open(path, "w", encoding="utf-8") as out:
        out.write("# TYPE vllm:num_requests_running gauge\n")
        for chunk in range(0, 600_000, 50_000):
            out.write("".join(f'vllm:num_requests_running{{engine="{i}"}} 1\n' for i in range(chunk, chunk + 50_000)))
    started = time.perf_counter()
    code, peak, out, err = _peak("triage", "--metrics", str(path), "--json")
    assert (code, out) == (0, "[]\n"), err
    assert peak < 100, f"peak {peak} MiB"
    assert time.perf_counter() - started < 30
    assert "vllm:num_requests_running has 590,000 more series past the first 10,000" in err


def test_a_scrape_file_over_the_cap_is_refused_before_a_byte_is_read(cli, tmp_path):
    path = tmp_path / "huge.prom"
    with open(path, "wb") as out:
        out.truncate(scrape.CAP + 1)  # sparse: no disk, no time
    result = triage(cli, "--metrics", str(path))
    assert (result.code, result.err) == (
        3,
        f"Error: {path}: is larger than 256 MiB, the most invmap reads of one scrape\n",
    )


def test_stdin_over_the_cap_is_refused_as_a_file_is(cli, monkeypatch):
    monkeypatch.setattr(scrape, "CAP", 1000)
    result = triage(cli, "--metrics", "-", input="vllm:num_requests_waiting 1\n" * 100)
    assert (result.code, result.err) == (
        3,
        "Error: stdin: is larger than 256 MiB, the most invmap reads of one scrape\n",
    )


def _gzipped_scrape(size: int) -> bytes:
    """An HTTP answer whose gzip body decodes to `size` bytes of 1 KB lines of a metric invmap does
    not read, then one vLLM gauge (a few hundred KB on the wire: the size is the decoded one)."""
    import zlib

    line = b'other_metric{a="' + b"x" * 1000 + b'"} 1\n'
    block = line * (2**20 // len(line))
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    body = b"".join(packer.compress(block) for _ in range(size // len(block)))
    body += packer.compress(b"vllm:num_requests_waiting 0\n") + packer.flush()
    return answer(body, headers={"Content-Encoding": "gzip", "Content-Type": "text/plain"})


@pytest.mark.parametrize(
    "size, code, said",
    [
        (120 * 2**20, 0, ""),  # read: a body of half the cap
        (300 * 2**20, 4, "sent an answer larger than 256 MB"),  # refused at the cap
    ],
)
def test_a_scrape_over_http_is_read_or_refused_in_bounded_memory(size, code, said):
    """Issue 38 item 1: over HTTP the 256 MB cap still allowed ~2.3 GB; then the body was held whole
    (a 250 MB body peaked at 520 MB). It is spooled to a temporary file and read a line at a time."""
    with Server(fixed(_gzipped_scrape(size))) as server:
        got, peak, out, err = _peak("triage", "--metrics", server.url + "/metrics", "--json")
    assert "Traceback" not in err
    assert got == code, err
    assert peak < 100, f"peak {peak} MiB"
    if code == 0:
        assert out == "[]\n" and "totals since the engine started (vLLM, one scrape)" in err
    else:
        assert (out, err) == ("", f"Error: {server.url}/metrics {said}\n")


# --- 3. URLs parsed inside the network helper's error handling -------------------------------------------


@pytest.mark.parametrize(
    "url, why",
    [
        ("http://127.0.0.1:abc/", " (Port could not be cast to integer value as 'abc')"),
        ("http://[::1", " (Invalid IPv6 URL)"),
        ("http://127.0.0.1:99999/metrics", " (Port out of range 0-65535)"),
        ("http://a\x1b]0;x\x07b/metrics", ": it holds a space or a control character"),
        ("http:///metrics", ": it names no host"),
    ],
)
def test_a_malformed_url_is_a_usage_error_naming_it(cli, url, why):
    result = triage(cli, "--metrics", url)
    shown = url.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert (result.code, result.out, result.err) == (2, "", f"Error: '{shown}' is not a valid URL{why}\n")


def test_a_malformed_service_url_in_the_environment_is_a_usage_error(cli, tmp_path):
    own = tmp_path / "own.toml"
    own.write_bytes((REPO / "catalog.toml").read_bytes())
    before = own.read_bytes()
    cells = ["--type", "Current", "--layer", "L3", "--mechanism", "m", "--objective", "o", "--question", "q"]
    result = cli("-c", str(own), "add", "--from", "2407.00079", *cells, "--availability", "a",
                 env={"INVMAP_ARXIV_API": "http://[::1"})  # fmt: skip
    assert (result.code, result.out) == (2, "")
    assert (
        result.err.startswith("Error: 'http://[::1?id_list=2407.00079")
        and "is not a valid URL (Invalid IPv6 URL)" in result.err
    )
    assert own.read_bytes() == before


def test_a_malformed_link_in_a_catalog_is_reported_dead(cli, tmp_path):
    own = tmp_path / "own.toml"
    own.write_text(
        (REPO / "catalog.toml")
        .read_text(encoding="utf-8")
        .replace('url = "https://inferenceengineering.tech/"', 'url = "http://[::1"', 1),
        encoding="utf-8",
    )
    result = cli("-c", str(own), "check", "--links", "kiely-guide", "--json")
    assert result.code == 1, result.err
    [row] = json.loads(result.out)
    assert (row["url"], row["status"], row["error"]) == (
        "http://[::1",
        "dead",
        "'http://[::1' is not a valid URL (Invalid IPv6 URL)",
    )


def test_a_redirect_to_a_malformed_url_is_the_servers_broken_answer(cli):
    with Server(fixed(answer(b"", "302 Found", {"Location": "http://[::1/x"}))) as server:
        result = triage(cli, "--metrics", server.url + "/metrics")
    assert (result.code, result.out) == (4, "")
    assert result.err.startswith(f"Error: cannot ask {server.url}/metrics") and "location" in result.err.lower()
    assert len(result.err.splitlines()) == 1


# --- 5, 8, 10. impossible measurements are never diagnosed ------------------------------------------------

IMPOSSIBLE = {
    "negative preemptions": (
        "vllm:num_preemptions_total{engine=\"0\"} -5\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.95\n",
        "preemptions",
        'vllm:num_preemptions_total{engine="0"} is -5, outside 0 to 1e15 requests',
    ),
    "KV usage of 5": (
        "vllm:kv_cache_usage_perc{engine=\"0\"} 5.0\nvllm:num_preemptions_total{engine=\"0\"} 48\n",
        "kv_usage",
        'vllm:kv_cache_usage_perc{engine="0"} is 5, outside 0 to 1',
    ),
    "KV usage of 1e308": (
        "vllm:kv_cache_usage_perc{engine=\"0\"} 1e308\nvllm:num_preemptions_total{engine=\"0\"} 48\n",
        "kv_usage",
        'vllm:kv_cache_usage_perc{engine="0"} is 1e308, outside 0 to 1',
    ),
    "an acceptance of -5": (
        'sglang:spec_accept_rate{dp_rank="0"} -5\n',
        "spec_accept_rate",
        'sglang:spec_accept_rate{dp_rank="0"} is -5, outside 0 to 1',
    ),
    "a rank with -10 tokens": (
        'vllm:generation_tokens_total{engine="0"} 5000\nvllm:generation_tokens_total{engine="1"} -10\n',
        "generation_tokens",
        'vllm:generation_tokens_total{engine="1"} is -10, outside 0 to 1e15 tokens',
    ),
    "a bucket bound of NaN": (
        'vllm:inter_token_latency_seconds_bucket{le="NaN"} 900\nvllm:inter_token_latency_seconds_bucket{le="+Inf"} 1000\n'
        "vllm:inter_token_latency_seconds_count 1000\nvllm:inter_token_latency_seconds_sum 30\nvllm:prompt_tokens_total 5000\n",
        "itl",
        'vllm:inter_token_latency_seconds_bucket{le="NaN"} has a bucket bound that is not a number (le is NaN or missing)',
    ),
    "a negative bucket bound": (
        'vllm:inter_token_latency_seconds_bucket{le="-1"} 900\nvllm:inter_token_latency_seconds_bucket{le="+Inf"} 1000\n'
        "vllm:inter_token_latency_seconds_count 1000\nvllm:inter_token_latency_seconds_sum 30\nvllm:prompt_tokens_total 5000\n",
        "itl",
        'vllm:inter_token_latency_seconds_bucket{le="-1"} has a bucket bound le=-1: the bound is -1, outside 0 to 1,000,000,000 s',
    ),
    "two series summing past any float (issue 38 item 5)": (
        'vllm:num_preemptions_total{engine="0"} 1.7e308\nvllm:num_preemptions_total{engine="1"} 1.7e308\n'
        'vllm:kv_cache_usage_perc{engine="0"} 0.99\n',
        "preemptions",
        'vllm:num_preemptions_total{engine="0"} is 1.7e308, outside 0 to 1e15 requests (and 1 more value outside the range)',
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(IMPOSSIBLE))
def test_an_impossible_value_leaves_its_signal_out_and_names_it(cli, tmp_path, case):
    text, signal, said = IMPOSSIBLE[case]
    path = write(tmp_path, "s.prom", text)
    result = triage(cli, "--metrics", path)
    assert result.code == 0, result.err
    items = json.loads(result.out)
    assert all(e["signals"].get(signal) is None for i in items for e in i["evidence"])  # never read as a number
    meaning = names.BY_SIGNAL[signal].meaning
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if said.split(" ", 1)[0] in ln)
    assert f"left out: {signal} ({meaning}): {path}:{line}: {said}" in result.err.splitlines(), result.err


def test_a_window_from_minus_to_plus_the_largest_float_is_no_number(cli, tmp_path):
    before = write(
        tmp_path, "b.prom", 'vllm:num_preemptions_total{engine="0"} -1.7e308\nvllm:kv_cache_usage_perc 0.95\n'
    )
    after = write(tmp_path, "a.prom", 'vllm:num_preemptions_total{engine="0"} 1.7e308\nvllm:kv_cache_usage_perc 0.95\n')
    result = triage(cli, "--metrics", before, "--metrics", after, "--interval", "60s")
    assert rules_fired(result) == []
    assert (
        f"left out: preemptions (running requests evicted for lack of KV (vLLM preemptions, SGLang retractions)): {after}:1:"
        in result.err
    )


def test_a_running_gauge_no_engine_has_is_the_files_fault_not_an_options(cli, tmp_path):
    """Issue 38 item 10: 1e12 running requests said `--batch-size must be at most ...` (exit 2)."""
    path = write(tmp_path, "s.prom", 'vllm:num_requests_waiting 0\nvllm:num_requests_running{engine="0"} 1e12\n')
    for extra in ((), ("--model", "llama-3.1-8b", "--bandwidth", "3.35e12")):
        result = triage(cli, "--metrics", path, *extra)
        assert (result.code, result.out) == (3, "")
        assert result.err == (
            f'Error: {path}:2: vllm:num_requests_running{{engine="0"}} is 1e12, outside 0 to 1,000,000,000 requests '
            "(running: requests in the running batch)\n"
        )


def test_a_healthy_verdict_says_what_was_left_out(cli, tmp_path):
    path = write(tmp_path, "s.prom", "vllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 7\n")
    result = triage(cli, "--metrics", path)
    assert "healthy by these signals: 0 waiting; left out (see above): kv_usage" in result.err.splitlines()


# --- 6, 8. benchmark files -------------------------------------------------------------------------------------

BAD_BENCH = {
    "completed NaN (JSON)": ("b.json", '{"completed": "NaN", "failed": 0}', "b.json:1: completed is NaN, not a number (0 to 1e12 requests)"),
    "successful requests nan (summary)": (
        "b.txt",
        "============ Serving Benchmark Result ============\nSuccessful requests:   nan\nMean TTFT (ms):  5\n",
        "b.txt:2: Successful requests is NaN, not a number (0 to 1e12 requests)",
    ),
    "benchmarks that are a number": ("b.json", '{"benchmarks": 5}', "b.json: key 'benchmarks' holds no benchmark"),
    "benchmarks that are true": ("b.json", '{"benchmarks": true}', "b.json: key 'benchmarks' holds no benchmark"),
    "a 400-digit count": ("b.json", '{"completed": 1' + "0" * 400 + ', "failed": 0}', "b.json:1: completed is infinite, outside 0 to 1e12 requests"),
    "a 5,000-digit count": ("b.json", '{"completed": 1' + "0" * 5000 + ', "failed": 0}', "b.json: holds an integer of more than 4,300 digits"),
    "a CSV field over 128 KiB": ("b.csv", "Metric,avg\nTime To First Token (ms)," + "1" * 140_000 + "\n", "b.csv: line 2 is not a GenAI-Perf CSV row (field larger than field limit"),
    "a JSON line nested 100,000 deep": ("b.jsonl", '{"completed": 1, "failed": 0}\n' + "[" * 100_000 + "]" * 100_000 + "\n", "b.jsonl: line 2 is nested too deeply"),
    "a count of 1e-300": ("b.json", '{"completed": 1e-300, "failed": 0, "median_tpot_ms": 5}', "b.json:1: completed is 1e-300, not a whole number of requests"),
    "failed requests below zero": ("b.txt", "== Serving Benchmark Result ==\nSuccessful requests: 10\nFailed requests: -3\n", "b.txt:3: Failed requests is -3, outside 0 to 1e12 requests"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_BENCH))
def test_a_benchmark_with_numbers_that_cannot_be_is_refused_naming_them(cli, tmp_path, case):
    name, text, message = BAD_BENCH[case]
    path = write(tmp_path, name, text)
    for extra in ((), ("--model", "llama-3.1-8b", "--bandwidth", "3.35e12")):
        result = triage(cli, "--bench", path, *extra)
        assert (result.code, result.out) == (3, "")
        assert result.err.startswith(f"Error: {tmp_path}/{message}"), result.err


def test_a_benchmark_latency_below_zero_is_left_out_and_named(cli, tmp_path):
    text = json.dumps({"completed": 100, "failed": 0, "request_rate": 4, "median_ttft_ms": -5, "p99_ttft_ms": 10})
    path = write(tmp_path, "b.json", text)
    result = triage(cli, "--bench", path)
    assert (result.code, result.out) == (0, "[]\n")
    assert f"left out: ttft_median: {path}:1: median_ttft_ms is -5, outside 0 to 1,000,000,000 ms" in result.err
    assert "; some numbers left out (see above)" in result.err


def test_a_benchmark_in_which_nothing_completed_is_not_healthy(cli, tmp_path):
    text = json.dumps({"completed": 0, "failed": 10, "request_rate": 4, "median_ttft_ms": 0, "p99_tpot_ms": 0})
    result = triage(cli, "--bench", write(tmp_path, "b.json", text))
    assert (result.code, result.out) == (0, "[]\n")
    lines = result.err.splitlines()
    assert (
        "no request completed" in lines
        and "not enough signal: no request completed, so no latency was measured" in lines
    )
    assert not any(line.startswith("healthy") for line in lines)


def test_a_ratio_of_absurd_latencies_is_never_infinite_or_hundreds_of_digits(cli, tmp_path):
    """Issue 38 item 8: `infx its minimum`."""
    from test_bench_results import guidellm

    report = json.loads(guidellm(errored=0, kind="throughput"))
    successful = report["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]
    successful["min"] = 1e-300
    result = triage(cli, "--bench", write(tmp_path, "g.json", json.dumps(report)))
    texts = [e["text"] for i in json.loads(result.out) for e in i["evidence"]]
    assert texts and all("inf" not in t and len(t) < 300 for t in texts), texts


# --- 9. JSON never holds NaN or Infinity ----------------------------------------------------------------------


def test_the_json_writer_refuses_a_number_json_cannot_hold():
    from invmap.errors import CatalogError
    from invmap.render.machine import json_line, to_json

    for bad in (math.nan, math.inf, -math.inf):
        for write_json in (to_json, json_line):
            with pytest.raises(CatalogError, match="not finite"):
                write_json({"value": bad})
    assert json.loads(to_json({"value": 1.5})) == {"value": 1.5}


def test_a_queue_mean_at_the_sums_bound_is_finite_in_json(cli, tmp_path):
    """Issue 38 item 9: `triage --metrics ... --json` wrote `"queue_mean_s": Infinity`. A histogram's
    sum is bounded (1e30), so the largest mean a scrape can give is a number JSON holds; the `cli`
    fixture parses the answer strictly (no NaN, no Infinity)."""
    text = "".join(f"vllm:{name}_seconds_{part} {value}\n" for name in ("request_queue_time", "time_to_first_token")
                   for part, value in (("sum", "1e30"), ("count", "1")))  # fmt: skip
    result = triage(cli, "--metrics", write(tmp_path, "s.prom", text + "vllm:num_requests_waiting 0\n"))
    assert result.code == 0, result.err
    evidence = [e for item in json.loads(result.out) for e in item["evidence"]]
    assert [(e["rule"], e["signals"]) for e in evidence] == [
        ("queue-in-ttft", {"queue_mean_s": 1e30, "ttft_mean_s": 1e30, "requests": 1})
    ]
    assert not any(word in result.out for word in ("Infinity", "NaN"))


# --- 11, 12, 13. a BOM, an interval, special files ---------------------------------------------------------


def test_a_scrape_starting_with_a_byte_order_mark_is_read(cli, tmp_path):
    body = scrapes.vllm().gauge("vllm:kv_cache_usage_perc", 0.97).counter("vllm:num_preemptions", 48).text()
    result = triage(cli, "--metrics", write(tmp_path, "s.prom", b"\xef\xbb\xbf" + body.encode()))
    assert rules_fired(result) == ["kv-full-preempting"]


def test_two_scrapes_may_be_hours_apart(cli, tmp_path):
    from test_measure import kv_pressure

    before, after = write(tmp_path, "b.prom", kv_pressure(0.95, 2)), write(tmp_path, "a.prom", kv_pressure(0.95, 9))
    result = triage(cli, "--metrics", before, "--metrics", after, "--interval", "2h")
    assert rules_fired(result) == ["kv-full-preempting"]
    assert "window: 120 min (vLLM)" in result.err.splitlines()
    assert "scrape twice yourself" not in result.err  # issue 38 item 12: both were given


SPECIAL = {  # option -> (the command reading it, what a FIFO holds, what that answer starts with)
    "--metrics": (("triage", "--metrics"), "vllm:num_requests_waiting 3\nvllm:kv_cache_usage_perc 0.2\n", "["),
    "--bench": (("triage", "--bench"), '{"completed": 0, "failed": 10, "request_rate": 4}', "[]"),
    "--model": (("estimate", "kv", "--model"), (REPO / "tests/fixtures/configs/Qwen--Qwen3-8B/config.json"), "{"),
}


def _feed(fifo, text: str, delay: float = 0.0):
    """A program writing `text` into the FIFO after `delay` s (its open waits for a reader)."""
    import threading

    def write() -> None:
        time.sleep(delay)
        with open(fifo, "w", encoding="utf-8") as out:
            out.write(text)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def _special(option: str) -> tuple[tuple[str, ...], str, str]:
    command, held, starts = SPECIAL[option]
    return command, held.read_text(encoding="utf-8") if hasattr(held, "read_text") else held, starts


@pytest.mark.parametrize("option", sorted(SPECIAL))
def test_a_fifo_nobody_writes_to_is_refused_within_its_wait_and_a_device_at_once(cli, tmp_path, monkeypatch, option):
    """Issue 38 item 13: `--metrics FIFO`, `--bench FIFO` (and `--model FIFO`) with no writer blocked
    forever. The wait for a writer is FIFO_WAIT (shortened here; the real one is timed below)."""
    from invmap import inputfile

    monkeypatch.setattr(inputfile, "FIFO_WAIT", 0.3)
    command, _, _ = _special(option)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    hint = "" if option == "--model" else "Hint: to stream, pipe it in and give '-' (stdin)\n"
    for path, why in ((str(fifo), "a FIFO no program wrote to within 0.3 s"),
                      ("/dev/null", "a character device, not a regular file")):  # fmt: skip
        started = time.perf_counter()
        result = cli(*command, path)
        assert time.perf_counter() - started < 5
        assert (result.code, result.out, result.err) == (4, "", f"Error: cannot read {path}: it is {why}\n{hint}")


@pytest.mark.parametrize("option", sorted(SPECIAL))
def test_a_fifo_a_program_writes_to_is_read_as_the_same_file_would_be(cli, tmp_path, option):
    """`<(curl ...)` or a named pipe with a writer, at once or a moment after invmap opened it, is
    read; its answer is the regular file's (the path aside)."""
    command, text, starts = _special(option)
    plain = write(tmp_path, "plain", text)
    expected = cli(*command, plain, "--json")
    assert expected.code == 0 and expected.out.startswith(starts), expected.err
    for delay in (0.0, 0.5):
        fifo = tmp_path / f"pipe{delay}"
        os.mkfifo(fifo)
        writer = _feed(fifo, text, delay)
        result = cli(*command, str(fifo), "--json")
        writer.join(5)
        assert result.code == 0, result.err
        assert result.out.replace(str(fifo), plain) == expected.out.replace(fifo.name, "plain")
        assert result.err.replace(str(fifo), plain) == expected.err


def test_the_installed_invmap_gives_up_on_a_fifo_with_no_writer_after_its_wait(tmp_path):
    from invmap.inputfile import FIFO_WAIT

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.perf_counter()
    done = subprocess.run([installed_invmap(), "triage", "--metrics", str(fifo)], capture_output=True, text=True,
                          timeout=FIFO_WAIT + 30)  # fmt: skip
    took = time.perf_counter() - started
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr.startswith(f"Error: cannot read {fifo}: it is a FIFO no program wrote to within {FIFO_WAIT:g} s")
    assert FIFO_WAIT <= took < FIFO_WAIT + 20


# --- property tests: extreme and malformed numbers --------------------------------------------------------------

EXTREME = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, 1.7e308, 5e-324, 1e-300, 1e15, 1e16, 2.5, -5.0]),
    st.integers(min_value=-(10**20), max_value=10**20).map(float),
)
READ = [(s, n) for s in names.SIGNALS for n in s.names]


def _sample(signal_name, value: float, labels: dict[str, str]) -> str:
    signal, name = signal_name
    held = dict(name.labels) | labels
    text = repr(value) if math.isfinite(value) else ("NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf"))
    if signal.kind == "histogram":
        part = labels.get("part", "_count")
        held.pop("part", None)
        if part == "_bucket":
            held["le"] = labels.get("le", "1")
        metric = name.metric + part
    else:
        held.pop("part", None)
        held.pop("le", None)
        metric = name.base
    shown = ",".join(f'{k}="{v}"' for k, v in held.items())
    return f"{metric}{{{shown}}} {text}\n"


SAMPLES = st.lists(
    st.tuples(
        st.sampled_from(READ),
        EXTREME,
        st.fixed_dictionaries(
            {
                "engine": st.sampled_from(["0", "1"]),
                "model_name": st.sampled_from(["a", "b"]),
                "part": st.sampled_from(["_bucket", "_sum", "_count"]),
                "le": st.sampled_from(["0.1", "1", "+Inf", "NaN", "-1", "x"]),
            }
        ),
    ),
    max_size=25,
)
JUNK = st.sampled_from(["", "# HELP x y\n", "not a sample line\n", "x{a=1} 2\n", '{"json": 1}\n', "vllm:x 1 2 3 4\n"])
PROPERTY = settings(max_examples=30, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


@PROPERTY
@given(before=SAMPLES, after=SAMPLES, junk=JUNK)
def test_any_scrape_of_extreme_numbers_is_answered_within_the_contract(cli, tmp_path, before, after, junk):
    """No traceback; exit 0 (read), 2 (two engines) or 3 (not a scrape, or a value the declaration
    refuses); a strict, finite JSON answer; in bounded time."""
    first = write(tmp_path, "b.prom", "".join(_sample(*s) for s in before))
    second = write(tmp_path, "a.prom", "".join(_sample(*s) for s in after) + junk)
    started = time.perf_counter()
    for args in (("--metrics", second), ("--metrics", first, "--metrics", second, "--interval", "30s")):
        result = triage(cli, *args, "--model", "llama-3.1-8b", "--bandwidth", "3.35e12")
        assert result.code in (0, 2, 3), result.err
        if result.code == 0:
            assert _finite(json.loads(result.out))
        else:
            assert result.out == "" and result.err.startswith("Error: ")
    assert time.perf_counter() - started < 10


NUMBERISH = st.one_of(
    EXTREME,
    st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from(["NaN", "inf", "-inf", "1,024", "", "x", "1e999", True, None, [], {}, [1], {"a": 1}]),
)
BENCH_KEYS = ["completed", "failed", "request_rate", "max_concurrency", "concurrency", "duration", "total_input_tokens",
              "total_output_tokens", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
              "median_itl_ms", "p99_itl_ms", "spec_decode_acceptance_rate", "max_concurrent_requests", "ttfts",
              "accept_length"]  # fmt: skip


def _csv_cell(value) -> str:
    """A generated value as a GenAI-Perf CSV cell: quoted when it holds a comma, as GenAI-Perf writes."""
    text = "" if value is None else str(value)
    return '"' + text.replace('"', '""') + '"' if "," in text or '"' in text else text


@PROPERTY
@given(
    run=st.dictionaries(st.sampled_from(BENCH_KEYS), NUMBERISH, min_size=1),
    guide=st.dictionaries(st.sampled_from(["successful", "errored"]), NUMBERISH),
    shape=st.sampled_from(["json", "jsonl", "guidellm", "summary", "genai-perf csv"]),
)
def test_any_benchmark_of_extreme_numbers_is_answered_within_the_contract(cli, tmp_path, run, guide, shape):
    """No traceback; exit 0 (read) or 3 (a number the declaration refuses, or no benchmark); a
    strict, finite JSON answer; in bounded time. Every shape `bench.read` takes: vllm bench serve's
    JSON and summary, SGLang's JSON lines, GuideLLM's report, GenAI-Perf's CSV export."""
    run.setdefault("completed", 10)
    if shape == "json":
        text = json.dumps(run)
    elif shape == "jsonl":
        text = json.dumps(run) + "\n" + json.dumps({**run, "completed": 5}) + "\n"
    elif shape == "guidellm":
        text = json.dumps({"benchmarks": [{"config": {"strategy": {"type_": "throughput"}},
                                           "metrics": {"request_totals": guide, "time_to_first_token_ms": {
                                               "successful": {"median": run.get("median_ttft_ms"), "min": run.get("p99_ttft_ms")}}}}]})  # fmt: skip
    elif shape == "summary":
        text = "== Serving Benchmark Result ==\n" + "".join(f"{k.replace('_', ' ')}: {v}\n" for k, v in run.items())
        text += f"Successful requests: {run['completed']}\nMedian TTFT (ms): {run.get('median_ttft_ms', 1)}\n"
    else:
        cell = [_csv_cell(run.get(k)) for k in ("median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_itl_ms")]
        text = (f"Metric,avg,min,max,p99,p50\nTime To First Token (ms),{cell[0]},{cell[1]},{cell[0]},{cell[1]},{cell[0]}\n"
                f"Inter Token Latency (ms),{cell[2]},{cell[3]},{cell[2]},{cell[3]},{cell[2]}\n\nMetric,Value\n"
                f"Request Throughput (per sec),{_csv_cell(run.get('request_rate'))}\n"
                f"Request Count (count),{_csv_cell(run['completed'])}\n")  # fmt: skip
    path = write(tmp_path, "b.json", text)
    started = time.perf_counter()
    result = triage(cli, "--bench", path, "--model", "llama-3.1-8b", "--bandwidth", "3.35e12")
    assert time.perf_counter() - started < 5
    assert result.code in (0, 3), result.err
    if result.code == 0:
        assert _finite(json.loads(result.out))
    else:
        assert result.out == "" and result.err.startswith("Error: ")
