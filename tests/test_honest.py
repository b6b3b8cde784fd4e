"""Answers that know the map's limits (issue 46): a source is marked as matching a symptom only for a
specific word its own text holds, a topic no source is about is said to be a gap, in every format."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3

import pytest
import tomllib

from conftest import REPO, on_terminal
from invmap import english
from invmap.cjk import in_english
from invmap.triage import KEYS

CATALOG = tomllib.loads((REPO / "catalog.toml").read_text(encoding="utf-8"))
GAPS = [(code, gap) for code, level in CATALOG["layers"].items() for gap in level.get("not_covered", [])]
TOPICS = {gap["topic"] for _, gap in GAPS}


def triage(cli, *words: str) -> list[dict]:
    result = cli("triage", *words, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def marked(level: dict) -> list[str]:
    return [s["id"] for s in level["sources"] if s["matched"]]


# The failures, through the CLI


def test_tensor_parallel_is_a_gap_and_speculative_sampling_is_not_offered(cli):
    first = triage(cli, "throughput drops when running llama 70B with tensor parallel 8 over PCIe")[0]
    assert first["code"] == "RL"
    assert marked(first) == []
    assert first["coverage"]["status"] == "none"
    assert first["coverage"]["uncovered"][0] == "tensor parallelism"


def test_a_quantized_model_is_a_gap_the_answer_names(cli):
    first = triage(cli, "FP8 quantized model gives garbage output")[0]
    assert first["code"] == "RL"
    assert first["coverage"]["status"] in ("partial", "none")
    assert first["coverage"]["uncovered"][0] == "quantization"


def test_unbalanced_experts_mark_no_disaggregation_source(cli):
    first = triage(cli, "MoE experts unbalanced across GPUs")[0]
    assert first["code"] == "L5"
    assert marked(first) == []  # DistServe, LMCache, SmartGen and llm-d shared only `across` and `GPUs`
    assert first["coverage"] == {"status": "none", "uncovered": ["MoE expert placement"]}


def test_a_covered_symptom_says_covered(cli):
    first = triage(cli, "requests are preempted because the KV cache is full")[0]
    assert first["code"] == "L3" and "pagedattention" in marked(first)
    assert first["coverage"] == {"status": "covered", "uncovered": []}


def test_list_layer_quantization_keeps_its_output_and_says_the_gap(cli):
    named = cli("list", "--layer", "quantization", "--json")
    by_code = cli("list", "--layer", "RL", "--json")
    assert named.code == 0 and json.loads(named.out) == json.loads(by_code.out)
    assert "no source in the map is about quantization; RL's sources are about" in named.err
    assert "Speculative Decoding" in named.err
    assert by_code.err == ""  # a code names a level, not a topic


def test_coverage_is_a_key_and_a_column_in_every_format(cli):
    words = ("MoE", "experts", "unbalanced", "across", "GPUs")
    levels = triage(cli, *words)
    assert all(list(level) == list(KEYS) for level in levels) and "coverage" in KEYS
    plain = cli("triage", *words).out.splitlines()
    assert plain[0].split("\t")[5:] == ["none", "MoE expert placement"]
    rows = list(csv.DictReader(io.StringIO(cli("triage", *words, "--format", "csv").out)))
    assert (rows[0]["coverage"], rows[0]["uncovered"]) == ("none", "MoE expert placement")


def test_the_docs_contract_names_coverage():
    readme = (REPO / "docs" / "triage.md").read_text(encoding="utf-8")
    assert "| `coverage` |" in readme and "not_covered" in readme


@pytest.mark.parametrize("cols", [60, 80, 120])
def test_the_gap_line_on_a_terminal_splits_no_word(cols):
    lines = on_terminal(["triage", "tensor", "parallel", "8", "slower", "than", "tensor", "parallel", "4"], cols)
    at = next(n for n, line in enumerate(lines) if line.startswith("  gap  "))
    said = " ".join(line[7:].strip() for line in lines[at : at + 3] if line.startswith(("  gap  ", " " * 7)))
    assert said.startswith("no source in the map is about tensor parallelism; RL's sources are about")
    assert all(len(line) <= cols for line in lines)
    assert "Speculative Sampling and Speculative Decoding" in said or "Speculative Decoding and" in said


# Twenty symptoms the map has no source for, each stated as a gap: (symptom, the topic declared).

GAP_SYMPTOMS = [
    ("AWQ quantized Qwen2 is slower than the fp16 model", "quantization"),
    ("GPTQ model produces gibberish after loading", "quantization"),
    ("quantization to int4 breaks accuracy on long prompts", "quantization"),
    ("FP8 quantized llama 3 70B gives garbage output", "quantization"),
    ("tensor parallel 8 slower than tensor parallel 4 on PCIe", "tensor parallelism"),
    ("TP=2 gives no throughput gain over one GPU", "tensor parallelism"),
    ("how to choose between tensor parallelism and pipeline parallelism for 405B", "tensor parallelism"),
    ("pipeline parallel stages idle with PP=4 across two nodes", "pipeline parallelism"),
    ("PP bubbles make decode slow on 2 nodes", "pipeline parallelism"),
    ("expert parallel all-to-all dominates step time with EP=16", "expert parallelism"),
    ("data parallel replicas with DP=4 show uneven load", "data parallelism"),
    ("MoE experts unbalanced across GPUs", "MoE expert placement"),
    ("DeepSeek V3 expert load imbalance on 8 GPUs, EPLB does not help", "MoE expert placement"),
    ("mixture of experts layers hot experts overload one rank", "MoE expert placement"),
    ("multi-LoRA serving throughput drops with 100 adapters", "LoRA adapters"),
    ("loading a LoRA adapter at runtime stalls all requests", "LoRA adapters"),
    ("loading weights from safetensors takes 10 minutes on NFS", "loading weights from storage"),
    ("model download and weight loading dominate cold start", "loading weights from storage"),
    ("detokenizer becomes the bottleneck at high concurrency", "detokenization"),
    ("multimodal image preprocessing slows time to first token", "multimodal preprocessing"),
]


@pytest.mark.parametrize(("symptom", "topic"), GAP_SYMPTOMS)
def test_a_symptom_the_map_lacks_is_stated_as_a_gap(cli, symptom, topic):
    assert topic in TOPICS  # the topic is declared in the catalog, not in this test
    levels = triage(cli, symptom)
    assert levels, symptom
    first = levels[0]
    assert topic in first["coverage"]["uncovered"] and first["coverage"]["status"] != "covered"
    lines = on_terminal(["triage", symptom], 120)
    assert any(line.startswith("  gap  no source in the map is about") and topic in line for line in lines)


@pytest.mark.parametrize(("code", "gap"), GAPS, ids=[g["topic"] for _, g in GAPS])
def test_every_declared_cue_names_its_gap(cli, code, gap):
    for cue in gap["cues"]:
        levels = triage(cli, cue, "is", "slow")
        assert levels and all(gap["topic"] in level["coverage"]["uncovered"] for level in levels), cue


def test_a_malformed_gap_declaration_is_an_invalid_catalog(cli, tmp_path):
    text = (REPO / "catalog.toml").read_text(encoding="utf-8")
    bad = tmp_path / "c.toml"
    bad.write_text(text.replace('topic = "quantization"', 'topic = "quantization"\nsize = 3', 1), encoding="utf-8")
    result = cli("--catalog", str(bad), "triage", "quantized", "model", "slow")
    assert result.code == 3 and "unknown field 'size'" in result.err
    empty = tmp_path / "e.toml"
    empty.write_text(re.sub(r'(topic = "LoRA adapters"\ncues = )\[[^\]]*\]', r"\1[]", text, count=1), encoding="utf-8")
    result = cli("--catalog", str(empty), "check")
    assert result.code == 3 and "cues" in result.err


# Every source marked as matching shares a specific word with the symptom, checked here by its own
# measure: the words of the source's own fields and the symptom's, stemmed by SQLite's Porter tokenizer.

OWN = ("name", "title", "keywords", "mechanism", "objective", "question")
SPECIFIC_ZIPF = 4.55  # the `plainness` bar of invmap.covering.PLAIN, as a Zipf frequency


def _stems(con: sqlite3.Connection, text: str) -> set[str]:
    con.execute("DELETE FROM s")
    con.execute("INSERT INTO s VALUES (?)", [text])
    return {row[0] for row in con.execute("SELECT term FROM v")}


def _own_text(record: dict, code: bool = True) -> str:
    """A source's own fields as text (with its places and settings unless `code` is False: a word's
    share of the sources is counted without them, as invmap counts it)."""
    parts = [str(record.get(f) or "") for f in OWN if not isinstance(record.get(f), list)]
    parts += [" ".join(record.get("keywords") or [])]
    if code:
        parts += [" ".join(str(v) for p in record.get("places") or [] for v in p.values())]
        parts += [" ".join(str(v) for s in record.get("settings") or [] for v in s.values())]
    name = str(record.get("name") or "")
    parts.append(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name))
    return " ".join(parts)


def test_every_marked_source_shares_a_specific_word_with_the_symptom(cli):
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE s USING fts5(t, tokenize='porter unicode61 remove_diacritics 2')")
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'row')")
    fields = ",".join(("id", *OWN, "places", "settings"))
    records = json.loads(cli("list", "--json", "--fields", fields).out)
    own = {r["id"]: _stems(con, _own_text(r)) for r in records}
    counted = [_stems(con, _own_text(r, code=False)) for r in records]
    levels = json.loads(cli("layers", "--json").out)
    level_stems = [_stems(con, " ".join([lv["title"], lv["scope"] or "", lv["question"] or "", *lv["metrics"], *lv["symptoms"]])) for lv in levels]  # fmt: skip
    symptoms = [s for level in CATALOG["layers"].values() for s in level.get("symptoms", [])]
    symptoms += [r["title"] for r in CATALOG["reports"][::5]]
    symptoms += [s for s, _ in GAP_SYMPTOMS]
    checked = 0
    for symptom in symptoms:
        levels_found = triage(cli, symptom)
        read_as = " ".join(levels_found[0]["corrected"].values()) if levels_found else ""
        read = f"{in_english(symptom)} {read_as}"  # a Chinese term is read as its English words
        words = {w.casefold() for w in re.findall(r"[^\W_]+", read) if len(w) > 1}
        specific = set()
        for w in words:
            if w.isdigit() or (english.zipf(w) or 0.0) > SPECIFIC_ZIPF:
                continue
            stem = _stems(con, w)
            if (
                sum(stem <= s for s in counted) > len(counted) / 2
                or sum(stem <= s for s in level_stems) > len(levels) / 2
            ):
                continue
            specific |= stem
        for level in levels_found:
            for source in level["sources"]:
                if source["matched"]:
                    checked += 1
                    assert own[source["id"]] & specific, (symptom, level["code"], source["id"])
    assert checked > 100  # the check saw many marked sources, not none


# A vague symptom: low confidence, one line saying what would decide it, exit 0


@pytest.mark.parametrize("symptom", ["slow", "bad performance", "not working"])
def test_a_vague_symptom_is_low_confidence_and_says_what_would_decide_it(cli, symptom):
    result = cli("triage", *symptom.split(), "--json")
    assert result.code == 0
    levels = json.loads(result.out)
    assert levels and all(level["confidence"] == "low" for level in levels)
    said = [line for line in result.err.splitlines() if line]
    assert len(said) == 1 and "say what you measured: TTFT, TPOT or throughput, at what load" in said[0]
    assert "--metrics" in said[0] and "--bench" in said[0]


@pytest.mark.parametrize("symptom", ["ttft is high", "kv cache full", "tensor parallel 8 is slow"])
def test_a_measured_or_specific_symptom_is_not_vague(cli, symptom):
    result = cli("triage", *symptom.split(), "--json")
    assert result.code == 0 and "vague" not in result.err
    assert json.loads(result.out)[0]["confidence"] != "low" or symptom.startswith("tensor")


# A failure with no component named: low confidence, one line asking for the part that fails, exit 0


@pytest.mark.parametrize(
    "symptom",
    ["sglang crashes", "engine hangs with no output after some requests", "vllm hangs after a few hours, no output"],
)
def test_a_failure_with_no_component_named_is_low_confidence_and_asks_for_the_part(cli, symptom):
    result = cli("triage", symptom, "--json")
    assert result.code == 0
    levels = json.loads(result.out)
    assert levels and all(level["confidence"] == "low" for level in levels)
    assert result.err.splitlines() == [
        "a failure with no component named, so every level is a guess: say which part fails (a kernel or "
        "attention backend: L1; the scheduler: L2; a KV transfer engine: L5), or paste the error's last lines"
    ]


@pytest.mark.parametrize(
    ("symptom", "code"),
    [
        ("AssertionError in scheduler when running with chunked prefill", "L2"),
        ("PD disaggregation hangs with nixl", "L5"),
        ("Segmentation fault in mooncake transfer engine", "L5"),
        ("CUDA error: an illegal memory access was encountered", "L1"),
        ("server crashes with CUDA out of memory when context is long", "L3"),
    ],
)
def test_a_failure_that_names_its_component_is_placed(cli, symptom, code):
    result = cli("triage", symptom, "--json")
    assert result.code == 0 and "no component named" not in result.err
    first = json.loads(result.out)[0]
    assert first["code"] == code and first["confidence"] != "low"


# The next step: each level's engine settings (from `settings`) and, at L2 and L3, the command that recreates it


def test_next_lists_settings_of_the_matching_sources_with_their_engine(cli):
    symptom = ("TTFT", "spikes", "when", "long", "prompts", "arrive,", "chunked", "prefill", "off")
    first = triage(cli, *symptom)[0]
    assert first["code"] == "L2"
    steps = first["next"]
    settings = [s for s in steps if s["kind"] == "setting"]
    assert 1 <= len(settings) <= 3 and all(list(s) == ["kind", "text", "engine"] for s in steps)
    shipped = json.loads(cli("settings", *marked(first), "--json").out)
    for step in settings:  # each is one of a matching source's own settings, with its engine and version
        flag = step["text"].split(":")[0]
        row = next(r for r in shipped if r["flag"] == flag)
        assert step["engine"] == f"{row['engine']} {row['version']}" and not row.get("deprecated")
    assert any("chunked" in s["text"] for s in settings)
    assert [s["text"].split(" (")[0] for s in steps if s["kind"] == "simulate"] == ["invmap simulate batching"]


def test_l3_next_holds_an_estimate_and_a_simulation_that_run(cli):
    first = triage(cli, "requests", "are", "preempted", "because", "the", "KV", "cache", "is", "full")[0]
    assert first["code"] == "L3" and any(s["kind"] == "setting" for s in first["next"])
    commands = {s["kind"]: s["text"].split(" (")[0] for s in first["next"] if s["kind"] != "setting"}
    assert set(commands) == {"estimate", "simulate"}
    for command in commands.values():  # the commands shown run as shown
        assert cli(*command.split()[1:]).code == 0, command


def test_a_level_no_source_matches_lists_no_setting(cli):
    first = triage(cli, "MoE", "experts", "unbalanced", "across", "GPUs")[0]
    assert [s for s in first["next"] if s["kind"] == "setting"] == []


# Error classes: a crash points to the component it names; out of memory only when the text says so

CRASHES = json.loads((REPO / "tests" / "fixtures" / "crash-reports.json").read_text(encoding="utf-8"))


def test_the_crash_fixture_is_real_and_not_shipped():
    shipped = {r["url"] for r in CATALOG["reports"]}
    assert len(CRASHES) >= 30 and not [c["url"] for c in CRASHES if c["url"] in shipped]
    assert all(c["url"].startswith("https://github.com/") and c["accept"] for c in CRASHES)


def test_crash_and_oom_reports_are_classed_by_the_component_they_name(cli):
    missed = []
    for case in CRASHES:
        levels = triage(cli, case["title"])
        if not levels or levels[0]["code"] not in case["accept"]:
            missed.append((case["url"], [lv["code"] for lv in levels]))
    assert len(missed) <= 2, missed  # 30 of 32 today


def test_an_illegal_memory_access_with_flashinfer_is_a_kernel_crash_not_a_full_cache(cli):
    words = "[Bug]: CUDA error: an illegal memory access was encountered with FlashInfer backend"
    levels = triage(cli, words)
    assert levels[0]["code"] == "L1"
    assert not any("out-of-memory" in m for m in levels[0]["matched"])
    assert all(lv["code"] != "L3" or lv["confidence"] == "low" for lv in levels)


def test_out_of_memory_stays_a_cache_level_and_loading_weights_counts_at_l4(cli):
    assert triage(cli, "CUDA out of memory as the batch grows")[0]["code"] == "L3"
    first = triage(cli, "CUDA out of memory while the model weights load")[0]
    assert first["code"] == "L4", first["matched"]


# Chinese: CJK runs as overlapping bigrams on both sides, known terms read as the map's English words

CHINESE = tomllib.loads((REPO / "src" / "invmap" / "data" / "chinese.toml").read_text(encoding="utf-8"))["terms"]
CJK = re.compile("[\u4e00-\u9fff]")


def test_every_chinese_term_names_the_thread_that_uses_it():
    assert len(CHINESE) >= 12
    for term, entry in CHINESE.items():
        assert CJK.search(term) and entry["english"].isascii() and entry["seen"].startswith("https://github.com/")


@pytest.mark.parametrize(
    ("symptom", "level"),
    [
        ("显存不足 长上下文 推理", "L3"),
        ("DeepSeek-R1 PD分离 KV传输慢", "L5"),
        ("投机解码 没有加速", "RL"),
        ("首token延迟很高", "L2"),
    ],
)
def test_a_chinese_symptom_gets_its_level_answered_in_english(cli, symptom, level):
    levels = triage(cli, symptom)
    assert levels and levels[0]["code"] == level
    for lv in levels:  # the answer is the map's own English text
        assert not any(CJK.search(text) for text in [lv["title"], lv["question"], *lv["matched"]])


def test_a_chinese_report_is_matched_by_its_bigrams(cli, tmp_path):
    text = (REPO / "catalog.toml").read_text(encoding="utf-8")
    report = (
        '\n[[reports]]\nid = "zh-test-1"\ntitle = "预填充阶段排队太久"\n'
        'url = "https://example.org/zh-test-1"\nengine = "test"\nprimary = "L6"\naccessed = 2026-12-01\n'
    )
    at = text.index("[[sources]]")
    mine = tmp_path / "zh.toml"
    mine.write_text(text[:at] + report.lstrip("\n") + "\n" + text[at:], encoding="utf-8")
    found = json.loads(cli("--catalog", str(mine), "triage", "预填充阶段排队", "--json").out)
    assert any(r["id"] == "zh-test-1" for lv in found for r in lv["reports"])  # no term list holds 预填充: bigrams did
    assert all(r["id"] != "zh-test-1" for lv in triage(cli, "kv", "cache", "full") for r in lv["reports"])


SHIPPED_CHINESE = [r for r in CATALOG["reports"] if CJK.search(r["title"])]


def test_forty_chinese_reports_ship_each_labelled_with_a_level():
    levels = set(CATALOG["layers"])
    assert len(SHIPPED_CHINESE) >= 40
    for report in SHIPPED_CHINESE:
        assert report["url"].startswith("https://github.com/") and report["primary"] in levels
        assert report.get("secondary", report["primary"]) in levels


def test_a_shipped_chinese_report_is_found_by_its_own_title(cli):
    missed = []
    for report in SHIPPED_CHINESE:
        found = [r["id"] for lv in triage(cli, report["title"]) for r in lv["reports"]]
        if report["id"] not in found:
            missed.append(report["id"])
    assert missed == []


# Each glossary entry's names (term, expansion, aliases): any of them means the others.
GLOSSARY = [
    [term, *([entry["expansion"]] if entry.get("expansion") else []), *entry.get("aliases", [])]
    for term, entry in CATALOG["glossary"].items()
]


def _named_by(names: list[str]) -> set[str]:
    """The gap topics a symptom that is one of `names` may name: those with a cue all of whose words one
    of the names holds (a word of five letters or more compared by its first six: `quantized`, `quantization`)."""

    def words(text: str) -> list[str]:  # an acronym stays whole: TPS is not TP
        return [w[:6] if len(w) > 4 else w for w in re.findall(r"[a-z0-9]+", text.casefold())]

    held = {w for name in names for w in words(name)}
    return {gap["topic"] for _, gap in GAPS if any(set(words(cue)) <= held for cue in gap["cues"])}


def test_a_gap_is_named_by_the_symptoms_own_words_never_by_another_terms_glossary_names(cli):
    # `throughput` once named tensor parallelism: its alias TPS stems to `tp`, the cue of TP.
    wrong = {}
    for names in GLOSSARY:
        for name in names:
            said = {t for level in triage(cli, name) for t in level["coverage"]["uncovered"] if t in TOPICS}
            if said - _named_by(names):
                wrong[name] = sorted(said - _named_by(names))
    assert wrong == {}
    assert sum(map(len, GLOSSARY)) > 100
    assert {t for names in GLOSSARY for t in _named_by(names)}  # some names do name a gap (EP, TP, quantization)
