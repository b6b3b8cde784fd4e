"""Search: what an inference engineer types finds what the map means."""

from __future__ import annotations

import pytest

from conftest import ids_of


@pytest.mark.parametrize(
    "text, expected, within",
    [
        ("speculative decoding", {"speculative-decoding", "speculative-sampling"}, 2),
        ("paged attention", {"pagedattention"}, 1),
        ("vllm", {"vllm"}, 1),
        ("flash attention", {"flashattention"}, 1),
        ("roofline", {"roofline"}, 1),
        ("mooncake", {"mooncake"}, 1),
        ("disaggregation", {"distserve"}, 5),
        ("chunked prefill", {"sarathi-serve"}, 2),
        ("specualtive decodng", {"speculative-decoding", "speculative-sampling"}, 3),
        ("tile attention", {"flashattention"}, 3),
        ("virtual memory", {"vattention"}, 3),
    ],
)
def test_search_finds_what_people_type(cli, text, expected, within):
    found = ids_of(cli("search", text, "--json"))
    assert expected <= set(found[:within]), found


def test_search_nonsense_is_empty_and_quiet(cli):
    result = cli("search", "zzqqxx", "--json")
    assert (result.code, result.out, result.err) == (0, "[]\n", "")


def test_search_words_quoted_or_not(cli):
    assert cli("search", "kv", "cache", "--json").out == cli("search", "kv cache", "--json").out
