"""The shipped glossary (issue: words, section 2): every term is found by `invmap define` under each of
its names, no name belongs to two terms, and the vocabulary engineers write is there."""

from __future__ import annotations

import json

import pytest
import tomli

from conftest import REPO
from invmap.text import normalize

GLOSSARY = tomli.loads((REPO / "catalog.toml").read_text(encoding="utf-8"))["glossary"]
NAMES = [
    (term, name)
    for term, entry in GLOSSARY.items()
    for name in [term, *([entry["expansion"]] if entry.get("expansion") else []), *entry.get("aliases", [])]
]

# The terms issue 34 (words) asks the glossary to hold, by the name the issue gives them; each must be
# a term, an expansion or an alias of the shipped glossary.
ASKED_FOR = [
    "MFU",
    "MBU",
    "E2E latency",
    "HBM",
    "throughput",
    "batch size",
    "max_num_seqs",
    "max_num_batched_tokens",
    "prefix cache hit rate",
    "preemption",
    "quantization",
    "acceptance rate",
    "queueing delay",
    "DP",
    "data parallelism",
    "eager mode",
    "attention backend",
    "tokens per second",
]


@pytest.mark.parametrize("term, name", NAMES, ids=[f"{t}:{n}" for t, n in NAMES])
def test_define_finds_every_term_by_each_of_its_names(cli, term, name):
    result = cli("define", "--json", "--", name)
    assert (result.code, result.err) == (0, ""), result.err
    assert [e["term"] for e in json.loads(result.out)] == [term]


def test_define_finds_a_name_in_any_case_or_spelling(cli):
    assert json.loads(cli("define", "--json", "max-num-seqs").out)[0]["term"] == "batch size"
    assert json.loads(cli("define", "--json", "Tokens", "Per", "Second").out)[0]["term"] == "throughput"
    assert json.loads(cli("define", "--json", "--", "--enforce-eager").out)[0]["term"] == "eager mode"


def test_no_name_belongs_to_two_terms():
    owner: dict[str, str] = {}
    for term, name in NAMES:
        assert owner.setdefault(normalize(name), term) == term, (name, term, owner[normalize(name)])


@pytest.mark.parametrize("name", ASKED_FOR)
def test_the_glossary_holds_what_engineers_write(cli, name):
    assert normalize(name) in {normalize(n) for _, n in NAMES}
    result = cli("define", "--json", "--", name)
    assert result.code == 0 and json.loads(result.out)[0]["definition"]


def test_corrected_definitions_say_what_the_issue_asks():
    """OOM, SLO, goodput and prefill were wrong or incomplete before issue 34."""
    text = {term: entry["definition"] for term, entry in GLOSSARY.items()}
    assert "preemption" in text["OOM"] and "CUDA graph" in text["OOM"] and "reserve" in text["OOM"]
    assert "SLA" in text["SLO"] and "internal target" in text["SLO"]
    assert "per GPU" in text["goodput"] and "SLO attainment target" in text["goodput"]
    assert "chunked prefill" in text["prefill"] and "not one pass" in text["prefill"]


def test_define_suggests_a_term_not_a_two_letter_one_inside_the_typo(cli):
    """`goodptu` holds `dp`: a partial match must not rank DP above goodput."""
    result = cli("define", "goodptu")
    assert (result.code, result.out) == (1, "")
    assert result.err == "Error: no glossary term 'goodptu'\nDid you mean:\n  goodput\n"


def test_vram_is_its_own_term_and_hbm_one_kind_of_it(cli):
    """Issue 44: looking up VRAM, GPU memory or device memory finds VRAM, which names HBM and GDDR as
    its kinds and points at `invmap gpus`; HBM no longer claims those names."""
    for name in ("VRAM", "GPU memory", "device memory"):
        assert [e["term"] for e in json.loads(cli("define", "--json", "--", name).out)] == ["VRAM"], name
    assert not {"VRAM", "GPU memory", "device memory"} & set(GLOSSARY["HBM"].get("aliases", []))
    vram = GLOSSARY["VRAM"]["definition"]
    assert (
        "HBM" in vram and "GDDR6" in vram and "invmap gpus" in vram and "device memory" in GLOSSARY["HBM"]["definition"]
    )


def test_slo_attainment_and_goodput_agree_with_distserve():
    slo, goodput = GLOSSARY["SLO"]["definition"], GLOSSARY["goodput"]["definition"]
    attainment = GLOSSARY["SLO attainment"]["definition"]
    assert "counts only the requests" not in slo
    for text in (slo, goodput, attainment):
        assert "highest request rate per GPU" in text and "attainment" in text, text
