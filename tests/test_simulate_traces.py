"""`--trace FILE`: every form of `traces.FORMS` read (real samples from Vidur, LLMServingSim and the
field guide), told apart by content, and every kind of malformed row refused with exit 3 and
`FILE:LINE[:COL]: field message`; the bound on a trace's size; stdin; files that cannot be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from invmap.simulate import traces
from invmap.simulate import workload as w

TRACES = Path(__file__).parent / "fixtures" / "traces"

# Each form: a real sample, the command that reads it, its count, its first request or event.
SAMPLES = {
    "field-guide": ("field-guide-batching-comparison.json", "batching", 8, w.Request("r1", 0, 8, 8, 0)),
    # 0.0 s and 4.314579 s at 10 ms a tick: ticks 0 and 431
    "vidur": ("vidur-splitwise_conv-head.csv", "batching", 40, w.Request("r01", 0, 374, 44, 0)),
    # 46,926,808 ns at 10 ms a tick: tick 4
    "llmservingsim": ("llmservingsim-example_trace.jsonl", "batching", 10, w.Request("r01", 4, 10, 70, 0)),
    "field-guide-kv": ("field-guide-kv-paged.json", "kv", 9, w.KVEvent(0, "admit", "alpha", 4, 8)),
}


def test_every_form_has_a_sample():
    assert set(SAMPLES) == {f.name for f in traces.FORMS}


@pytest.mark.parametrize("form", traces.FORMS, ids=lambda f: f.name)
def test_every_form_is_read_from_a_real_sample(cli, form):
    name, command, count, first = SAMPLES[form.name]
    trace = traces.read(str(TRACES / name), form.kind, 10)
    assert trace.form == form.name and len(trace.items) == count and trace.items[0] == first
    result = cli("simulate", command, "--trace", str(TRACES / name), "--json")
    assert result.code == 0 and result.err == ""
    out = json.loads(result.out)
    assert out["trace"]["form"] == form.name and out["trace"]["count"] == count
    assert ("tick_ms" in out["trace"]) == (form.name in ("vidur", "llmservingsim"))


def test_times_become_ticks_at_tick_ms(cli):
    vidur = traces.read(str(TRACES / "vidur-splitwise_conv-head.csv"), "requests", 10)
    assert [r.arrival_tick for r in vidur.items[:5]] == [0, 431, 454, 471, 589]  # 5.8926549999999995 s -> 589
    fine = traces.read(str(TRACES / "vidur-splitwise_conv-head.csv"), "requests", 0.5)
    assert [r.arrival_tick for r in fine.items[:3]] == [0, 8629, 9083]
    sim = traces.read(str(TRACES / "llmservingsim-example_trace.jsonl"), "requests", 100)
    assert [r.arrival_tick for r in sim.items] == [0, 3, 4, 5, 5, 6, 6, 8, 9, 10]
    out = json.loads(
        cli(
            "simulate",
            "batching",
            "--trace",
            str(TRACES / "vidur-splitwise_conv-head.csv"),
            "--tick-ms",
            "100",
            "--max-ticks",
            "100000",
            "--json",
        ).out
    )
    assert out["trace"]["tick_ms"] == 100 and out["results"]["static"]["per_request"][1]["arrival_tick"] == 43


def test_tick_ms_with_a_trace_in_ticks_is_exit_2(cli):
    result = cli("simulate", "batching", "--trace", str(TRACES / "field-guide-batching-chunked.json"), "--tick-ms", "5")
    assert result.code == 2 and "counts its arrivals in ticks already" in result.err
    result = cli("simulate", "batching", "--trace", str(TRACES / "vidur-splitwise_conv-head.csv"), "--tick-ms", "0")
    assert result.code == 2 and "--tick-ms must be from 0.001 to 3,600,000, not 0" in result.err


def test_a_trace_for_the_other_command_is_exit_3_naming_it(cli):
    kv_file = str(TRACES / "field-guide-kv-paged.json")
    result = cli("simulate", "batching", "--trace", kv_file)
    assert (
        result.code == 3
        and f"{kv_file}: holds events (the field guide's KV events JSON), not requests: simulate kv reads it"
        in result.err
    )
    csv_file = str(TRACES / "vidur-splitwise_conv-head.csv")
    result = cli("simulate", "kv", "--trace", csv_file)
    assert (
        result.code == 3
        and "holds requests (Vidur's CSV request trace), not events: simulate batching reads it" in result.err
    )


def test_a_trace_from_stdin(cli):
    text = (TRACES / "llmservingsim-example_trace.jsonl").read_text()
    result = cli("simulate", "batching", "--trace", "-", "--strategy", "static", "--json", input=text)
    assert result.code == 0 and json.loads(result.out)["trace"]["path"] == "-"


# --- malformed rows: FILE:LINE[:COL]: message, the field named -----------------------------------

REQUEST = {"request_id": "a", "arrival_tick": 0, "input_tokens": 4, "output_tokens": 2, "priority": 0}
MALFORMED = [
    # field guide JSON: the value's line and column
    ("fg-negative.json", json.dumps({"requests": [REQUEST, {**REQUEST, "request_id": "b", "input_tokens": -4}]}, indent=1),
     "batching", ":13:20: requests[1].input_tokens must be from 1 to 10,000,000 (prompt tokens), not -4"),
    ("fg-float.json", json.dumps({"workload": {"requests": [{**REQUEST, "arrival_tick": 1.5}]}}),
     "batching", ":1:64: workload.requests[0].arrival_tick must be a whole number (a tick), not 1.5"),
    ("fg-missing.json", json.dumps([{"request_id": "a", "input_tokens": 1, "output_tokens": 1}]),
     "batching", ":1:2: [0].arrival_tick is missing"),
    ("fg-unknown.json", json.dumps([{**REQUEST, "ouput_tokens": 3}]),
     "batching", "[0].ouput_tokens is not a request field (a request has request_id, arrival_tick, input_tokens, output_tokens, priority)"),
    ("fg-duplicate.json", json.dumps([REQUEST, REQUEST]),
     "batching", "[1].request_id duplicates [0]'s 'a'"),
    ("fg-nan.json", '[{"request_id": "a", "arrival_tick": NaN, "input_tokens": 1, "output_tokens": 1}]',
     "batching", ":1:38: [0].arrival_tick must be a whole number (a tick), not nan"),
    ("fg-bool.json", json.dumps([{**REQUEST, "priority": True}]),
     "batching", "[0].priority must be a whole number (lower is served first), not true"),
    ("fg-syntax.json", '{"requests": [\n  {"request_id": "a",}\n]}', "batching", ":2:22: is not JSON (Expecting property name"),
    ("fg-array.json", '{"requests": {"a": 1}}', "batching", ": requests must be an array"),
    ("fg-other.json", '{"title": "x"}', "batching", ":1: is JSON but not a trace invmap reads"),
    # KV events
    ("kv-action.json", json.dumps({"events": [{"tick": 0, "action": "grow", "request_id": "a", "tokens": 4}]}),
     "kv", ":1:35: events[0].action must be admit, release, evict or touch, not the text 'grow'"),
    ("kv-reserve.json", json.dumps({"events": [{"tick": 0, "action": "admit", "request_id": "a", "tokens": 8, "reserve_tokens": 4}]}),
     "kv", "events[0].reserve_tokens cannot be smaller than tokens (8), not 4"),
    ("kv-order.json", json.dumps({"events": [{"tick": 5, "action": "touch", "request_id": "a"}, {"tick": 2, "action": "touch", "request_id": "a"}]}),
     "kv", "events[1].tick 2 is before the event before it (5): events go in tick order"),
    # Vidur CSV: line and column of the cell
    ("v-tokens.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,374,44\n0.5,12x,3\n",
     "batching", ":3:5: num_prefill_tokens must be a whole number of tokens, not '12x'"),
    ("v-zero.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,374,0\n",
     "batching", ":2:9: num_decode_tokens must be from 1 to 10,000,000 tokens, not 0"),
    ("v-time.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n-1,3,3\n",
     "batching", ":2:1: arrived_at must be from 0 to 10,000,000 seconds, not -1"),
    ("v-inf.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\ninf,3,3\n", "batching", "arrived_at must be from 0"),
    ("v-fields.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,3\n", "batching", ":2: has 2 fields; the header has 3"),
    ("v-lengths.csv", "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n3772,54,3826,69.8\n",
     "batching", ":1: is a request-length trace (no arrived_at column)"),
    ("v-other.csv", "time,prompt,output\n0,1,1\n", "batching", ":1: is not a trace invmap reads"),
    # LLMServingSim JSON lines: the line and the column of the key's value
    ("s-missing.jsonl", '{"input_toks": 3, "output_toks": 2, "arrival_time_ns": 0}\n{"input_toks": 3, "arrival_time_ns": 5}\n',
     "batching", ":2:1: output_toks is missing"),
    ("s-negative.jsonl", '{"input_toks": 3, "output_toks": 2, "arrival_time_ns": -7}\n',
     "batching", ":1:56: arrival_time_ns must be a whole number of nanoseconds from 0 to 10,000,000,000,000,000, not -7"),
    ("s-text.jsonl", '{"input_toks": "3", "output_toks": 2, "arrival_time_ns": 0}\n',
     "batching", ':1:16: input_toks must be a whole number of tokens, not \'3\''),
    ("s-broken.jsonl", '{"input_toks": 3, "output_toks": 2, "arrival_time_ns": 0}\n{"input_toks": 3,\n',
     "batching", ":2:18: is not JSON (Expecting property name"),
    ("s-agentic.jsonl", '{"session_id": "s", "arrival_time_ns": 0, "sub_requests": [{"input_toks": 3, "output_toks": 2}]}\n',
     "batching", ":1:59: sub_requests: an agentic session"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "command", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_row_is_exit_3_with_its_place_and_field(cli, tmp_path, name, text, command, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = cli("simulate", command, "--trace", str(path))
    assert result.code == 3 and result.out == "", result.err
    assert result.err.startswith(f"Error: {path}"), result.err
    assert message in result.err, result.err


def test_every_form_has_a_malformed_example():
    prefixes = {"field-guide": "fg-", "field-guide-kv": "kv-", "vidur": "v-", "llmservingsim": "s-"}
    assert set(prefixes) == {f.name for f in traces.FORMS}
    for prefix in prefixes.values():
        assert any(name.startswith(prefix) for name, *_ in MALFORMED)


def test_many_problems_are_counted_and_the_first_ten_named(cli, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{**REQUEST, "request_id": f"r{n}", "input_tokens": 0} for n in range(25)], indent=1))
    result = cli("simulate", "batching", "--trace", str(path))
    lines = result.err.splitlines()
    assert result.code == 3 and lines[0] == f"Error: {path} has 25 problems:"
    assert len([line for line in lines if ".input_tokens must be from 1" in line]) == 10
    assert lines[-1] == f"{path}: and 15 more problems"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty: a trace holds requests or KV events"),
        ("\n\n", "is empty"),
        ("[]", "is JSON but not a trace invmap reads"),
        ('{"requests": []}', "holds no requests"),
        ("arrived_at,num_prefill_tokens,num_decode_tokens\n", "holds no requests"),
    ],
)
def test_an_empty_trace_is_exit_3(cli, tmp_path, text, message):
    path = tmp_path / "empty.txt"
    path.write_text(text)
    result = cli("simulate", "batching", "--trace", str(path))
    assert result.code == 3 and message in result.err


def test_files_that_cannot_be_read(cli, tmp_path):
    missing = tmp_path / "nope.csv"
    result = cli("simulate", "batching", "--trace", str(missing))
    assert result.code == 3 and result.err == f"Error: {missing}: no such file\n"
    result = cli("simulate", "batching", "--trace", str(tmp_path))
    assert result.code == 3 and "is a folder, not a trace" in result.err
    binary = tmp_path / "latin1.csv"
    binary.write_bytes(b"arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,\xff,1\n")
    result = cli("simulate", "batching", "--trace", str(binary))
    assert result.code == 3 and f"{binary}:2:5: is not UTF-8 text" in result.err


def test_a_hostile_file_name_is_shown_escaped(cli, tmp_path):
    path = tmp_path / "x\x1b]0;t\x07.csv"
    path.write_text("nonsense\n")
    result = cli("simulate", "batching", "--trace", str(path))
    assert result.code == 3 and "\x1b" not in result.err and "\\x1b]0;t\\x07" in result.err


# --- the bound on a trace ------------------------------------------------------------------------


def test_a_trace_past_the_bound_is_exit_3_naming_the_file_and_the_bound(cli, tmp_path):
    """The real bound: 1,000,001 rows of Vidur's CSV (7 MB)."""
    path = tmp_path / "huge.csv"
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n" + "0,1,1\n" * (w.MAX_REQUESTS + 1))
    result = cli("simulate", "batching", "--trace", str(path))
    assert result.code == 3
    assert result.err == f"Error: {path}: holds more than 1,000,000 requests, the bound of a trace invmap simulates\n"


@pytest.mark.parametrize("form", ["field-guide", "llmservingsim", "field-guide-kv"])
def test_every_form_holds_to_the_bound(cli, tmp_path, monkeypatch, form):
    monkeypatch.setattr(w, "MAX_REQUESTS", 3)
    path = tmp_path / "four"
    if form == "field-guide":
        path.write_text(json.dumps([{**REQUEST, "request_id": f"r{n}"} for n in range(4)]))
    elif form == "llmservingsim":
        path.write_text('{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0}\n' * 4)
    else:
        path.write_text(json.dumps([{"tick": n, "action": "touch", "request_id": "a"} for n in range(4)]))
    result = cli("simulate", "kv" if form == "field-guide-kv" else "batching", "--trace", str(path))
    assert result.code == 3 and "holds more than 3 " in result.err and str(path) in result.err


def test_an_arrival_past_the_tick_bound_names_tick_ms(cli, tmp_path):
    path = tmp_path / "late.jsonl"
    path.write_text('{"input_toks": 1, "output_toks": 1, "arrival_time_ns": 9000000000000000}\n')
    result = cli("simulate", "batching", "--trace", str(path), "--tick-ms", "0.001")
    assert (
        result.code == 3
        and "is tick 9,000,000,000,000, past 1,000,000,000 (at 0.001 ms a tick; --tick-ms sets it)" in result.err
    )
