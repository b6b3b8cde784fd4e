"""The development set of real measurements (issue measure, §4): index.toml describes every file of
tests/fixtures/measurements once, with the keys and values the rules' tuning and judging rest on, and
names-inventory.toml lists engine metric names with where each is defined. Nothing here runs invmap:
the labels were set from the threads before invmap read any of these files."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import tomli

from invmap.vocabulary import TRIAGE_CODES

HERE = Path(__file__).parent / "fixtures" / "measurements"
INDEX = HERE / "index.toml"
INVENTORY = HERE / "names-inventory.toml"
MEASUREMENTS: list[dict] = tomli.loads(INDEX.read_text(encoding="utf-8"))["measurement"]

# The one declaration of an index entry: key -> (type, required).
KEYS: dict[str, tuple[type, bool]] = {
    "file": (str, True),
    "kind": (str, True),
    "engine": (str, True),
    "engine_version": (str, True),
    "source": (str, True),
    "label": (str, True),
    "secondary": (str, False),
    "why": (str, True),
    "held_out": (bool, True),
    "pair": (str, False),
    "side": (str, False),
}
# What each kind of measurement may be stored as (the formats `triage --metrics` and `--bench` read).
KINDS: dict[str, tuple[str, ...]] = {"scrape": (".prom",), "bench": (".txt", ".json", ".jsonl", ".csv")}
QUIET = ("healthy", "not-enough-signal")  # no level: an engine as it should be, or too little to say
LABELS = (*TRIAGE_CODES, *QUIET)
SIDES = ("before", "after")
# Floors the set promises (issue measure §4 and the data task); pairs: see the report, one so far.
FLOORS = {"measurements": 40, "engines": 6, "levels": 10, "quiet": 8, "pairs": 1}
NAMED_FILE = r"(?P<engine>[a-z0-9]+(?:-[a-z0-9]+)*)-(?P<short>[a-z0-9]+(?:-[a-z0-9]+)*)-(?P<n>\d+)"
THREAD = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+(?:#[\w-]+)?")
AT_COMMIT = re.compile(r"[\w.-]+/[\w.-]+@(?:[0-9a-f]{40}|v[\w.+-]+):\S+")
WHY_CHARS = 420  # one or two sentences


def ids(entries: list[dict]) -> list[str]:
    return [e.get("file", "?") for e in entries]


def stored() -> list[str]:
    return sorted(p.name for p in HERE.iterdir() if p.is_file() and p.name not in (INDEX.name, INVENTORY.name))


def test_every_stored_file_is_listed_once_and_every_listed_file_is_stored():
    listed = [e["file"] for e in MEASUREMENTS]
    assert [f for f, n in Counter(listed).items() if n > 1] == []
    assert sorted(listed) == stored()


@pytest.mark.parametrize("entry", MEASUREMENTS, ids=ids(MEASUREMENTS))
@pytest.mark.parametrize("key", list(KEYS))
def test_every_key_is_present_where_required_and_of_its_type(entry, key):
    kind, required = KEYS[key]
    if required:
        assert key in entry
    if key in entry:
        assert type(entry[key]) is kind
        if kind is str and key not in ("engine_version",):
            assert entry[key].strip() == entry[key] != ""


@pytest.mark.parametrize("entry", MEASUREMENTS, ids=ids(MEASUREMENTS))
def test_no_key_is_undeclared(entry):
    assert set(entry) - set(KEYS) == set()


@pytest.mark.parametrize("entry", MEASUREMENTS, ids=ids(MEASUREMENTS))
def test_label_kind_engine_and_name_agree(entry):
    assert entry["label"] in LABELS
    if "secondary" in entry:
        assert entry["secondary"] in TRIAGE_CODES and entry["secondary"] != entry["label"]
        assert entry["label"] in TRIAGE_CODES  # a second level only beside a first one
    name = Path(entry["file"])
    assert name.suffix in KINDS[entry["kind"]]
    match = re.fullmatch(NAMED_FILE, name.stem)
    assert match and entry["file"].startswith(entry["engine"] + "-")


@pytest.mark.parametrize("entry", MEASUREMENTS, ids=ids(MEASUREMENTS))
def test_source_is_a_thread_or_a_file_at_a_commit(entry):
    assert THREAD.fullmatch(entry["source"]) or AT_COMMIT.fullmatch(entry["source"])


@pytest.mark.parametrize("entry", MEASUREMENTS, ids=ids(MEASUREMENTS))
def test_why_is_a_sentence_or_two(entry):
    why = entry["why"]
    assert why.endswith(".") and len(why) <= WHY_CHARS and why.count(". ") <= 2


@pytest.mark.parametrize("entry", MEASUREMENTS, ids=ids(MEASUREMENTS))
def test_each_file_is_a_text_a_terminal_can_show(entry):
    data = (HERE / entry["file"]).read_bytes()
    text = data.decode("utf-8")
    assert text.strip() and text.endswith("\n")
    assert [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0] == []


def test_half_is_held_out_within_one_with_both_halves_mixed():
    halves = {flag: [e for e in MEASUREMENTS if e["held_out"] is flag] for flag in (True, False)}
    assert abs(len(halves[True]) - len(halves[False])) <= 1
    for half in halves.values():
        kinds = {e["kind"] for e in half}
        labelled = [e for e in half if e["label"] in TRIAGE_CODES]
        quiet = [e for e in half if e["label"] in QUIET]
        assert kinds == set(KINDS) and len(labelled) >= 5 and len(quiet) >= 5
        assert len({e["engine"] for e in half}) >= 4


def test_the_set_meets_its_floors():
    found = {
        "measurements": len(MEASUREMENTS),
        "engines": len({e["engine"] for e in MEASUREMENTS}),
        "levels": sum(e["label"] in TRIAGE_CODES for e in MEASUREMENTS),
        "quiet": sum(e["label"] in QUIET for e in MEASUREMENTS),
        "pairs": len({e["pair"] for e in MEASUREMENTS if "pair" in e}),
    }
    assert {k: found[k] >= v for k, v in FLOORS.items()} == dict.fromkeys(FLOORS, True), found


def test_each_pair_is_two_benchmark_runs_of_one_engine_before_and_after():
    pairs: dict[str, list[dict]] = {}
    for entry in MEASUREMENTS:
        assert ("pair" in entry) == ("side" in entry)
        if "pair" in entry:
            pairs.setdefault(entry["pair"], []).append(entry)
    for members in pairs.values():
        assert sorted(e["side"] for e in members) == sorted(SIDES)
        assert {e["kind"] for e in members} == {"bench"}
        assert len({e["engine"] for e in members}) == len({e["held_out"] for e in members}) == 1
