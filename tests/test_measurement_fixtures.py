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
NAMES: list[dict] = tomli.loads(INVENTORY.read_text(encoding="utf-8"))["name"]

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
# Floors the set promises (issue measure §4 and the two data tasks): what the set holds today.
FLOORS = {"measurements": 64, "engines": 9, "levels": 18, "quiet": 46, "pairs": 4}
# Levels the first set lacked; each must be judged in both halves, not tuned on one.
IN_BOTH_HALVES = ("L3", "RL")
NAMED_FILE = r"(?P<engine>[a-z0-9]+(?:-[a-z0-9]+)*)-(?P<short>[a-z0-9]+(?:-[a-z0-9]+)*)-(?P<n>\d+)"
THREAD = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+(?:#[\w-]+)?")
AT_COMMIT = re.compile(r"[\w.-]+/[\w.-]+@(?:[0-9a-f]{40}|v[\w.+-]+):\S+")
WHY_CHARS = 420  # one or two sentences

# The one declaration of an inventory entry: key -> (type, required).
NAME_KEYS: dict[str, tuple[type, bool]] = {
    "engine": (str, True),
    "metric": (str, True),
    "type": (str, True),
    "labels": (list, True),
    "unit": (str, True),
    "meaning": (str, True),
    "defined_at": (str, True),  # "" when no defining file was found; then seen_at says where it was seen
    "seen_at": (str, False),
    "renamed_from": (str, False),
    "renamed_in": (str, False),
    "note": (str, False),
}
# The engines of issue measure §1, as the inventory names them.
INVENTORY_ENGINES = ("vllm", "sglang", "tgi", "llama.cpp", "triton", "trtllm", "dynamo", "llm-d", "lmcache")
METRIC_TYPES = ("counter", "gauge", "histogram", "summary")
METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
SEEN_AT = re.compile(r"https://\S+|" + AT_COMMIT.pattern)
MEANING_CHARS = 120  # a few words
# Names issue measure §1 asks for by name; each must be in the inventory.
ASKED_FOR = (
    "vllm:lora_requests_info",
    "vllm:spec_decode_num_accepted_tokens_per_pos_total",
    "vllm:nixl_xfer_time_seconds",
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:gen_throughput",
    "sglang:cache_hit_rate",
    "sglang:spec_accept_length",
    "sglang:num_retracted_reqs",
    "sglang:num_aborted_requests_total",
    "sglang:num_prefill_bootstrap_queue_reqs",
    "sglang:kvcache_transfer_latency",
    "nv_trt_llm_request_metrics",
    "nv_inference_queue_duration_us",
    "dynamo_frontend_queued_requests",
    "inference_pool_average_queue_size",
)
# Metric-name prefixes of the engines; a scrape fixture's sample with one of these must be inventoried.
ENGINE_PREFIXES = ("vllm:", "sglang:", "lmcache:", "llamacpp:", "tgi_", "nv_", "trtllm_", "dynamo_", "inference_")


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
        assert [label for label in IN_BOTH_HALVES if label not in {e["label"] for e in half}] == []


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


def key_faults(entry: dict) -> list[str]:
    faults = [f"undeclared {k}" for k in set(entry) - set(NAME_KEYS)]
    for key, (kind, required) in NAME_KEYS.items():
        if key not in entry:
            faults += [f"no {key}"] if required else []
        elif type(entry[key]) is not kind:
            faults.append(f"{key} is not {kind.__name__}")
        elif kind is str and key != "defined_at" and not entry[key].strip() == entry[key] != "":
            faults.append(f"{key} blank or padded")
    return faults


def content_faults(entry: dict) -> list[str]:
    labels = entry["labels"]
    checks = {
        "engine": entry["engine"] in INVENTORY_ENGINES,
        "type": entry["type"] in METRIC_TYPES,
        "metric": bool(METRIC_NAME.fullmatch(entry["metric"])),
        "labels": all(type(x) is str and LABEL_NAME.fullmatch(x) for x in labels)
        and len(set(labels)) == len(labels)
        and not {"le", "quantile"} & set(labels),
        "meaning": len(entry["meaning"]) <= MEANING_CHARS,
        # a defining file at a tag or commit, or else where it was seen and why no file was found
        "defined_at": bool(AT_COMMIT.fullmatch(entry["defined_at"]))
        if entry["defined_at"]
        else "seen_at" in entry and "note" in entry,
        "seen_at": "seen_at" not in entry or bool(SEEN_AT.fullmatch(entry["seen_at"])),
        "renamed": ("renamed_from" in entry) == ("renamed_in" in entry)
        and ("renamed_from" not in entry or entry["renamed_from"] != entry["metric"]),
    }
    return [key for key, ok in checks.items() if not ok]


def test_every_inventory_entry_has_its_keys_of_their_types():
    faults = {f"{e.get('engine')}/{e.get('metric')}": key_faults(e) for e in NAMES}
    assert {k: v for k, v in faults.items() if v} == {}


def test_every_inventory_entry_says_what_it_is_and_where_it_was_read():
    faults = {f"{e['engine']}/{e['metric']}": content_faults(e) for e in NAMES}
    assert {k: v for k, v in faults.items() if v} == {}


def test_the_inventory_lists_each_name_once_per_place_and_covers_every_engine():
    places = [(e["engine"], e["metric"], e["defined_at"]) for e in NAMES]
    assert [p for p, n in Counter(places).items() if n > 1] == []
    assert {e["engine"] for e in NAMES} == set(INVENTORY_ENGINES)
    assert [m for m in ASKED_FOR if m not in {e["metric"] for e in NAMES}] == []


def family(sample: str, known: set[str]) -> str:
    """The metric family a sample name belongs to, as the inventory spells families."""
    if sample in known:
        return sample
    for suffix, replacement in (
        ("_bucket", ""),
        ("_sum", ""),
        ("_count", ""),
        ("_created", ""),
        ("_created", "_total"),
    ):
        if sample.endswith(suffix) and sample[: -len(suffix)] + replacement in known:
            return sample[: -len(suffix)] + replacement
    return sample + "_total" if sample + "_total" in known else sample


def test_every_engine_metric_in_the_scrape_fixtures_is_inventoried():
    known = {e["metric"] for e in NAMES}
    missing = set()
    for entry in MEASUREMENTS:
        if entry["kind"] != "scrape":
            continue
        for line in (HERE / entry["file"]).read_text(encoding="utf-8").splitlines():
            match = METRIC_NAME.match(line)
            if line.startswith("#") or not match or not match.group(0).startswith(ENGINE_PREFIXES):
                continue
            if family(match.group(0), known) not in known:
                missing.add((entry["file"], match.group(0)))
    assert sorted(missing) == []
