"""Finding one source or a set: identifiers, names, filters and their messages."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import ids_of, installed_invmap


@pytest.mark.parametrize(
    "query",
    [
        "2407.00079",
        "2407.00079v2",
        "arXiv:2407.00079",
        "https://arxiv.org/abs/2407.00079",
        "http://arxiv.org/pdf/2407.00079v2",
        "arxiv.org/abs/2407.00079",
        "mooncake",
        "https://github.com/kvcache-ai/Mooncake/",
    ],
)
def test_show_by_any_identifier(cli, query):
    assert json.loads(cli("show", query, "--json").out)["id"] == "mooncake"


@pytest.mark.parametrize(
    "query, ident",
    [
        ("10.1145/3779212.3790135", "bullet"),
        ("doi:10.1145/3779212.3790135", "bullet"),
        ("https://doi.org/10.1145/3731569.3764815", "aegaeon"),
        ("https://docs.vllm.ai/", "vllm"),
        ("http://docs.vllm.ai", "vllm"),
        ("https://github.com/llm-d/llm-d", "llm-d"),
        ("Fast Inference from Transformers via Speculative Decoding", "speculative-decoding"),
        ("2504.19516", "bullet"),
    ],
)
def test_show_by_doi_link_and_title(cli, query, ident):
    assert json.loads(cli("show", query, "--json").out)["id"] == ident


def test_unknown_identifier_is_not_guessed_and_shared_link_is_ambiguous(cli):
    missing = cli("show", "https://arxiv.org/abs/9999.99999")
    assert (missing.code, missing.out) == (1, "")
    assert (
        missing.err.startswith("Error: no source matches 'https://arxiv.org/abs/9999.99999'\n")
        and "Did you mean" not in missing.err
    )
    shared = cli("show", "https://github.com/vllm-project/vllm")
    assert shared.code == 1 and "PagedAttention (pagedattention)" in shared.err and "vLLM (vllm)" in shared.err


def test_show_several_names(cli):
    both = json.loads(cli("show", "vllm", "sglang", "--json").out)
    assert [r["id"] for r in both] == ["vllm", "sglang"]
    miss = cli("show", "vllm", "nosuchthingatall")
    assert (miss.code, miss.out) == (1, "")


def test_layer_words_and_comma_lists(cli):
    l5 = ids_of(cli("list", "--layer", "L5", "--json"))
    assert ids_of(cli("list", "--layer", "disaggregation", "--json")) == l5
    assert ids_of(cli("list", "--layer", "cache management", "--json")) == ids_of(
        cli("list", "--layer", "L3", "--json")
    )
    assert set(ids_of(cli("list", "--layer", "adaptive control", "--json"))) == {"llm-d", "bayesian-optimization"}
    assert ids_of(cli("list", "--layer", "L3,L5", "--json")) == ids_of(cli("list", "-l", "L3", "-l", "L5", "--json"))
    assert ids_of(cli("list", "--type", "current,survey", "--json")) == ids_of(
        cli("list", "-t", "current", "-t", "survey", "--json")
    )


def test_did_you_mean_on_values(cli):
    result = cli("list", "--type", "curent")
    assert result.code == 2 and result.err.startswith(
        "Error: unknown type 'curent'; did you mean 'Current'? (valid types: "
    )
    version = cli("version")
    assert version.code == 2 and "Did you mean '--version'?" in version.err


def test_empty_result_notice_only_on_a_terminal(sh):
    result = sh("list", "--type", "survey", "--layer", "L1")
    assert (result.code, result.out, result.err) == (0, "", "")


def test_version_names_the_shipped_catalog_whatever_catalog_says(cli, mine):
    from invmap import __version__

    expected = f"invmap {__version__} — 30 sources, accessed 2026-08-07\n"
    assert cli("--catalog", str(mine), "--version").out == expected


def test_open_without_a_display_prints_the_link(tmp_path):
    program = installed_invmap()
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    done = subprocess.run([program, "open", "mooncake"], capture_output=True, text=True, env=env, timeout=30)
    assert (done.returncode, done.stdout) == (0, "https://arxiv.org/abs/2407.00079\n")


def test_layer_words_add_nothing_for_a_fragment_inside_a_word(cli):
    labels_with_on = ids_of(cli("list", "--layer", "on", "--json"))
    assert labels_with_on == ["kiely-guide"]  # only "Guide navigation" contains "on"; no level matches
