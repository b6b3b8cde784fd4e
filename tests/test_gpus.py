"""The GPU table (`data/gpus.toml`, `invmap gpus`) and the estimates that read it: the source rule on
every figure, names as users type them, the JSON and CSV shapes, the terminal table, and `--gpu` in
`estimate roofline`, `estimate memory` and triage's bandwidth rule, with `--efficiency`."""

from __future__ import annotations

import copy
import csv
import importlib
import io
import json
import re
from pathlib import Path

import pytest
from test_measure import _decoding, evidence, levels, run, write

from conftest import on_terminal
from invmap import estimate as core
from invmap.errors import CatalogError, NotFoundError, UsageError
from invmap.estimate.gpus import BY_KEY

gpus_module = importlib.import_module("invmap.estimate.gpus")  # the package's `gpus` is the function
FIGURES = gpus_module.FIGURES
ENTRIES = core.gpu_table()
GPUS = core.gpus()
READING_KEYS = ["value", "unit", "source", "note", "base"]
# The figures every estimate reads: a GPU either gives each with a source, or says why not.
NEEDED = ("memory", "bandwidth", "bf16_dense")
# Today's names (before the table grew): scripts type them, so they keep meaning what they meant.
EARLIER_NAMES = {
    "a100-40gb": "a100-sxm-40gb",
    "a100-80gb": "a100-sxm-80gb",
    "h100-sxm": "h100-sxm",
    "h100-pcie": "h100-pcie",
    "h200": "h200",
    "b200": "b200",
    "l40s": "l40s",
    "l4": "l4",
    "rtx-4090": "rtx-4090",
    "mi300x": "mi300x",
}


def run_json(cli, *args):
    result = cli(*args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out, parse_constant=lambda c: pytest.fail(f"not finite JSON: {c}"))


# --- the source rule ----------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["name"])
def test_every_figure_has_a_source_that_is_an_https_url_and_a_unit_its_figure_knows(entry):
    assert gpus_module.problems(entry) == []
    for figure in FIGURES:
        reading = entry.get(figure.key)
        if reading is None or reading.get("value") is None:
            continue
        assert re.fullmatch(r"https://[^\s/]+\.[^\s/]+/\S*", reading["source"]), (entry["name"], figure.key)
        if figure.amount:
            assert reading["unit"] in figure.units, (entry["name"], figure.key)
        else:
            assert reading.get("unit") is None and reading["value"] in figure.words, (entry["name"], figure.key)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["name"])
def test_a_figure_the_estimates_need_is_given_with_its_source_or_says_why_not(entry):
    for key in NEEDED:
        reading = entry.get(key, {})
        assert reading.get("value") is not None or reading.get("note"), (entry["name"], key)


def broken(**changes):
    entry = copy.deepcopy(next(e for e in ENTRIES if e["name"] == "h100-sxm"))
    for key, value in changes.items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    return entry


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            broken(bandwidth={"value": 3.35, "unit": "TB/s"}),
            "h100-sxm.bandwidth: source must be an https URL, not None",
        ),
        (
            broken(bandwidth={"value": 3.35, "unit": "TB/s", "source": "aiconfigurator h100_sxm.yaml"}),
            "h100-sxm.bandwidth: source must be an https URL, not 'aiconfigurator h100_sxm.yaml'",
        ),
        (
            broken(bandwidth={"value": 3.35, "unit": "TB/s", "source": "http://example.com/datasheet"}),
            "h100-sxm.bandwidth: source must be an https URL, not 'http://example.com/datasheet'",
        ),
        (
            broken(bandwidth={"value": 3.35, "unit": "TB", "source": "https://example.com/d"}),
            "h100-sxm.bandwidth: unit 'TB' is not one of TB/s, GB/s",
        ),
        (
            broken(bf16_dense={"value": float("nan"), "unit": "TFLOP/s", "source": "https://example.com/d"}),
            "h100-sxm.bf16_dense: value must be a positive finite number, not nan",
        ),
        (
            broken(bf16_dense={"value": True, "unit": "TFLOP/s", "source": "https://example.com/d"}),
            "h100-sxm.bf16_dense: value must be a positive finite number, not True",
        ),
        (
            broken(memory_type={"value": "HBM4", "source": "https://example.com/d"}),
            "h100-sxm.memory_type: value 'HBM4' is not one of HBM2, HBM2e, HBM3, HBM3e, GDDR6, GDDR6X",
        ),
        (
            broken(memory_type={"value": "HBM3", "unit": "GB", "source": "https://example.com/d"}),
            "h100-sxm.memory_type: a figure of words has no unit, not 'GB'",
        ),
        (broken(fp8_dense={}), "h100-sxm.fp8_dense: is empty: leave it out, or give a note saying why"),
        (
            broken(fp8_dense={"source": "https://example.com/d"}),
            "h100-sxm.fp8_dense: has a unit or source but no value",
        ),
        (
            broken(bandwidth={"value": 3.35, "unit": "TB/s", "source": "https://e.com/d", "seen": 1}),
            "unknown key 'seen'",
        ),
        (
            broken(multiprocessors={"value": 131.5, "unit": "SMs", "source": "https://example.com/d"}),
            "h100-sxm.multiprocessors: value must be a whole number of multiprocessors, not 131.5",
        ),
        (
            broken(multiprocessors={"value": 132, "unit": "cores", "source": "https://example.com/d"}),
            "h100-sxm.multiprocessors: unit 'cores' is not one of SMs, CUs",
        ),
        (broken(clock={"value": 1}), "h100-sxm: unknown key 'clock'"),
        (broken(vendor="Intel"), "h100-sxm: vendor must be one of NVIDIA, AMD"),
        (broken(name="H100 SXM"), "a name is lower-case words joined by '-', not 'H100 SXM'"),
    ],
)
def test_the_source_rule_names_the_gpu_and_the_figure(entry, problem):
    assert any(p.startswith(problem) or problem in p for p in gpus_module.problems(entry)), gpus_module.problems(entry)


def test_a_broken_shipped_table_is_exit_3_naming_the_file_and_figure(cli, monkeypatch):
    tables = importlib.import_module("invmap.estimate.tables")
    bad = [broken(bandwidth={"value": 3.35, "unit": "TB/s"})]
    monkeypatch.setitem(tables._TABLES, "gpu", bad)
    monkeypatch.setattr(gpus_module, "_GPUS", [])
    result = cli("gpus")
    assert result.code == 3 and result.out == ""
    assert (
        result.err.startswith("Error: ") and "gpus.toml: h100-sxm.bandwidth: source must be an https URL" in result.err
    )
    aliased = [broken(), broken(name="h100-twin", aliases=["h100-sxm"])]
    monkeypatch.setitem(tables._TABLES, "gpu", aliased)
    with pytest.raises(CatalogError) as caught:
        core.gpus()
    assert "h100-twin: alias 'h100-sxm' is the name of h100-sxm" in caught.value.problems


def test_the_h100_sxm_reads_nvidias_figures(cli):
    h100 = next(g for g in run_json(cli, "gpus") if g["name"] == "h100-sxm")
    assert (h100["bandwidth"]["value"], h100["bandwidth"]["unit"], h100["bandwidth"]["base"]) == (3.35, "TB/s", 3.35e12)
    assert (h100["bf16_dense"]["value"], h100["bf16_dense"]["unit"], h100["bf16_dense"]["base"]) == (
        989,
        "TFLOP/s",
        989e12,
    )
    assert h100["memory"]["base"] == 80 * 10**9 and h100["memory_reported"]["base"] == round(79.22 * 2**30)
    assert h100["bandwidth"]["source"].startswith("https://github.com/ai-dynamo/aiconfigurator/blob/")
    sms = h100["multiprocessors"]
    assert (sms["value"], sms["unit"], sms["base"]) == (132, "SMs", 132) and isinstance(sms["base"], int)
    assert sms["source"].startswith("https://github.com/openxla/xla/blob/")


# Totals read from two logs that name the part and print the same figure (docs/gpus.md, "How memory is
# counted"): the source is one log, pinned to a commit, and the note cites the other by its URL.
TWO_LOG_TOTALS = {
    "a100-pcie-80gb": (79.15, "https://github.com/vllm-project/vllm/issues/9011"),
    "a100-sxm-40gb": (39.56, "https://github.com/vllm-project/vllm/issues/8731"),
    "b200": (178.35, "https://github.com/alee51/CS224R_Final_Project/blob/aa7dc238726cc12da88460e8410a44d99a18f88b/"),
    "mi300x": (191.98, "https://github.com/vllm-project/vllm/issues/7951"),
    "rtx-4090": (23.64, "https://github.com/3DTopia/Phidias-Diffusion/issues/8"),
}


@pytest.mark.parametrize(("name", "total"), TWO_LOG_TOTALS.items(), ids=list(TWO_LOG_TOTALS))
def test_a_total_two_logs_agree_on_sizes_the_vllm_pool(cli, name, total):
    gib, other = total
    reported = next(g for g in run_json(cli, "gpus") if g["name"] == name)["memory_reported"]
    assert (reported["value"], reported["unit"], reported["base"]) == (gib, "GiB", round(gib * 2**30))
    assert re.fullmatch(r"https://github\.com/[^/]+/[^/]+/(blob/[0-9a-f]{40}/\S+|issues/\d+)", reported["source"])
    assert other in reported["note"] and reported["note"].startswith("Two logs ")
    out = run_json(cli, "estimate", "memory", "--engine", "vllm", "--model", "llama-3.1-8b", "--gpu", name)
    memory = next(i for i in out["inputs"] if i["name"] == "memory")
    assert (memory["value"], memory["from"]) == (round(gib * 2**30), f"gpu ({gib} GiB as the device reports it)")


# --- names as users type them -------------------------------------------------------------------


def names_of(gpu):
    return [gpu.name, gpu.display, *gpu.aliases]


def shared(name):
    key = gpus_module.folded(name)
    return sum(key in map(gpus_module.folded, names_of(g)) for g in GPUS) > 1


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.name)
def test_every_name_display_name_and_alias_finds_its_gpu(gpu):
    for name in names_of(gpu):
        if shared(name):
            with pytest.raises(UsageError, match="is ambiguous"):
                core.find_gpu(name)
        else:
            assert core.find_gpu(name).name == gpu.name, name
            assert core.find_gpu(name.upper().replace("-", " ")).name == gpu.name, name


def test_the_names_used_before_keep_their_meaning():
    assert {typed: core.find_gpu(typed).name for typed in EARLIER_NAMES} == EARLIER_NAMES


@pytest.mark.parametrize(
    ("typed", "candidates"),
    [
        ("h100", ["h100-sxm", "h100-pcie", "h100-nvl"]),
        ("a100", ["a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-40gb", "a100-pcie-80gb"]),
        ("h100-80gb", ["h100-sxm", "h100-pcie"]),  # both are H100 80GB: the name says neither
        ("mi3", ["mi300x", "mi325x"]),
    ],
)
def test_a_name_several_gpus_answer_to_is_a_usage_error_listing_them(cli, typed, candidates):
    result = cli("estimate", "roofline", "--gpu", typed)
    assert (result.code, result.out) == (2, "")
    listed = ", ".join(f"{n} ({core.find_gpu(n).display})" for n in candidates[:-1])
    last = f"{candidates[-1]} ({core.find_gpu(candidates[-1]).display})"
    assert result.err == f"Error: GPU '{typed}' is ambiguous: it could be {listed} or {last}; give one of those names\n"


def test_a_name_that_starts_one_gpus_name_is_suggested_not_taken(cli):
    result = cli("estimate", "memory", "--gpu", "b20")
    assert result.code == 2 and result.err.startswith("Error: unknown GPU 'b20'; did you mean 'b200'?")
    wrong = cli("estimate", "memory", "--gpu", "\x1b[31mh100")
    assert wrong.code == 2 and "\x1b" not in wrong.err


# --- what `invmap gpus` prints ------------------------------------------------------------------


def test_gpus_json_gives_every_figure_as_value_unit_source_note_and_base(cli):
    rows = run_json(cli, "gpus")
    assert [r["name"] for r in rows] == [g.name for g in GPUS]
    for row, gpu in zip(rows, GPUS):
        assert list(row) == ["name", "display", "vendor", "aliases", "note", *(f.key for f in FIGURES)]
        for figure in FIGURES:
            reading = row[figure.key]
            assert list(reading) == READING_KEYS
            if reading["value"] is None:
                assert reading["unit"] is reading["source"] is reading["base"] is None
            elif figure.amount:
                assert reading["base"] == pytest.approx(reading["value"] * figure.units[reading["unit"]])
            else:
                assert reading["base"] is None
        assert row == gpu.summary()


def test_gpus_csv_has_a_column_each_for_value_unit_source_and_note(cli):
    result = cli("gpus", "--format", "csv")
    assert result.code == 0
    table = list(csv.reader(io.StringIO(result.out)))
    suffixes = ("", "_unit", "_source", "_note")
    assert table[0] == ["name", "display", "vendor", *(f.key + s for f in FIGURES for s in suffixes)]
    assert [row[0] for row in table[1:]] == [g.name for g in GPUS]
    h100 = dict(zip(table[0], next(r for r in table if r[0] == "h100-sxm")))
    assert (h100["bandwidth"], h100["bandwidth_unit"]) == ("3.35", "TB/s")


@pytest.mark.parametrize("cols", [60, 80, 120])
def test_the_gpu_table_fits_the_terminal(cols):
    lines = on_terminal(["gpus"], cols)
    assert lines and max(len(line) for line in lines) <= cols
    text = "\n".join(lines)
    for gpu in GPUS:  # every row, its memory, bandwidth and peaks whole
        assert gpu.name in text
        for key in ("memory", "memory_type"):
            assert gpu.reading(key).shown() in text, (gpu.name, key)
        for key in ("bandwidth", "bf16_dense", "fp8_dense"):  # a column in one unit (issue 39)
            assert gpu.reading(key).shown_in_first_unit(BY_KEY[key]) in text, (gpu.name, key)
    if cols >= 80:
        assert lines[0].split() == ["Name", "Memory", "Type", "Bandwidth", "BF16", "dense", "FP8", "dense"]


def test_one_gpu_shows_each_figure_with_its_source(cli):
    result = cli("gpus", "h100-sxm")
    assert result.code == 0
    lines = result.out.splitlines()
    assert [line.split("\t")[0] for line in lines] == [f.key for f in FIGURES]
    bandwidth = next(line.split("\t") for line in lines if line.startswith("bandwidth\t"))
    assert bandwidth[1:3] == ["3.35 TB/s", core.find_gpu("h100-sxm").reading("bandwidth").source]
    assert run_json(cli, "gpus", "H100 80GB HBM3") == core.find_gpu("h100-sxm").summary()
    for typed, message in (("h1000", "unknown GPU 'h1000'"), ("h100", "GPU 'h100' is ambiguous")):
        missing = cli("gpus", typed)
        assert (missing.code, missing.out) == (1, "") and missing.err.startswith(f"Error: {message}")


def test_a_positional_name_not_found_is_exit_1():
    with pytest.raises(NotFoundError):
        core.find_gpu("nope", positional=True)


# --- the estimates that read the table ----------------------------------------------------------


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.name)
def test_roofline_takes_the_peak_and_bandwidth_from_the_gpu(cli, gpu):
    result = cli("estimate", "roofline", "--scenario", "decode", "--model", "llama-3.1-8b", "--gpu", gpu.name, "--json")
    if gpu.bf16_peak is None or gpu.bandwidth is None:
        assert result.code == 2 and "(no source it accepts gives one): give --" in result.err
        return
    assert result.code == 0, result.err
    out = json.loads(result.out)
    inputs = {i["name"]: i for i in out["inputs"]}
    assert inputs["peak_operations_per_second"]["value"] == gpu.bf16_peak
    assert inputs["bandwidth_bytes_per_second"]["value"] == gpu.bandwidth
    assert inputs["bandwidth_bytes_per_second"]["from"] == f"gpu ({gpu.reading('bandwidth').shown()})"
    assert out["results"]["ridge_point_operations_per_byte"] == pytest.approx(gpu.bf16_peak / gpu.bandwidth)
    assert out["gpu"] == gpu.summary() and out["defaults_used"] is False


def test_efficiency_derates_both_roofs_and_says_so(cli):
    base = ("estimate", "roofline", "--scenario", "decode", "--model", "llama-3.1-8b", "--gpu", "h100-sxm")
    full = run_json(cli, *base)
    half = run_json(cli, *base, "--efficiency", "0.5")
    assert half["results"]["compute_ceiling_operations_per_second"] == pytest.approx(989e12 * 0.5)
    assert half["results"]["step_time_lower_bound_seconds"] == pytest.approx(
        2 * full["results"]["step_time_lower_bound_seconds"]
    )
    assert {"name": "efficiency", "value": 0.5, "unit": "fraction", "from": "option"} in half["inputs"]
    assert any("derated by --efficiency 0.5" in a for a in half["assumptions"])
    assert "P_peak = 989,000,000,000,000 x 0.5 = 494,500,000,000,000 operations per second" in half["formulas"][2]
    assert not any("--efficiency" in a for a in full["assumptions"])
    for bad in ("1.5", "nan", "inf"):
        refused = cli(*base, "--efficiency", bad)
        assert refused.code == 2 and refused.err.startswith("Error: --efficiency must be a fraction in (0, 1]")


@pytest.mark.parametrize("gpu", [g for g in GPUS if g.memory_bytes is not None], ids=lambda g: g.name)
def test_memory_sizes_the_pool_on_the_reported_total_when_known_else_the_datasheet(cli, gpu):
    out = run_json(cli, "estimate", "memory", "--model", "qwen3-8b", "--gpu", gpu.name)
    memory = next(i for i in out["inputs"] if i["name"] == "memory")
    if gpu.memory_reported_bytes is not None:
        assert memory["value"] == gpu.memory_reported_bytes
        assert memory["from"] == f"gpu ({gpu.reading('memory_reported').shown()} as the device reports it)"
    else:
        assert memory["value"] == gpu.memory_bytes
        assert memory["from"] == f"gpu ({gpu.reading('memory').shown()} as the datasheet states it)"
        assert any(
            a.startswith(f"memory is the datasheet's {gpu.reading('memory').shown()}") for a in out["assumptions"]
        )
    assert out["results"]["budget_bytes"] == int(memory["value"] * 0.9)


def test_triage_reads_the_bandwidth_from_the_gpu_and_derates_it(cli, tmp_path):
    """Llama 3.1 8B on an H100 SXM: the table's 3.35 TB/s gives the same 4.97 ms bound as --bandwidth
    3.35e12 (tests/test_measure.py); at --efficiency 0.5 the bound doubles and a 5.5 ms TPOT is faster."""
    path = write(tmp_path, "s.prom", _decoding(0.0055))
    found = run(cli, "--metrics", path, "--model", "llama-3.1-8b", "--gpu", "h100-sxm")
    assert evidence(levels(found), "L1") == [
        "decode takes 5.5 ms per token (TPOT mean), within 1.2x of the 4.97 ms a step needs to read Llama 3.1 8B's "
        "weights and the KV of 4 requests of 1,100 tokens at 3.35 TB/s (H100 SXM): decode is memory-bandwidth bound"
    ]
    slow = write(tmp_path, "slow.prom", _decoding(0.0105))
    derated = run(cli, "--metrics", slow, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--efficiency", "0.5")
    assert evidence(levels(derated), "L1") == [
        "decode takes 10.5 ms per token (TPOT mean), within 1.2x of the 9.93 ms a step needs to read Llama 3.1 8B's "
        "weights and the KV of 4 requests of 1,100 tokens at 1.68 TB/s (0.5 x 3.35 TB/s, H100 SXM): decode is "
        "memory-bandwidth bound"
    ]


def test_the_estimates_page_lists_every_key_of_gpus_json():
    """docs/estimates.md's `gpus --json` keys are the entry's words and every declared figure, in order."""
    page = " ".join((Path(__file__).parents[1] / "docs" / "estimates.md").read_text(encoding="utf-8").split())
    found = re.search(r"`gpus --json`: `\[\{([^}]*)\}\]`", page)
    assert found, "docs/estimates.md names no gpus --json keys"
    assert [k.strip() for k in found[1].split(",")] == list(gpus_module.ENTRY_KEYS)
