"""Search: what an inference engineer types finds what the map means (issue: search)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import ids_of

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
    exact = ids_of(cli("search", "evict", "--exact", "--json"))
    assert exact == [] and ids_of(cli("search", "evict", "--json"))[0] == "pagedattention"


def test_min_score_filters_on_the_shown_scale(cli):
    every = json.loads(cli("search", "kv cache offloading", "--json", "--limit", "100").out)
    high = json.loads(cli("search", "kv cache offloading", "--json", "--limit", "100", "--min-score", "90").out)
    assert [h["id"] for h in high] == [h["id"] for h in every if h["score"] >= 90] and len(high) < len(every)
    assert cli("search", "kv", "--min-score", "101").code == 2
