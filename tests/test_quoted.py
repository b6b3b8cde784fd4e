"""Quoted error messages matched against the shipped reports' titles as whole phrases (issue 46 §2),
through the CLI, on every shipped report."""

from __future__ import annotations

import json
import random

import pytest
import tomllib

from conftest import REPO
from invmap import quoting

REPORTS = tomllib.loads((REPO / "catalog.toml").read_text(encoding="utf-8"))["reports"]
# Each shipped report's title less its tracker tags, where it is long enough to be a phrase.
PHRASES = [(r, quoting.untagged(r["title"])) for r in REPORTS]
PHRASES = [(r, p) for r, p in PHRASES if quoting.usable(p) and '"' not in p]
LINE = '"{}" is in the title of report {}'


def triage(cli, *words: str) -> list[dict]:
    result = cli("triage", *words, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_a_quoted_title_brings_its_report_first_at_its_level_and_says_so(cli):
    missed = []
    for report, phrase in PHRASES:
        levels = {level["code"]: level for level in triage(cli, f'"{phrase}"')}
        level = levels.get(report["primary"])
        first = level["reports"][0] if level and level["reports"] else None
        if first is None or quoting.untagged(first["title"]) != phrase:
            missed.append(report["id"])  # (a report filed twice under one title: either comes first)
            continue
        assert LINE.format(phrase, first["id"]) in level["matched"], report["id"]
    assert missed == []
    assert len(PHRASES) > 200


def test_the_same_words_unquoted_and_scrambled_get_no_phrase_vote(cli):
    shuffle = random.Random(46).shuffle
    for report, phrase in PHRASES[::25]:
        words = phrase.split()
        shuffle(words)
        for level in triage(cli, *words):
            assert not any("is in the title of report" in line for line in level["matched"]), report["id"]


@pytest.mark.parametrize(
    "phrase", ["the decode kernel never returns on this card", "CUDA error: an unknown unicorn failed"]
)
def test_a_quoted_phrase_no_title_holds_changes_nothing(cli, phrase):
    assert triage(cli, f'"{phrase}"') == triage(cli, phrase)


def test_a_pasted_error_line_longer_than_a_title_finds_the_title(cli):
    report = next(r for r in REPORTS if r["title"] == "[Bug] CUDA runtime error: out of memory")
    first = triage(cli, "RuntimeError:", "CUDA", "runtime", "error:", "out", "of", "memory", "at", "startup")[0]
    assert first["code"] == report["primary"] == "L3"
    assert LINE.format("cuda runtime error: out of memory", report["id"]) in first["matched"]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('it fails with "Triton Error [CUDA]: invalid argument" on H100', ["triton error [cuda]: invalid argument"]),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate",
            ["torch.outofmemoryerror: cuda out of memory. tried to allocate"],
        ),
        ("it's slow and doesn't 'work at all' here", []),  # apostrophes are not quotes; 'work at all' is too short
        ("`RuntimeError: NCCL error` then `AssertionError` again", ["runtimeerror: nccl error"]),
    ],
)
def test_phrases_are_read_from_quotes_and_error_lines(text, found):
    assert quoting.phrases(text) == found
