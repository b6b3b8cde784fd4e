"""Search: what an inference engineer types finds what the map means (issue: search)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import ids_of, on_terminal
from invmap import formats

JUDGMENTS = Path(__file__).parent / "assets" / "relevance.json"


def _ndcg(ranked: list[str], rel: dict[str, int], k: int = 5) -> float:
    dcg = sum((2 ** rel.get(x, 0) - 1) / math.log2(i + 2) for i, x in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    return dcg / sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))


def test_relevance_floors_on_the_development_judgments(cli):
    """nDCG@5 >= 0.90 and P@1 >= 0.92 on the graded judgments (a copy of ../shared/relevance/dev.json),
    run the way score.py runs them."""
    queries = json.loads(JUDGMENTS.read_text(encoding="utf-8"))["queries"]
    ndcg = p1 = 0.0
    for item in queries:
        ranked = ids_of(cli("search", *item["q"].split(), "--json", "--limit", "10"))
        ndcg += _ndcg(ranked, item["rel"])
        p1 += bool(ranked) and item["rel"].get(ranked[0], 0) > 0
    assert (round(ndcg / len(queries), 3) >= 0.90, round(p1 / len(queries), 3) >= 0.92) == (True, True), (
        ndcg / len(queries),
        p1 / len(queries),
    )


@pytest.mark.parametrize(
    "text, first",
    [
        ("tail latency", {"sarathi-serve", "prefill-deflection"}),
        ("prefix", {"sglang", "lmcache"}),
        ("grouped query attention", {"gqa"}),
        ("kwon", {"pagedattention"}),
        ("eviction", {"pagedattention"}),
        ("memory fragmentation", {"pagedattention"}),
        ("iteration level scheduling", {"orca"}),
        ("radixattention", {"sglang"}),
        ("time to first token", {"distserve", "prefill-deflection"}),
    ],
)
def test_expert_queries_put_the_answer_first(cli, text, first):
    found = ids_of(cli("search", text, "--json"))
    assert found and found[0] in first, found


def test_eviction_never_lists_prefill_deflection(cli):
    assert "prefill-deflection" not in ids_of(cli("search", "eviction", "--json", "--limit", "100"))


@pytest.mark.parametrize("text", ["multi-model serving", "multi model serving"])
def test_multi_model_serving_puts_the_pooling_papers_first(cli, text):
    assert set(ids_of(cli("search", text, "--json"))[:3]) == {"aegaeon", "prism", "coral"}


@pytest.mark.parametrize(
    "text, expected, within",
    [
        ("specualtive decodng", {"speculative-decoding", "speculative-sampling"}, 5),
        ("pagedatention", {"pagedattention"}, 1),
        ("continous batcing", {"orca", "vllm"}, 4),
        ("disagregated serving", {"distserve", "mooncake"}, 5),
        ("virtaul memroy", {"vattention"}, 1),
        ("speculative decoding", {"speculative-decoding", "speculative-sampling"}, 2),
        ("paged attention", {"pagedattention"}, 1),
        ("flash attention", {"flashattention"}, 1),
        ("chunked prefill", {"sarathi-serve"}, 3),
        ("tile attention", {"flashattention"}, 3),
    ],
)
def test_typos_and_spellings_still_find_their_sources(cli, text, expected, within):
    found = ids_of(cli("search", text, "--json"))
    assert expected <= set(found[:within]), found


@pytest.mark.parametrize("word, never", [("prefix", "prefill"), ("tail", "tile"), ("eviction", "deflection")])
def test_words_match_words_not_letters(cli, word, never):
    """`prefix` never matches `prefill` alone, `tail` never `tile`: every result holds the word itself
    (or a form of it), in a field search looks at."""
    from invmap.fields import TEXT_FIELDS

    hits = json.loads(cli("search", word, "--json", "--limit", "100").out)
    assert hits
    for hit in hits:
        text = " ".join(str(hit[f]) for f in TEXT_FIELDS).casefold()
        assert word[:5] in text, (hit["id"], never)


def test_glossary_works_both_ways(cli):
    ttft = ids_of(cli("search", "ttft", "--json"))
    spelled = ids_of(cli("search", "time to first token", "--json"))
    assert ttft and set(ttft[:2]) == set(spelled[:2]) == {"distserve", "prefill-deflection"}
    assert "distserve" in ids_of(cli("search", "time per output token", "--json"))[:1]  # its keywords say TPOT


def test_search_nonsense_is_empty_and_quiet(cli):
    result = cli("search", "zzqqxx", "--json")
    assert (result.code, result.out, result.err) == (0, "[]\n", "")


def test_search_words_quoted_or_not(cli):
    assert cli("search", "kv", "cache", "--json").out == cli("search", "kv cache", "--json").out


def test_every_result_matched_a_query_word_and_says_where(cli):
    hits = json.loads(cli("search", "eviction", "rule", "--json", "--limit", "100").out)
    assert hits and all(h["matched"] and 0 < h["score"] <= 100 for h in hits)
    assert hits[0]["id"] == "pagedattention" and hits[0]["matched"][0] == "question"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_why_marks_the_matched_words_in_a_table_and_not_in_a_pipe(cli):
    plain = cli("search", "eviction", "--format", "tsv", "--fields", "id,why").out.splitlines()
    assert plain[1] == "pagedattention\tquestion: Which allocation and eviction rule avoids capacity loss for the…"
    table = cli("search", "eviction", "--format", "table", "--color", "always", env={"COLUMNS": "200"}).out
    assert "\x1b[1meviction\x1b[0m" in table


def test_phrase_exclusion_field_and_exact(cli):
    phrase = ids_of(cli("search", '"kv cache"', "--json", "--limit", "100"))
    assert phrase and "gqa" not in phrase  # GQA says "key-value heads", never the phrase
    without = ids_of(cli("search", "--json", "--limit", "100", "--", "kv", "cache", "-survey"))
    assert "kv-cache-survey" not in without and "kv-cache-survey" in ids_of(
        cli("search", "kv cache", "--json", "--limit", "100")
    )
    assert ids_of(cli("search", "question:eviction", "--json")) == ["pagedattention"]
    # "evicting" is nowhere as written (TensorRT-LLM's GUARANTEED_NO_EVICT holds "evict"), only its stem
    exact = ids_of(cli("search", "evicting", "--exact", "--json"))
    assert exact == [] and ids_of(cli("search", "evicting", "--json"))[0] == "pagedattention"


def test_min_score_filters_on_the_shown_scale(cli):
    every = json.loads(cli("search", "kv cache offloading", "--json", "--limit", "100").out)
    high = json.loads(cli("search", "kv cache offloading", "--json", "--limit", "100", "--min-score", "90").out)
    assert [h["id"] for h in high] == [h["id"] for h in every if h["score"] >= 90] and len(high) < len(every)
    assert cli("search", "kv", "--min-score", "101").code == 2


# --- issue words: the ranking, marks, corrections and phrases ------------------------------------


def test_kv_cache_puts_pagedattention_and_vllm_in_the_top_three(cli):
    """A match in a name, id, keyword or title outranks one in a sentence or the seam: PagedAttention
    (first keyword "KV cache") and vLLM (which names it) lead, before Prism's seam sentence."""
    found = ids_of(cli("search", "kv", "cache", "--json"))
    # Third: the survey named for the KV cache, LMCache and Mooncake are within 0.5% of each other.
    assert found[:2] == ["pagedattention", "vllm"] and found[2] in {"kv-cache-survey", "lmcache", "mooncake"}
    assert "prism" not in found[:5]


def _mini(tmp_path: Path, sources: list[dict[str, str]]) -> Path:
    """A catalog of sources that differ only where `sources` says (the rest: the same short cells)."""
    base = {
        "type": "Current",
        "year": "2024",
        "layer": "L3",
        "mechanism": "Keep blocks.",
        "objective": "Serve requests.",
        "question": "Which rule holds?",
        "availability": "Primary paper.",
        "accessed": "2026-01-01",
    }
    tables = []
    for s in sources:
        cells = {**base, **s}
        lines = [f'{k} = "{v}"' if k not in ("year", "accessed") else f"{k} = {v}" for k, v in cells.items()]
        tables.append("[[sources]]\n" + "\n".join(lines))
    path = tmp_path / "mine.toml"
    path.write_text("\n\n".join(tables) + "\n", encoding="utf-8")
    return path


def test_a_long_cell_weighs_no_more_than_a_short_one(cli, tmp_path):
    """BM25's length normalisation per field: `evict` once in a short mechanism beats `evict` once in
    a long one, although the first source's whole row is the longer (a long question)."""
    long_question = "Which " + " ".join(f"word{n}" for n in range(60)) + " holds?"
    filler = " ".join(f"step{n}" for n in range(40))
    path = _mini(
        tmp_path,
        [
            {"id": "long-cell", "name": "Long Cell", "source": "Long Cell", "mechanism": f"Evict after {filler}."},
            {
                "id": "short-cell",
                "name": "Short Cell",
                "source": "Short Cell",
                "mechanism": "Evict blocks.",
                "question": long_question,
            },
        ],
    )
    assert ids_of(cli("--catalog", str(path), "search", "evict", "--json")) == ["short-cell", "long-cell"]


def test_a_common_english_word_weighs_less_than_a_rare_one(cli, tmp_path):
    """Each source holds one of the two words once, in the same field: the rare word (`prefill`)
    outranks the ordinary one (`high`), however rare each is in the catalog."""
    path = _mini(
        tmp_path,
        [
            {"id": "ordinary", "name": "Ordinary", "source": "Ordinary", "mechanism": "Keep high blocks."},
            {"id": "rare", "name": "Rare", "source": "Rare", "mechanism": "Keep prefill blocks."},
        ],
    )
    assert ids_of(cli("--catalog", str(path), "search", "high", "prefill", "--json")) == ["rare", "ordinary"]


@pytest.mark.parametrize("fmt", [f.name for f in formats.FORMATS if formats.RECORDS in f.views])
def test_no_highlight_marks_in_any_format(cli, fmt):
    """The marks around matched words are for bold on a terminal: no format of the registry that prints
    search results carries them, with `why` asked for or not, coloured or not."""
    for extra in ([], ["--fields", "id,score,why"]):
        for color in ("never", "always"):
            result = cli("search", "eviction", "rule", "--format", fmt, "--color", color, *extra)
            assert result.code == 0 and "eviction" in result.out
            assert "\x02" not in result.out and "\x03" not in result.out, (fmt, extra, color)


def test_why_in_json_is_the_plain_text(cli):
    hits = json.loads(cli("search", "eviction", "--json", "--fields", "id,why").out)
    assert hits[0] == {
        "id": "pagedattention",
        "why": "question: Which allocation and eviction rule avoids capacity loss for the…",
    }


def test_ordinary_english_words_are_never_corrected(cli):
    """`climbs` and `arrive` are English the catalog lacks, not typos of `claim` and `arxiv`."""
    text = "TTFT p99 climbs when long prompts arrive"
    hits = json.loads(cli("search", text, "--json", "--fields", "id,matched,corrected,why").out)
    assert hits and all(h["corrected"] == {} for h in hits)
    assert not any("claim" in h["why"].casefold() or "arxiv" in " ".join(h["matched"]) for h in hits)
    assert [h["id"] for h in hits[:2]] == ["distserve", "prefill-deflection"]  # both name TTFT


def test_a_correction_is_in_json_and_on_stderr_at_a_terminal(cli):
    hits = json.loads(cli("search", "specualtive", "--json", "--fields", "id,corrected").out)
    assert hits[0] == {"id": "speculative-decoding", "corrected": {"specualtive": "speculative"}}
    assert all(h["corrected"] == {"specualtive": "speculative"} for h in hits)
    plain = cli("search", "specualtive", "--format", "csv", "--fields", "id,corrected")
    assert plain.out.splitlines()[:2] == ["id,corrected", "speculative-decoding,specualtive=speculative"]
    assert plain.err == ""  # in a pipe the data carry it; stderr stays quiet
    lines = on_terminal(["search", "specualtive", "--limit", "1"], 120)
    assert lines[0] == "searched for 'speculative' (for 'specualtive')"


def test_a_quoted_phrase_no_source_holds_falls_back_to_its_words(cli):
    result = cli("search", "--json", "--fields", "id,corrected", "--", '"eviction kv"')
    assert result.code == 0
    assert result.err == 'no source holds the phrase "eviction kv"; searched for its words\n'
    hits = json.loads(result.out)
    assert hits[0] == {"id": "pagedattention", "corrected": {'"eviction kv"': "eviction kv"}}
    held = cli("search", "--json", "--", '"kv cache"')
    assert held.err == "" and all(h["corrected"] == {} for h in json.loads(held.out))


def test_a_url_is_text_not_a_field(cli):
    for url in ("http://foo", "https://github.com/vllm-project/vllm"):
        result = cli("search", "--json", "--", url)
        assert result.code == 0 and result.err == "", url
    assert ids_of(cli("search", "--json", "--", "https://github.com/vllm-project/vllm"))[0] == "vllm"
    assert cli("search", "questoin:eviction").code == 2  # a field's name mistyped is still a usage error


def test_a_word_said_twice_counts_once(cli):
    once = json.loads(cli("search", "performance", "eviction", "--json").out)
    twice = json.loads(cli("search", "performance", "eviction", "performance", "--json").out)
    assert [h["id"] for h in once] == [h["id"] for h in twice]
