"""`invmap simulate batching|kv`: the field guide's simulators, number for number.

The reference answers are `ie`'s own: its printout on the built-in traces (tests/fixtures/traces/
ie-simulate-*.json), its experiment records (field-guide-*.json), and its answers on random traces
and configurations written by running ie itself once, outside this repository (ie-random-*.json; tests/fixtures/traces/README.md). The event loop's fast path
(idle jumps, repeated ticks, water-level rounds) and the literal one (a tick and a unit at a time)
are both held to them, and the fast one is checked to have jumped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import on_terminal
from invmap import options as decl
from invmap.render.machine import to_json
from invmap.render.simulate_json import json_pieces
from invmap.simulate import batching, kv, runs
from invmap.simulate.knobs import ALLOCATIONS, BATCHING, KV, STRATEGIES
from invmap.simulate.workload import BUILT_IN_EVENTS, BUILT_IN_REQUESTS, KVEvent, Request

TRACES = Path(__file__).parent / "fixtures" / "traces"


def fixture(name: str) -> dict:
    return json.loads((TRACES / name).read_text(encoding="utf-8"))


def run_json(cli, *args: str) -> dict:
    result = cli(*args, "--json")
    assert result.code == 0 and result.err == "", (args, result.err)
    return json.loads(result.out)


# --- the built-in traces, byte for byte ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["batching"], "ie-simulate-batching.json"),
        (["kv", "--allocation", "paged"], "ie-simulate-kv-paged.json"),
        (["kv", "--allocation", "contiguous"], "ie-simulate-kv-contig.json"),
    ],
)
def test_json_is_ies_printout_byte_for_byte(cli, args, expected):
    result = cli("simulate", *args, "--json")
    assert result.code == 0 and result.err == ""
    assert result.out == (TRACES / expected).read_text(encoding="utf-8")


def test_the_issues_numbers_on_the_built_in_batching_trace(cli):
    """p50/p95 TTFT 9/16, 6/13, 6/12; completion 12/20, 10/18, 9/17; makespan 24, 21, 22; output
    tokens per tick 2.625, 3.0, 2.8636...; 63 tokens, 8 requests, goodput 1.0."""
    results = run_json(cli, "simulate", "batching")["results"]
    assert list(results) == sorted(STRATEGIES)
    wanted = {
        "static": (9, 16, 12, 20, 24, 2.625),
        "continuous": (6, 13, 10, 18, 21, 3.0),
        "chunked": (6, 12, 9, 17, 22, 63 / 22),
    }
    for name, (p50, p95, c50, c95, makespan, rate) in wanted.items():
        a = results[name]["aggregate"]
        assert (a["p50_ttft_ticks"], a["p95_ttft_ticks"]) == (p50, p95)
        assert (a["p50_completion_ticks"], a["p95_completion_ticks"], a["makespan_ticks"]) == (c50, c95, makespan)
        assert a["output_tokens_per_tick"] == rate and round(rate, 4) in (2.625, 3.0, 2.8636)
        assert (a["completed_output_tokens"], a["completed_requests"], a["goodput_request_fraction"]) == (63, 8, 1.0)
        assert results[name]["config"] == {**{k.name: k.default for k in BATCHING}, "seed": 0}


def test_the_issues_numbers_on_the_built_in_kv_trace(cli):
    results = run_json(cli, "simulate", "kv")["results"]
    paged, contiguous = results["paged"]["final_state"], results["contiguous"]["final_state"]
    assert (paged["reserved_blocks"], paged["used_blocks"], paged["free_blocks"]) == (10, 8, 0)
    assert (paged["evicted_blocks"], paged["recomputed_blocks"], paged["fragmentation_blocks"]) == (4, 2, 0)
    assert [a["request_id"] for a in paged["allocations"]] == ["alpha", "epsilon", "zeta"]
    assert [p["physical_block"] for p in paged["allocations"][1]["logical_to_physical"]] == [2, 3, 6, 7, 8]
    refused = [e for e in results["contiguous"]["event_log"] if e["status"] == "failed"]
    assert refused == [
        {
            "action": "admit",
            "detail": "free blocks are fragmented for contiguous allocation",
            "request_id": "epsilon",
            "status": "failed",
            "tick": 6,
        }
    ]
    assert (contiguous["reserved_blocks"], contiguous["used_blocks"], contiguous["free_blocks"]) == (7, 5, 3)
    assert (contiguous["largest_free_span"], contiguous["fragmentation_blocks"]) == (2, 1)


def test_the_built_in_traces_are_the_field_guides():
    record = fixture("field-guide-batching-comparison.json")
    assert [r.to_dict() for r in BUILT_IN_REQUESTS] == [
        {k: v for k, v in r.items() if k not in ("model", "shared_prefix_tokens")}
        for r in record["workload"]["requests"]
    ]
    events = fixture("field-guide-kv-paged.json")["workload"]["events"]
    assert [e.to_dict() for e in BUILT_IN_EVENTS] == events


# --- the experiment files' workloads ------------------------------------------------------------


def test_the_experiment_files_workloads_give_their_artifacts(cli):
    chunked = fixture("field-guide-batching-chunked.json")
    out = run_json(
        cli,
        "simulate",
        "batching",
        "--strategy",
        "chunked",
        "--trace",
        str(TRACES / "field-guide-batching-chunked.json"),
    )
    assert out["results"]["chunked"]["per_request"] == chunked["artifacts"]["per_request"]
    assert {k: v for k, v in out["results"]["chunked"]["config"].items()} == {
        k: v for k, v in chunked["configuration"].items() if k != "strategy"
    }
    comparison = fixture("field-guide-batching-comparison.json")
    out = run_json(cli, "simulate", "batching", "--trace", str(TRACES / "field-guide-batching-comparison.json"))
    assert {name: r["aggregate"] for name, r in out["results"].items()} == comparison["artifacts"]["aggregates"]
    assert out["trace"]["form"] == "field-guide" and out["trace"]["count"] == 8
    paged = fixture("field-guide-kv-paged.json")
    out = run_json(cli, "simulate", "kv", "--allocation", "paged", "--trace", str(TRACES / "field-guide-kv-paged.json"))
    assert out["result"]["event_log"] == paged["artifacts"]["event_log"]
    assert out["result"]["final_state"] == paged["artifacts"]["final_state"]
    assert out["result"]["config"] == paged["configuration"]


def test_a_small_trace_worked_out_by_hand():
    """One request of 3 prompt and 2 output tokens, the defaults (budget 4 with one request active).
    continuous: tick 0 prefills 3 units, and the 4th unit is its first decode (first token at 1);
    tick 1 decodes the last (done at 2). static: a lone request waits 2 ticks (static_max_wait_ticks)
    for a batch, is admitted at 2, prefills at 2 (a prefill tick serves only prefill), decodes both at
    3: first token and completion at 4. chunked: tick 0 reserves 2 units for decode (none to decode),
    prefills 3 (chunk 4), decodes 1 with the last unit; tick 1 decodes the other: as continuous."""
    config = batching.check_config({})
    trace = [Request("only", 0, 3, 2, 0)]
    wanted = {"continuous": (0, 1, 2), "static": (2, 4, 4), "chunked": (0, 1, 2)}
    for name, (admitted, first, done) in wanted.items():
        run = batching.simulate(config, trace, name)
        assert (run.admitted[0], run.first[0], run.done[0]) == (admitted, first, done), name
        assert run.aggregate["makespan_ticks"] == done and run.aggregate["p50_ttft_ticks"] == first


# --- ie's answers on random traces --------------------------------------------------------------


def _requests(case: dict) -> list[Request]:
    return [
        Request(r["request_id"], r["arrival_tick"], r["input_tokens"], r["output_tokens"], r["priority"])
        for r in case["requests"]
    ]


def test_batching_equals_ie_on_random_traces_by_both_paths():
    cases = fixture("ie-random-batching.json")
    ticks = steps = errors = 0
    for n, case in enumerate(cases):
        config = batching.check_config(case["config"])
        for name, expected in case["results"].items():
            for literal in (False, True):
                if "error" in expected:
                    with pytest.raises(Exception, match="did not finish within --max-ticks"):
                        batching.simulate(config, _requests(case), name, literal=literal)
                    errors += 1
                    continue
                run = batching.simulate(config, _requests(case), name, literal=literal)
                assert run.to_dict() == expected, (n, name, literal)
                if not literal:
                    ticks, steps = ticks + run.ticks, steps + run.steps
                else:
                    assert run.steps <= run.ticks
    assert errors >= 10  # some configurations cannot finish in their max_ticks, as ie says
    assert steps * 3 < ticks  # the fast path jumped over most ticks


def test_kv_equals_ie_on_random_traces_with_the_invariants_after_every_event():
    for n, case in enumerate(fixture("ie-random-kv.json")):
        events = [
            KVEvent(e["tick"], e["action"], e["request_id"], e["tokens"], e["reserve_tokens"]) for e in case["events"]
        ]
        c = case["config"]
        for mode, expected in case["results"].items():
            config = kv.check_config(c, mode, c["auto_evict"])
            assert kv.simulate(config, events, check=True).to_dict() == expected, (n, mode)


def test_the_random_traces_reach_every_outcome_of_the_allocator():
    seen = {
        (mode, e["status"], e["detail"].split(" ")[0])
        for case in fixture("ie-random-kv.json")
        for mode, r in case["results"].items()
        for e in r["event_log"]
    }
    for mode in ALLOCATIONS:
        for status in ("allocated", "failed", "released", "discarded", "evicted", "touched", "recomputed", "ignored"):
            assert any(s[0] == mode and s[1] == status for s in seen), (mode, status)
    assert ("contiguous", "failed", "free") in seen  # fragmented


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 30), min_size=1, max_size=8), st.integers(0, 120), st.one_of(st.none(), st.integers(1, 6))
)
def test_a_round_of_units_as_a_water_level_is_the_unit_at_a_time_hand_out(caps, budget, limit):
    from invmap.simulate.batching import _one_at_a_time, shares

    capped = caps if limit is None else [min(c, limit) for c in caps]
    assert shares(capped, budget) == _one_at_a_time(caps, budget, limit)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(1, 60), st.integers(1, 60), st.integers(-1, 1)),
        min_size=1,
        max_size=12,
    ),
    st.integers(1, 9),
    st.integers(1, 6),
    st.integers(0, 2),
    st.integers(1, 8),
)
def test_the_fast_path_answers_as_the_literal_one(rows, capacity, most, bonus, chunk):
    requests = [Request(f"r{n}", a, i, o, p) for n, (a, i, o, p) in enumerate(rows)]
    config = batching.check_config(
        {
            "capacity_units_per_tick": capacity,
            "max_active_requests": most,
            "batch_bonus_units": bonus,
            "prefill_chunk_tokens": chunk,
            "decode_reserve_units": min(2, capacity),
            "max_ticks": 100_000,
        }
    )
    for name in STRATEGIES:
        fast, literal = (
            batching.simulate(config, requests, name),
            batching.simulate(config, requests, name, literal=True),
        )
        assert fast.to_dict() == literal.to_dict()
        assert fast.steps <= literal.steps


def test_long_requests_are_simulated_in_few_steps():
    """A thousand-token decode at 4 units a tick is ~250 identical ticks: one step and a jump."""
    config = batching.check_config({"max_ticks": 10**6})
    run = batching.simulate(config, [Request("long", 0, 2000, 1000, 0), Request("late", 50_000, 4, 4, 0)], "continuous")
    literal = batching.simulate(
        config, [Request("long", 0, 2000, 1000, 0), Request("late", 50_000, 4, 4, 0)], "continuous", literal=True
    )
    assert run.to_dict() == literal.to_dict()
    assert run.ticks == literal.ticks > 50_000 and run.steps < 30 and literal.steps > 700


# --- JSON written a piece at a time -------------------------------------------------------------

IDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)


@settings(max_examples=40, deadline=None)
@given(st.lists(IDS, min_size=1, max_size=6, unique=True))
def test_the_fast_json_is_the_standard_encoders_bytes(ids):
    requests = tuple(Request(rid, n, 3, 2, 0) for n, rid in enumerate(ids))
    sim = runs.Simulation(
        "batching", {s: batching.simulate(batching.check_config({}), requests, s) for s in STRATEGIES}, None, None
    )
    assert "".join(json_pieces(sim)) == to_json(sim.to_json())
    events = tuple(KVEvent(n, "admit", rid, 4, None) for n, rid in enumerate(ids))
    for chosen in (["paged"], list(ALLOCATIONS)):
        runs_ = {a: kv.simulate(kv.check_config({}, a, True), events) for a in chosen}
        sim = runs.Simulation("kv", runs_, None, None)
        assert "".join(json_pieces(sim)) == to_json(sim.to_json())


def test_the_fast_json_holds_large_traces_and_traces_from_files(cli):
    requests = tuple(Request(f"r{n}", n // 3, 1 + n % 7, 1 + n % 5, n % 2) for n in range(5_000))
    config = batching.check_config({"max_ticks": 10**6})
    sim = runs.Simulation("batching", {"chunked": batching.simulate(config, requests, "chunked")}, None, None)
    assert "".join(json_pieces(sim)) == to_json(sim.to_json())
    sim = runs.run_batching({}, None, str(TRACES / "vidur-splitwise_conv-head.csv"), None)
    assert "".join(json_pieces(sim)) == to_json(sim.to_json())


# --- options -------------------------------------------------------------------------------------


def _sample(knob) -> int:
    return knob.default + 1 if knob.default + 1 <= knob.high else knob.low


@pytest.mark.parametrize("knob", BATCHING, ids=lambda k: k.name)
def test_every_batching_option_sets_its_field(cli, knob):
    value = _sample(knob)
    extra = ["--capacity-units-per-tick", "8"] if knob.name == "decode_reserve_units" else []
    extra += ["--max-ticks", "100000"] if knob.name != "max_ticks" else []
    out = run_json(cli, "simulate", "batching", knob.flag, str(value), *extra)
    for r in out["results"].values():
        assert r["config"][knob.name] == value


@pytest.mark.parametrize("knob", (*BATCHING, *KV), ids=lambda k: k.name)
def test_every_number_past_its_bounds_is_exit_2_naming_the_option(cli, knob):
    command = "batching" if knob in BATCHING else "kv"
    for bad in (knob.low - 1, knob.high + 1):
        result = cli("simulate", command, knob.flag, str(bad))
        assert result.code == 2, (knob.name, bad, result.err)
        assert f"Error: {knob.flag} must be from {knob.low:,} to {knob.high:,}, not {bad:,}" in result.err
        assert result.out == ""


@pytest.mark.parametrize("knob", KV, ids=lambda k: k.name)
def test_every_kv_option_sets_its_field(cli, knob):
    out = run_json(cli, "simulate", "kv", knob.flag, str(_sample(knob)))
    for r in out["results"].values():
        assert r["config"][knob.name] == _sample(knob)


def test_no_auto_evict_refuses_zeta_as_ie_does(cli):
    out = run_json(cli, "simulate", "kv", "--allocation", "paged", "--no-auto-evict")
    zeta = next(e for e in out["result"]["event_log"] if e["request_id"] == "zeta")
    assert (zeta["status"], zeta["detail"]) == ("failed", "insufficient free blocks")
    assert out["result"]["config"]["auto_evict"] is False


def test_every_simulation_option_is_declared_once_from_the_knobs():
    for path, knobs in (("simulate batching", BATCHING), ("simulate kv", KV)):
        command = decl.find(path)
        flags = {o.flags[0]: o for o in decl.options_of(command)}
        for k in knobs:
            assert flags[k.flag].kind == "int" and f"Default: {k.default:,}" in flags[k.flag].help
    assert decl.find("simulate").group == "Recreate" and "Recreate" in decl.GROUPS


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["batching", "--strategy", "dynamic"], "--strategy takes static, continuous or chunked, not 'dynamic'"),
        (["kv", "--allocation", "virtual"], "--allocation takes paged or contiguous, not 'virtual'"),
        (["batching", "--max-ticks", "20"], "did not finish within --max-ticks 20"),
        (["batching", "--max-ticks", "5"], "the last request arrives at tick 8, past --max-ticks 5"),
        (
            ["batching", "--decode-reserve-units", "5"],
            "--decode-reserve-units (5) cannot exceed --capacity-units-per-tick (4)",
        ),
        (["batching", "--tick-ms", "5"], "--tick-ms goes with --trace"),
        (["batching", "-o", "x.json"], "-o/--output and --force go with --record SOURCE"),
        (["kv", "--record", "pagedattention"], "--record SOURCE needs -o FILE"),
    ],
)
def test_unusable_values_are_exit_2_and_nothing_is_printed(cli, args, message):
    result = cli("simulate", *args)
    assert result.code == 2 and message in result.err and result.out == "", result.err


def test_strategies_and_allocations_can_be_chosen_together_in_order(cli):
    out = run_json(cli, "simulate", "batching", "--strategy", "chunked,static", "--strategy", "chunked")
    assert list(out["results"]) == ["chunked", "static"]
    lines = on_terminal(["simulate", "batching", "--strategy", "chunked,static"], 80)
    assert any(line.split() == ["chunked", "static"] for line in lines)
    assert list(run_json(cli, "simulate", "kv", "--allocation", "paged,contiguous")["results"]) == [
        "contiguous",
        "paged",
    ]


# --- what a person sees -----------------------------------------------------------------------


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("args", [["batching"], ["batching", "--events"], ["kv"], ["kv", "--events"]], ids=" ".join)
def test_the_side_by_side_view_fits_the_terminal_and_splits_no_word(width, args):
    lines = on_terminal(["simulate", *args], width)
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    text = "\n".join(lines)
    if args[0] == "batching":
        assert lines[0].startswith("Batching simulation (simulated): the field guide's built-in")
        header = next(line for line in lines if line.split() == list(STRATEGIES))
        rows = lines[lines.index(header) + 1 :]
        assert rows[0].split() == ["p50", "TTFT", "9", "6", "6"] and rows[1].split() == [
            "p95",
            "TTFT",
            "16",
            "13",
            "12",
        ]
        assert any(line.split() == ["output", "tokens", "/", "tick", "2.625", "3.0", "2.8636"] for line in rows)
        if "--events" in args:
            assert "static: each request (ticks)" in text
            assert any(line.split() == ["r5", "3", "13", "19", "23", "10", "16", "20"] for line in lines)
    else:
        assert any(line.split() == ["fragmentation", "blocks", "0", "1"] for line in lines)
        assert any(line.split()[:3] == ["epsilon", "2", "3"] for line in lines)  # paged's block table
        assert "free blocks are fragmented" in text.replace("\n", " ")
    for word in ("simulated", "rules:", "leaves out:", "config:"):
        assert word in text


def test_in_a_pipe_the_text_has_no_escape_sequences_and_head_is_quiet(sh):
    done = sh("simulate", "batching", "--events")
    assert done.code == 0 and done.err == "" and "\x1b[" not in done.out
    assert done.out.startswith("Batching simulation (simulated): ")
    from conftest import bash, installed_invmap

    piped = bash(f"'{installed_invmap()}' simulate batching --events | head -1; echo \"${{PIPESTATUS[0]}}\"")
    assert piped.stderr == "" and piped.stdout.splitlines()[-1] == "0"


def test_a_hostile_request_id_is_shown_escaped(cli, tmp_path):
    trace = tmp_path / "evil.json"
    trace.write_text(
        json.dumps(
            {"requests": [{"request_id": "\x1b]0;pwned\x07", "arrival_tick": 0, "input_tokens": 2, "output_tokens": 2}]}
        )
    )
    for fmt in ("table", "plain", "json"):
        out = cli("simulate", "batching", "--trace", str(trace), "--events", "--format", fmt).out
        assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;pwned\\x07" in cli("simulate", "batching", "--trace", str(trace), "--events").out


# --- records and the map ------------------------------------------------------------------------


def test_record_writes_a_valid_simulated_record_that_leaves_the_question_open(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments").mkdir()
    result = cli("simulate", "batching", "--strategy", "continuous", "--record", "orca", "-o", "experiments/orca.json")
    assert result.code == 0, result.err
    assert "Wrote experiments/orca.json: a simulated record addressing orca" in result.err
    record = json.loads((tmp_path / "experiments" / "orca.json").read_text())
    assert record["result_type"] == "simulated" and cli("record", "check", "experiments/orca.json").code == 0
    assert {v["evidence"] for v in record["raw_measurements"] + record["derived_metrics"]} == {"simulated"}
    assert [v["name"] for v in record["derived_metrics"]] == ["p95_ttft", "output_throughput", "goodput"]
    assert record["artifacts"]["simulation"]["results"]["continuous"]["aggregate"]["p95_ttft_ticks"] == 13
    assert len(record["workload"]["requests"]) == 8
    rows = {r["id"]: r for r in json.loads(cli("questions", "--records", "experiments", "--open", "--json").out)}
    assert rows["orca"]["simulated_records"] == [record["record_id"]] and rows["orca"]["records"] == [
        record["record_id"]
    ]
    table = cli("questions", "--records", "experiments", "--open", "--format", "plain").out
    assert f"{record['record_id']} (simulated)" in table
    # a measured record closes it
    draft = json.loads(cli("record", "new", "orca").out)
    from conftest import filled

    (tmp_path / "experiments" / "measured.json").write_text(json.dumps(filled(draft)))
    still_open = {r["id"] for r in json.loads(cli("questions", "--records", "experiments", "--open", "--json").out)}
    assert "orca" not in still_open and "sarathi-serve" in still_open


def test_kv_record_for_both_allocations_prefixes_its_measurements(cli, tmp_path):
    target = tmp_path / "kv.json"
    assert cli("simulate", "kv", "--record", "vattention", "-o", str(target)).code == 0
    record = json.loads(target.read_text())
    names = [v["name"] for v in record["raw_measurements"]]
    assert names == [f"{m}_{k}" for m in ALLOCATIONS for k in ("reserved_blocks", "used_blocks", "free_blocks")]
    assert cli("record", "check", str(target)).code == 0
    assert "contiguous: 7 of 10 blocks reserved, 1 events refused" in record["conclusion"]


def test_sources_name_the_simulations_that_recreate_them_and_each_runs(cli):
    shipped = json.loads(cli("list", "--json").out)
    recreating = {s["id"]: s["recreate"] for s in shipped if s["recreate"]}
    assert recreating == {
        "orca": ["invmap simulate batching --strategy continuous"],
        "pagedattention": ["invmap simulate kv --allocation paged"],
        "sarathi-serve": ["invmap simulate batching --strategy chunked"],
        "vattention": ["invmap simulate kv --allocation contiguous"],
    }
    for commands in recreating.values():
        for command in commands:
            words = command.split()[1:]
            assert words[0] in decl.TOP and cli(*words, "--json").code == 0, command
    shown = cli("show", "sarathi-serve", "--format", "plain").out
    assert "recreate\tinvmap simulate batching --strategy chunked" in shown


def test_recreate_is_invmaps_words_and_not_searched(cli):
    hits = json.loads(cli("search", "simulate", "--json").out)
    assert all("recreate" not in h["matched"] for h in hits)


# --- docs/simulate.md ----------------------------------------------------------------------------------


def _readme_section() -> str:
    import re

    from conftest import REPO

    page = (REPO / "docs" / "simulate.md").read_text(encoding="utf-8")
    assert re.match(r"# Recreate: simulations\n", page)
    return page


def test_docs_recreate_simulations_runs_as_written(tmp_path):
    """Each `sh` block of docs/simulate.md ("Recreate: simulations"), line by line as a user types it in an empty folder;
    every line of the `text` block after it is a line of what those commands printed (in a pipe)."""
    import os
    import re
    import subprocess

    from conftest import installed_invmap

    blocks = re.findall(r"```(sh|text)\n(.*?)```", _readme_section(), re.S)
    env = {**os.environ, "PATH": f"{Path(installed_invmap()).parent}:{os.environ['PATH']}", "COLUMNS": "80"}
    checked = 0
    for n, (lang, body) in enumerate(blocks):
        if lang != "sh":
            continue
        printed: list[str] = []
        for line in (line for line in body.splitlines() if line.strip()):
            done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path, env=env)
            assert done.returncode == 0, (line, done.stderr)
            printed += done.stdout.splitlines()
        assert blocks[n + 1][0] == "text", body
        for wanted in blocks[n + 1][1].splitlines():
            assert wanted in printed, (body, wanted)
            checked += 1
    assert checked >= 15


def test_docs_simulate_lists_every_trace_form_and_every_option():
    from invmap.simulate.traces import FORMS

    section = _readme_section()
    rows = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| `")]
    assert rows == [f"`{f.name}`" for f in FORMS]
    prose = " ".join(section.split())
    for knob in (*BATCHING, *KV):
        assert f"`{knob.flag}` ({knob.default:,})" in prose, knob.flag
    for o in ("--strategy", "--allocation", "--events", "--trace", "--tick-ms", "--no-auto-evict", "--record"):
        assert f"`{o}" in prose, o


def test_record_refuses_an_existing_file_unless_forced_and_leaves_it_as_it_was(cli, tmp_path):
    target = tmp_path / "kept.json"
    target.write_text("mine\n")
    result = cli("simulate", "kv", "--record", "pagedattention", "-o", str(target))
    assert result.code == 2 and target.read_text() == "mine\n" and result.out == ""
    assert cli("simulate", "kv", "--record", "pagedattention", "-o", str(target), "--force").code == 0
    assert json.loads(target.read_text())["result_type"] == "simulated"


def test_a_record_of_a_large_trace_names_the_trace_instead_of_holding_it(cli, tmp_path):
    from invmap.simulate.experiment import MAX_INLINE

    trace = tmp_path / "big.csv"
    rows = "".join(f"{n * 0.05:.2f},{1 + n % 9},{1 + n % 4}\n" for n in range(MAX_INLINE + 1))
    trace.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n" + rows)
    target = tmp_path / "big-record.json"
    result = cli("simulate", "batching", "--trace", str(trace), "--record", "sarathi-serve", "-o", str(target))
    assert result.code == 0, result.err
    record = json.loads(target.read_text())
    assert "requests" not in record["workload"] and record["workload"]["trace"]["count"] == MAX_INLINE + 1
    assert record["workload"]["trace"]["form"] == "vidur" and len(record["workload"]["trace"]["sha256"]) == 64
    assert all("per_request" not in r for r in record["artifacts"]["simulation"]["results"].values())
    assert record["configuration"]["tick_ms"] == 10 and cli("record", "check", str(target)).code == 0


def test_the_command_answers_through_the_fast_json(cli, monkeypatch):
    import invmap.render.machine as machine

    def refused(*args, **kwargs):
        raise AssertionError("the indenting encoder was used")

    monkeypatch.setattr(machine, "to_json", refused)
    monkeypatch.setattr(machine, "json_text", refused)
    result = cli("simulate", "batching", "--json")
    assert result.code == 0 and result.out == (TRACES / "ie-simulate-batching.json").read_text(encoding="utf-8")
