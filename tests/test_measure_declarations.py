"""The measurement declarations check themselves (issue 48 §1): data/metrics.toml and data/rules.toml
are read by loaders that take any path, so each half-done change is made here on a scratch copy and
must fail loudly, naming the file and line; and what the declarations now say (sums of names, a
histogram's sum read as a counter, ratios across metrics, routers, rules with two halves) is read
through the CLI."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
import scrapes
import tomli

from conftest import REPO
from invmap.measure import declaring, names, rules

METRICS = names.SHIPPED.read_text(encoding="utf-8")
RULES = rules.SHIPPED.read_text(encoding="utf-8")


def scratch(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def line_of(text: str, needle: str) -> int:
    """The line (from 1) of the first line holding `needle`."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def refused(load, path: str) -> declaring.DeclarationError:
    with pytest.raises(declaring.DeclarationError) as caught:
        load(path)
    assert caught.value.exit_code == 3
    return caught.value


def changed(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


# --- metrics.toml: each silent case fails loudly, on its line ------------------------------------------

METRIC_CASES = {
    "an unknown key in a signal": (
        ('key = "running"\nkind = "gauge"', 'key = "running"\nkind = "gauge"\nrnage = [0, 1]'),
        "rnage = [0, 1]",
        "unknown key 'rnage' in signal 'running'; did you mean 'range'?",
    ),
    "an unknown key in an engine": (
        ('title = "vLLM"', 'title = "vLLM"\nmodel_labels = "model"'),
        'model_labels = "model"',
        "unknown key 'model_labels' in engine 'vllm'; did you mean 'model_label'?",
    ),
    "an unknown key in a name table": (
        ('{ metric = "vllm:gpu_cache_usage_perc", note', '{ metric = "vllm:gpu_cache_usage_perc", labls = {}, note'),
        "labls = {}",
        "unknown key 'labls' in a name of 'kv_usage' for engine 'vllm'; did you mean 'labels'?",
    ),
    "an unknown key in a ratio's denominator": (
        ('over = { labels = { kv_cache_block_type = "max" } }', 'over = { label = { kv_cache_block_type = "max" } }'),
        "over = { label =",
        "unknown key 'label' in 'over' of a name of 'kv_usage' for engine 'triton'; did you mean 'labels'?",
    ),
    "a name under a signal nobody declares (issue 48: dropped silently)": (
        ('running = "vllm:num_requests_running"', 'running = "vllm:num_requests_running"\nabortd = "vllm:x"'),
        'abortd = "vllm:x"',
        "'abortd' under the names of engine 'vllm' is not a declared signal",
    ),
    "two names of one signal that say neither renamed nor summed (issue 48: counted 6 of 10)": (
        ("sum_names = true  # vLLM counts", "# vLLM counts"),
        "aborted = [",
        "engine 'vllm' gives 'aborted' 2 names (vllm:request_success_total{finished_reason=abort}, "
        "vllm:request_success_total{finished_reason=error}): give each older one a `note` (one metric, renamed), "
        "or declare the signal `sum_names = true` (series to add up)",
    ),
    "an engine without model_label (issue 48: multiplexed silently off)": (
        ('rank_label = ""\nmodel_label = "model"\ndoc = "NVIDIA/TensorRT-LLM@0d53',
         'rank_label = ""\ndoc = "NVIDIA/TensorRT-LLM@0d53'),  # fmt: skip
        'key = "triton"',
        "engine 'triton' lacks 'model_label' (text)",
    ),
    "a histogram's sum read as a counter without saying so (issue 48: an undocumented accident)": (
        ('prompt_tokens = "vllm:prompt_tokens_total"', 'prompt_tokens = "vllm:request_prompt_tokens_sum"'),
        'prompt_tokens = "vllm:request_prompt_tokens_sum"',
        "'vllm:request_prompt_tokens_sum' (prompt_tokens, engine 'vllm') is part of a histogram: name the histogram "
        'and say read = "sum" or "count"',
    ),
    "read = on a metric that is no declared histogram": (
        ('prompt_tokens = "vllm:prompt_tokens_total"', 'prompt_tokens = { metric = "vllm:x", read = "sum" }'),
        'metric = "vllm:x", read = "sum"',
        "'vllm:x' (prompt_tokens, engine 'vllm'): 'read' takes a declared histogram's sum or count as a counter signal",
    ),
    "a ratio on a counter": (
        ('preemptions = "vllm:num_preemptions_total"',
         'preemptions = { metric = "vllm:num_preemptions_total", over = { labels = { a = "b" } } }'),  # fmt: skip
        "preemptions = { metric",
        "'over' divides gauges; 'preemptions' is a counter",
    ),
    "a signal without its range": (
        ('meaning = "requests queued, not yet scheduled"\nrange = [0, 1e9]\n', 'meaning = "requests queued, not yet scheduled"\n'),
        'key = "waiting"',
        "signal 'waiting' lacks 'range' ([low, high] (two finite numbers, low first))",
    ),
    "a name without its engine's prefix": (
        ('running = "sglang:num_running_reqs"', 'running = "vllm:num_running_reqs"'),
        'running = "vllm:num_running_reqs"',
        "'vllm:num_running_reqs' (running, engine 'sglang'): 'vllm:num_running_reqs' lacks the engine's prefix (sglang:)",
    ),
    "an engine kind that is neither": (
        ('kind = "router"', 'kind = "proxy"'),
        'kind = "proxy"',
        "'kind' in engine 'dynamo-frontend' must be one of 'engine', 'router'",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(METRIC_CASES))
def test_each_half_done_change_to_the_metric_names_fails_on_its_line(tmp_path, case):
    (old, new), at, message = METRIC_CASES[case]
    text = changed(METRICS, old, new)
    path = scratch(tmp_path, "metrics.toml", text)
    error = refused(names.load, path)
    line = line_of(text, at) - (1 if at.startswith("key = ") else 0)  # a missing key: the entry's [[header]]
    lines = error.message.splitlines()
    assert any(ln.startswith(f"{path}:{line}: ") and message in ln for ln in lines), error.message
    assert len(lines) == 1  # one mistake, one problem: nothing cascades from it


def test_the_shipped_declarations_load_and_a_scratch_copy_loads_alike(tmp_path):
    copy = names.load(scratch(tmp_path, "metrics.toml", METRICS))
    assert copy.engines == names.DECLARED.engines and copy.signals == names.DECLARED.signals
    assert rules.load(scratch(tmp_path, "rules.toml", RULES)) == rules.RULES


def test_every_problem_of_a_file_is_said_at_once_under_a_count(tmp_path):
    text = changed(METRICS, 'title = "vLLM"', 'title = "vLLM"\nmodel_labels = "x"')
    text = changed(text, 'title = "SGLang"', 'title = "SGLang"\nrank_labels = "x"')
    path = scratch(tmp_path, "metrics.toml", text)
    lines = refused(names.load, path).message.splitlines()
    assert lines[0] == f"{path} has 2 problems:"
    assert [ln.split(": ", 1)[0] for ln in lines[1:]] == [
        f"{path}:{line_of(text, 'model_labels')}",
        f"{path}:{line_of(text, 'rank_labels')}",
    ]


def test_invalid_toml_names_its_line(tmp_path):
    text = changed(METRICS, 'key = "waiting"', 'key = "waiting\n')
    path = scratch(tmp_path, "metrics.toml", text)
    at = line_of(text, 'key = "waiting')
    assert refused(names.load, path).message.startswith(f"{path}:{at}: invalid TOML")


def test_a_broken_declaration_is_exit_3_from_the_cli(cli, tmp_path, monkeypatch):
    """The loaders run when a command first needs them: their error is the command's (exit 3)."""
    text = changed(METRICS, 'title = "TGI"', 'title = "TGI"\nprefix = "x"')
    path = scratch(tmp_path, "metrics.toml", text)
    import invmap.diagnose as diagnose

    monkeypatch.setattr(diagnose, "measure_of", lambda opts, stdin: names.load(path))
    result = cli("triage", "--metrics", "x.prom")
    assert (result.code, result.out) == (3, "")
    at = line_of(text, 'prefix = "x"')
    assert result.err.startswith(f"Error: {path}:{at}: unknown key 'prefix' in engine 'tgi'")


# --- rules.toml ---------------------------------------------------------------------------------------------

RULE_CASES = {
    "an unknown key in a rule": (
        ('id = "preempting"\n', 'id = "preempting"\nwieght = 1\n'),
        "wieght = 1",
        "unknown key 'wieght' in rule 'preempting'; did you mean 'weight'?",
    ),
    "an unknown key in a threshold": (
        ('{ name = "share", value = 0.5, rationale', '{ name = "share", vaule = 0.5, rationale'),
        "vaule = 0.5",
        "unknown key 'vaule' in a threshold of rule 'queue-in-ttft'; did you mean 'value'?",
    ),
    "an unknown key in a rule's half": (
        ('test = "preempting"\n', 'test = "preempting"\naplies = "engine"\n'),
        'aplies = "engine"',
        "unknown key 'aplies' in [rule.metrics] of rule 'preempting'; did you mean 'applies'?",
    ),
    "a scrape rule reading a signal nobody declares": (
        ('signals = ["preemptions"]', 'signals = ["preemptions", "retractions"]'),
        'signals = ["preemptions", "retractions"]',
        "[rule.metrics] of rule 'preempting' reads retractions: not among data/metrics.toml's signals",
    ),
    "a benchmark rule reading a field nobody declares": (
        ('signals = ["itl_median", "itl_p99"]', 'signals = ["itl_median", "itl_p999", "gaps"]'),
        'signals = ["itl_median", "itl_p999", "gaps"]',
        "[rule.bench] of rule 'bench-itl-tail' reads gaps: not among measure/bench.py's fields",
    ),
    "a test that does not exist": (
        ('test = "rank_imbalance"', 'test = "rank_imbalanse"'),
        'test = "rank_imbalanse"',
        "[rule.metrics] of rule 'rank-imbalance': no test 'rank_imbalanse' in measure/levels/",
    ),
    "a level that is not one": (
        ('levels = ["L5"]\nwhy = "Data-parallel', 'levels = ["L7"]\nwhy = "Data-parallel'),
        'levels = ["L7"]',
        "rule 'rank-imbalance': levels must be among L1, L2, L3, L4, L5, L6, RL, P0",
    ),
    "a scrape half that does not say which processes it reads": (
        (
            'test = "rank_imbalance"\nsignals = ["generation_tokens", "gen_throughput", "running", "waiting", "kv_usage"]\napplies = "engine"\n',
            'test = "rank_imbalance"\nsignals = ["generation_tokens", "gen_throughput", "running", "waiting", "kv_usage"]\n',
        ),  # fmt: skip
        "[rule.metrics]",
        "[rule.metrics] of rule 'rank-imbalance' lacks 'applies' (one of 'engine', 'router', 'both')",
    ),
}


@pytest.mark.parametrize("case", sorted(RULE_CASES))
def test_each_half_done_change_to_the_rules_fails_on_its_line(tmp_path, case):
    (old, new), at, message = RULE_CASES[case]
    text = changed(RULES, old, new)
    path = scratch(tmp_path, "rules.toml", text)
    error = refused(rules.load, path)
    if case == "a scrape half that does not say which processes it reads":
        at_line = next(
            n
            for n, ln in enumerate(text.splitlines(), 1)
            if ln == "[rule.metrics]" and n > line_of(text, 'id = "rank-imbalance"')
        )
    else:
        at_line = line_of(text, at)
    assert f"{path}:{at_line}: {message}" in error.message.splitlines(), error.message


def test_two_rules_with_one_evidence_id_are_refused(tmp_path):
    text = changed(RULES, 'id = "bench-spec-acceptance"', 'id = "bench-overload"')
    assert "two rules carry the id 'bench-overload'" in refused(rules.load, scratch(tmp_path, "r.toml", text)).message


def test_a_rule_with_neither_half_is_refused(tmp_path):
    text = (
        RULES
        + '\n[[rule]]\nid = "nothing"\nlevels = ["L1"]\nwhy = "x."\nthresholds = [{ name = "a", value = 1, rationale = "r" }]\n'
    )
    path = scratch(tmp_path, "r.toml", text)
    at = line_of(text, 'id = "nothing"') - 1
    assert f"{path}:{at}: rule 'nothing' has none of [rule.metrics]" in refused(rules.load, path).message


def test_one_concept_one_declaration_its_two_halves_share_the_thresholds(tmp_path):
    """spec-acceptance, decode-near-bandwidth and failed-requests are each one rule with a scrape half and
    a benchmark half: a changed threshold changes both, and the halves keep the ids their evidence had."""
    pairs = {r.concept: [] for r in rules.RULES}
    for r in rules.RULES:
        pairs[r.concept].append(r)
    merged = {c: [h.id for h in halves] for c, halves in pairs.items() if len(halves) == 2}
    assert merged == {
        "failed-requests": ["failed-requests", "bench-overload"],
        "decode-near-bandwidth": ["decode-near-bandwidth", "bench-decode-near-bandwidth"],
        "spec-acceptance": ["spec-acceptance", "bench-spec-acceptance"],
        "spec-position": ["spec-position", "bench-spec-position"],
    }
    for halves in pairs.values():
        assert len({(h.thresholds, h.levels, h.weight, h.why) for h in halves}) == 1
    text = changed(RULES, '{ name = "rate", value = 0.5', '{ name = "rate", value = 0.4')
    changed_rules = {r.id: r for r in rules.load(scratch(tmp_path, "r.toml", text))}
    assert changed_rules["spec-acceptance"].t("rate") == changed_rules["bench-spec-acceptance"].t("rate") == 0.4


def test_every_half_reads_declared_signals_through_a_test_of_its_levels_module():
    from invmap.measure.benchfields import field_range

    for rule in rules.RULES:
        module = rule.test.__module__
        assert module.startswith("invmap.measure.levels."), rule.id
        if rule.kind == "metrics":
            assert rule.applies in ("engine", "router", "both") and all(s in names.BY_SIGNAL for s in rule.signals)
        else:
            assert rule.applies == "" and all(field_range(s) is not None for s in rule.signals), rule.id


# --- every name read where it is defined (issue 41, section 1) -------------------------------------------------

INVENTORY = tomli.loads((REPO / "tests" / "fixtures" / "measurements" / "names-inventory.toml").read_text("utf-8"))
AT_COMMIT = re.compile(r"[\w.-]+/[\w.-]+@(?:[0-9a-f]{40}|v[\w.+-]+):\S+")
PULL = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/pull/\d+")


def _places() -> dict[str, set[str]]:
    """Each inventoried metric (as a scrape spells it, `_total` or not) -> where the inventory read it."""
    out: dict[str, set[str]] = {}
    for entry in INVENTORY["name"]:
        place = entry["defined_at"] or entry.get("seen_at", "")
        out.setdefault(names.key(entry["metric"]), set()).add(place)
    return out


def test_every_declared_name_carries_the_file_and_commit_it_was_read_at():
    """A name's `doc` (its own, else its engine's) is a file at a commit or tag that the inventory read it
    at; a name defined only in an unmerged pull request says so in a note and names the pull request."""
    places = _places()
    faults = []
    for signal in names.SIGNALS:
        for name in signal.names:
            where = places.get(names.key(name.metric), set())
            at_commit = AT_COMMIT.fullmatch(name.doc) and name.doc in where
            pr_only = PULL.fullmatch(name.doc) and name.doc in where and "unmerged" in name.note
            if not (at_commit or pr_only):
                faults.append((name.engine, name.metric, name.doc))
    assert faults == []
    for engine in names.ENGINES:
        assert AT_COMMIT.fullmatch(engine.doc), engine.key


def test_a_rule_never_reads_a_signal_no_engine_declares_a_name_for():
    named = {s.key for s in names.SIGNALS if s.names}
    unread = {r.id: [s for s in r.signals if s not in named] for r in rules.RULES if r.kind == "metrics"}
    assert {k: v for k, v in unread.items() if v} == {}


def test_a_signal_without_a_name_is_caught(tmp_path):
    """The test above fails on a declaration whose rule reads a signal every engine has lost its name for."""
    text = METRICS.replace('gen_throughput = "sglang:gen_throughput"\n', "")
    trial = names.load(scratch(tmp_path, "m.toml", text))
    named = {s.key for s in trial.signals if s.names}
    assert "gen_throughput" not in named and "gen_throughput" in rules.BY_ID["rank-imbalance"].signals


@pytest.mark.parametrize("engine", sorted({e["engine"] for e in INVENTORY["name"]}))
def test_every_inventoried_name_is_recognised(cli, tmp_path, engine):
    """A scrape of any name the inventory lists is of a known engine, router or component: never "none of a
    known engine" (one sample a name, histograms by their count)."""
    lines = []
    for entry in INVENTORY["name"]:
        if entry["engine"] == engine:
            suffix = "_count" if entry["type"] in ("histogram", "summary") else ""
            lines.append(f"{entry['metric']}{suffix} 1")
    unknown = [line for line in lines if names.engine_of(names.canonical(line.split()[0], False)) is None]
    assert unknown == []
    result = cli("triage", "--metrics", scratch(tmp_path, "s.prom", "\n".join(lines) + "\n"), "--json")
    assert result.code == 0 and "none of a known engine" not in result.err, result.err


# --- what the declarations say, through the CLI ---------------------------------------------------------------


def triage(cli, tmp_path, *texts: str, args: tuple[str, ...] = ()):
    paths = []
    for n, text in enumerate(texts):
        paths += ["--metrics", scratch(tmp_path, f"s{n}.prom", text)]
    result = cli("triage", *paths, *args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out), result.err


def fired(items) -> list[tuple[str, str, str]]:
    return [(i["code"], e["rule"], e["text"]) for i in items for e in i["evidence"]]


def test_two_finish_reasons_of_one_counter_are_summed_as_declared(cli, tmp_path):
    """Issue 48: 10 of 200 requests aborted (6) or failed (4) were counted 6 and called healthy."""
    reg = scrapes.vllm()
    for reason, count in (("stop", 190), ("abort", 6), ("error", 4)):
        reg.counter("vllm:request_success", count, finished_reason=reason)
    items, _ = triage(cli, tmp_path, reg.text())
    assert ("L2", "failed-requests", "10 of 200 finished requests were aborted or failed (5.0%, >= 5%) since the "
            "engine started") in fired(items)  # fmt: skip
    assert [e["signals"] for i in items for e in i["evidence"]][0] == {"aborted": 10, "requests": 200, "window_s": None}


def frontend(models: dict[str, int], **extra: str) -> str:
    """NVIDIA Dynamo's frontend metrics, as lib/llm/src/http/service/metrics.rs registers them (labels
    `model`, and `status` on the request counter)."""
    lines = ["# TYPE dynamo_frontend_queued_requests gauge"]
    lines += [f'dynamo_frontend_queued_requests{{model="{m}"}} {q}' for m, q in models.items()]
    lines += ["# TYPE dynamo_frontend_requests_total counter"]
    for m in models:
        lines.append(f'dynamo_frontend_requests_total{{model="{m}",endpoint="chat_completions",request_type="stream",'
                     f'status="success",error_type=""}} {extra.get("success", 100)}')  # fmt: skip
    return "\n".join(lines) + "\n" + extra.get("more", "")


def test_a_router_routing_each_model_to_its_own_workers_is_not_multiplexed(cli, tmp_path):
    """Issue 48: a Dynamo frontend with two models queueing read as '2 models share one engine'."""
    items, err = triage(cli, tmp_path, frontend({"llama": 5, "qwen": 3}))
    assert items == [] and "multiplexed" not in json.dumps(items)
    assert "totals since the router started (Dynamo frontend, one scrape)" in err
    assert "a router's scrape: kv-full-preempting, preempting, waiting-with-room, queue-in-ttft, " in err
    assert "multiplexed, " in err.split("a router's scrape: ")[1].split(" read an engine's")[0]
    same = scrapes.vllm(model="llama").gauge("vllm:num_requests_waiting", 5).text()
    same += scrapes.vllm(model="qwen").gauge("vllm:num_requests_waiting", 3).text()
    assert [r for _, r, _ in fired(triage(cli, tmp_path, same)[0])] == ["multiplexed"]  # an engine's: it is


def test_a_router_and_a_worker_are_two_processes_read_side_by_side(cli, tmp_path):
    front = frontend({"llama": 2}, more='dynamo_frontend_requests_total{model="llama",endpoint="chat_completions",'
                     'request_type="stream",status="error",error_type="overload"} 20\n')  # fmt: skip
    worker = scrapes.vllm(model="llama").gauge("vllm:kv_cache_usage_perc", 0.97).counter("vllm:num_preemptions", 30)
    items, err = triage(cli, tmp_path, front, worker.text(), args=("--interval", "30s"))
    assert sorted(fired(items)) == [
        ("L2", "failed-requests", "Dynamo frontend: 20 of 120 finished requests were aborted or failed (16.7%, >= 5%) "
         "since the router started"),
        ("L3", "kv-full-preempting", "vLLM: kv usage 0.97 (>= 0.90) and 30 preemptions since the engine started"),
        ("L6", "failed-requests", "Dynamo frontend: 20 of 120 finished requests were aborted or failed (16.7%, >= 5%) "
         "since the router started"),
    ]  # fmt: skip
    lines = err.splitlines()
    assert f"{tmp_path / 's0.prom'} and {tmp_path / 's1.prom'} are two processes (Dynamo frontend and vLLM), read side "\
        "by side, not as a window (--interval is not used: there is no window)" in lines  # fmt: skip
    assert not any(line.startswith("window:") for line in lines)


def test_two_scrapes_of_one_router_are_a_window(cli, tmp_path):
    items, err = triage(cli, tmp_path, frontend({"m": 0}, success=100), frontend({"m": 0}, success=300))
    assert "window: between the two scrapes (Dynamo frontend)" in err.splitlines()


def test_two_routers_or_two_engines_are_refused(cli, tmp_path):
    a = scratch(tmp_path, "a.prom", scrapes.vllm().gauge("vllm:num_requests_waiting", 1).text())
    b = scratch(tmp_path, "b.prom", scrapes.sglang().gauge("sglang:num_queue_reqs", 1).text())
    result = cli("triage", "--metrics", a, "--metrics", b)
    assert (result.code, result.out) == (2, "")
    assert result.err == f"Error: the two scrapes come from different engines (vLLM in {a}, SGLang in {b})\n"


def test_a_histograms_sum_is_read_as_a_counter_where_declared(cli, tmp_path):
    """Dynamo's frontend counts prompt tokens only as its input-length histogram: `read = "sum"`."""
    reg = scrapes.Registry(model="m")
    reg.histogram("dynamo_frontend_inter_token_latency_seconds", [0.02] * 980 + [0.6] * 20, scrapes.VLLM_ITL)
    reg.histogram("dynamo_frontend_input_sequence_tokens", [1200] * 40, scrapes.VLLM_TOKENS)
    items, _ = triage(cli, tmp_path, reg.text())
    [(code, rule, text)] = fired(items)
    assert (code, rule) == ("L2", "itl-tail-with-prefill")
    assert text.endswith("while 48,000 prompt tokens were prefilled since the router started")


def test_a_share_may_divide_by_another_metric(cli, tmp_path):
    """`over = { metric = ..., labels = ... }`: a gauge read as a share of another metric's series (a
    scratch declaration giving llama.cpp a KV share of two gauges)."""
    text = changed(
        METRICS,
        'running = "llamacpp:requests_processing"',
        'running = "llamacpp:requests_processing"\n'
        'kv_usage = { metric = "llamacpp:kv_cache_tokens", over = { metric = "llamacpp:kv_cache_size", labels = {} } }',
    )
    declared = names.load(scratch(tmp_path, "metrics.toml", text))
    before = names.use(declared)
    try:
        body = (
            scrapes.llamacpp(0, 0.0, 0, 0.0, deferred=3) + "llamacpp:kv_cache_tokens 900\nllamacpp:kv_cache_size 4096\n"
        )
        items, _ = triage(cli, tmp_path, body)
        assert fired(items)[0][2].startswith("3 requests waiting while kv usage is 0.22 (< 0.50)")
        over = body.replace("llamacpp:kv_cache_tokens 900", "llamacpp:kv_cache_tokens 9000")
        items, err = triage(cli, tmp_path, over)
        assert items == []
        assert "left out: kv_usage (used fraction of the KV cache (0 to 1)): " in err
        assert "llamacpp:kv_cache_tokens / llamacpp:kv_cache_size is 2.19727, outside 0 to 1" in err
    finally:
        names.use(before)


# --- docs/measurements.md says what the declarations say---------------------------------------------------------------


def _generator():
    spec = importlib.util.spec_from_file_location(
        "generate_readme_tables", REPO / "scripts" / "generate_readme_tables.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_measurements_page_engine_and_rule_tables_are_generated_from_the_declarations():
    """Run `python scripts/generate_readme_tables.py` after changing metrics.toml or rules.toml."""
    page = (REPO / "docs" / "measurements.md").read_text(encoding="utf-8")
    assert _generator().updated(page) == page


def test_the_generated_tables_name_every_engine_and_every_rule():
    generator = _generator()
    engines = generator.engine_table().splitlines()[2:]
    assert [row.split(" | ")[0].lstrip("| ") for row in engines] == [e.title for e in names.ENGINES]
    table = generator.rule_table().splitlines()[2:]
    assert sorted(re.match(r"\| `([^`]+)` \|", row).group(1) for row in table) == sorted(r.id for r in rules.RULES)
