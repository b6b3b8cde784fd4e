"""The four query commands through the real CLI: records, exit codes, messages, stdout vs stderr."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ASSETS, JSON_KEYS, bash, ids_of, installed_invmap

KEYS = JSON_KEYS
ALL_IDS = None


# `--layer L3` selects every source whose label covers level 3, in catalog order.
L3_IDS = ["pagedattention", "vllm", "vattention", "mooncake", "sglang", "lmcache"]


def ids(result) -> list[str]:
    assert result.code == 0, result.err
    assert result.err == ""
    return [r["id"] for r in json.loads(result.out)]


def all_records(cli) -> list[dict]:
    return json.loads(cli("list", "--json").out)


# --- list and its filters -----------------------------------------------------------------------


def test_list_json_contract(cli):
    records = all_records(cli)
    assert len(records) == 30
    assert all(list(r) == KEYS for r in records)
    paged = next(r for r in records if r["id"] == "pagedattention")
    assert paged == {
        "id": "pagedattention",
        "name": "PagedAttention",
        "source": "PagedAttention, Kwon et al.",
        "title": "Efficient Memory Management for Large Language Model Serving with PagedAttention",
        "keywords": [
            "KV cache",
            "paging",
            "virtual memory",
            "memory fragmentation",
            "block table",
            "KV blocks",
            "copy-on-write",
            "beam search",
            "parallel sampling",
            "swapping and recomputation",
            "preemption",
            "vLLM",
        ],
        "authors": "Kwon et al.",
        "author_names": [
            "Woosuk Kwon",
            "Zhuohan Li",
            "Siyuan Zhuang",
            "Ying Sheng",
            "Lianmin Zheng",
            "Cody Hao Yu",
            "Joseph E. Gonzalez",
            "Hao Zhang",
            "Ion Stoica",
        ],
        "arxiv": "2309.06180",
        "doi": "10.1145/3600006.3613165",
        "url": "https://arxiv.org/abs/2309.06180",
        "code": "https://github.com/vllm-project/vllm",
        "settings": [
            {
                "engine": "vLLM",
                "flag": "--block-size",
                "version": "v0.30.0",
                "commit": "ced6857afa0ea7b2e3f0846a62e1394e90f15607",
                "file": "vllm/engine/arg_utils.py",
                "note": "tokens per KV block (CacheConfig.block_size)",
                "deprecated": None,
                "replaced_by": None,
            },
            {
                "engine": "vLLM",
                "flag": "--gpu-memory-utilization",
                "version": "v0.30.0",
                "commit": "ced6857afa0ea7b2e3f0846a62e1394e90f15607",
                "file": "vllm/engine/arg_utils.py",
                "note": "share of GPU memory for the model executor, weights and the KV block pool (0.92 by default)",
                "deprecated": None,
                "replaced_by": None,
            },
            {
                "engine": "vLLM",
                "flag": "--swap-space",
                "version": "v0.30.0",
                "commit": "ced6857afa0ea7b2e3f0846a62e1394e90f15607",
                "file": "vllm/engine/arg_utils.py",
                "note": "CPU swap space per GPU, in GiB (4 by default up to v0.17)",
                "deprecated": "v0.18.0: removed from the engine arguments (present up to v0.17.0)",
                "replaced_by": None,
            },
            {
                "engine": "SGLang",
                "flag": "--page-size",
                "version": "v0.5.23",
                "commit": None,
                "file": "python/sglang/srt/arg_groups/fields/schedule.py",
                "note": "tokens in a page of the KV pool",
                "deprecated": None,
                "replaced_by": None,
            },
            {
                "engine": "SGLang",
                "flag": "--mem-fraction-static",
                "version": "v0.5.23",
                "commit": None,
                "file": "python/sglang/srt/arg_groups/fields/schedule.py",
                "note": "share of memory for weights and the KV cache pool",
                "deprecated": None,
                "replaced_by": None,
            },
            {
                "engine": "TensorRT-LLM",
                "flag": "kv_cache_config.tokens_per_block",
                "version": "000439672005",
                "commit": "0004396720054fd8e205cbf616f21f0b57c6b412",
                "file": "tensorrt_llm/llmapi/llm_args.py",
                "note": "tokens per KV block, 32 by default",
                "deprecated": None,
                "replaced_by": None,
            },
            {
                "engine": "TensorRT-LLM",
                "flag": "kv_cache_config.free_gpu_memory_fraction",
                "version": "000439672005",
                "commit": "0004396720054fd8e205cbf616f21f0b57c6b412",
                "file": "tensorrt_llm/llmapi/llm_args.py",
                "note": "share of GPU memory for the KV cache, 0.9 by default, the smaller of it and max_tokens when both are set",
                "deprecated": None,
                "replaced_by": None,
            },
            {
                "engine": "TensorRT-LLM",
                "flag": "--free_gpu_memory_fraction",
                "version": "00209af149e7",
                "commit": "00209af149e7774406881a37283dce303571eb11",
                "file": "tensorrt_llm/commands/serve.py",
                "note": "free GPU memory left after weights and buffers that the KV cache takes, 0.9 by default (also --kv_cache_free_gpu_memory_fraction)",
                "deprecated": None,
                "replaced_by": None,
            },
        ],
        "seam": "vLLM's KV-cache manager and block pool (vllm/v1/core/kv_cache_manager.py, block_pool.py), each request's block list (vllm/v1/core/single_type_kv_cache_manager.py) and the block table the kernels read (vllm/v1/worker/block_table.py), which map logical blocks to physical ones, and the scheduler that allocates, frees and preempts them (vllm/v1/core/sched/scheduler.py).",
        "places": [
            {
                "repo": "https://github.com/vllm-project/vllm",
                "path": "vllm/v1/core/kv_cache_manager.py",
                "symbol": "KVCacheManager",
                "note": "allocates slots per request and finds prefix-cache hits",
                "commit": "ced6857afa0ea7b2e3f0846a62e1394e90f15607",
                "version": "v0.30.0",
                "url": "https://github.com/vllm-project/vllm/blob/ced6857afa0ea7b2e3f0846a62e1394e90f15607/vllm/v1/core/kv_cache_manager.py",
            },
            {
                "repo": "https://github.com/vllm-project/vllm",
                "path": "vllm/v1/core/block_pool.py",
                "symbol": "BlockPool",
                "note": "the pool of physical KV blocks, their free queue and hash cache",
                "commit": "ced6857afa0ea7b2e3f0846a62e1394e90f15607",
                "version": "v0.30.0",
                "url": "https://github.com/vllm-project/vllm/blob/ced6857afa0ea7b2e3f0846a62e1394e90f15607/vllm/v1/core/block_pool.py",
            },
            {
                "repo": "https://github.com/vllm-project/vllm",
                "path": "vllm/v1/core/single_type_kv_cache_manager.py",
                "symbol": "SingleTypeKVCacheManager",
                "note": "each request's logical-to-physical block list, per attention type",
                "commit": "ced6857afa0ea7b2e3f0846a62e1394e90f15607",
                "version": "v0.30.0",
                "url": "https://github.com/vllm-project/vllm/blob/ced6857afa0ea7b2e3f0846a62e1394e90f15607/vllm/v1/core/single_type_kv_cache_manager.py",
            },
            {
                "repo": "https://github.com/vllm-project/vllm",
                "path": "vllm/v1/worker/block_table.py",
                "symbol": "BlockTable",
                "note": "the block table the kernels read, and the slot mapping",
                "commit": "ced6857afa0ea7b2e3f0846a62e1394e90f15607",
                "version": "v0.30.0",
                "url": "https://github.com/vllm-project/vllm/blob/ced6857afa0ea7b2e3f0846a62e1394e90f15607/vllm/v1/worker/block_table.py",
            },
            {
                "repo": "https://github.com/vllm-project/vllm",
                "path": "vllm/v1/core/sched/scheduler.py",
                "symbol": "Scheduler",
                "note": "allocates, frees and preempts blocks while scheduling",
                "commit": "ced6857afa0ea7b2e3f0846a62e1394e90f15607",
                "version": "v0.30.0",
                "url": "https://github.com/vllm-project/vllm/blob/ced6857afa0ea7b2e3f0846a62e1394e90f15607/vllm/v1/core/sched/scheduler.py",
            },
        ],
        "recreate": ["invmap simulate kv --allocation paged"],
        "type": "Current",
        "year": 2023,
        "venue": "SOSP 2023",
        "published_in": "Proceedings of the ACM SIGOPS 29th Symposium on Operating Systems Principles",
        "entry_type": "inproceedings",
        "report_number": None,
        "layer": "L3",
        "layers": ["L3"],
        "mechanism": "Map logical KV blocks to physical blocks.",
        "objective": "Improve memory management for generative-model serving.",
        "question": "Which allocation and eviction rule avoids capacity loss for the workload?",
        "availability": "vLLM public project.",
        "accessed": "2026-08-07",
    }
    vllm = next(r for r in records if r["id"] == "vllm")
    assert vllm["year"] is None and vllm["layers"] == ["L2", "L3"]
    assert next(r for r in records if r["id"] == "mooncake")["url"] == "https://arxiv.org/abs/2407.00079"
    assert next(r for r in records if r["id"] == "bullet")["url"] == "https://doi.org/10.1145/3779212.3790135"
    assert next(r for r in records if r["id"] == "llm-d")["layers"] == ["L4", "L5", "L6"]


def test_layer_code_matches_every_label_covering_it(cli):
    assert ids(cli("list", "--layer", "L3", "--json")) == L3_IDS
    assert ids(cli("list", "--layer", "l5", "--json")) == [
        "mooncake",
        "lmcache",
        "distserve",
        "smartgen",
        "prefill-deflection",
        "llm-d",
    ]
    assert ids(cli("list", "-l", "L6", "--json")) == ["llm-d", "bayesian-optimization"]
    assert ids(cli("list", "--layer", "P0", "--json")) == [
        "inference-engineering",
        "inference-bottleneck-lab",
        "kv-policy-lab",
    ]


def test_layer_free_text_fragment(cli):
    assert ids(cli("list", "--layer", "runtime lever", "--json")) == [
        "speculative-decoding",
        "speculative-sampling",
    ]
    assert ids(cli("list", "--layer", "Transformer anatomy", "--json")) == ["transformer"]


def test_unknown_layer_is_a_usage_error(cli):
    result = cli("list", "--layer", "banana")
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("Error: unknown layer 'banana'")
    assert "(use a code, L1, L2, L3, L4, L5, L6, RL, P0; words of a level's title or scope" in result.err
    assert "Future map" in result.err


@pytest.mark.parametrize("value, near", [("L9", "L6"), ("L7", "L6"), ("P1", "P0"), ("l0", "L1")])
def test_a_code_like_unknown_layer_suggests_the_nearest_code(cli, value, near):
    result = cli("list", "--layer", value)
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        f"Error: unknown layer code '{value}'; did you mean '{near}'? (valid codes: L1, L2, L3, L4, L5, L6, RL, P0)\n"
    )


def test_type_filter_any_case_and_or(cli):
    assert ids(cli("list", "--type", "official PROJECT", "--json")) == ["vllm", "sglang", "llm-d"]
    both = ids(cli("list", "-t", "survey", "-t", "speculative", "--json"))
    assert both == ["kv-cache-survey", "bayesian-optimization"]


def test_unknown_type_names_valid_types(cli):
    result = cli("list", "--type", "blog")
    assert result.code == 2
    assert result.err == (
        "Error: unknown type 'blog' (valid types: Companion project, Current, Foundational, "
        "Navigational, Official project, Speculative, Survey)\n"
    )


@pytest.mark.parametrize(
    "years, expected",
    [
        (["2008"], ["roofline"]),
        (["..2012"], ["roofline", "bayesian-optimization"]),
        (["2022..2022"], ["flashattention", "orca"]),
        (["n.d."], ["kiely-guide", "vllm", "sglang", "llm-d"]),
        (["2008", "n.d."], ["kiely-guide", "roofline", "vllm", "sglang", "llm-d"]),
    ],
)
def test_year_filter(cli, years, expected):
    args = [a for y in years for a in ("--year", y)]
    assert ids(cli("list", *args, "--json")) == expected


def test_open_ended_year_range(cli):
    records = json.loads(cli("list", "--year", "2026..", "--json").out)
    assert len(records) == 8 and all(r["year"] == 2026 for r in records)


@pytest.mark.parametrize(
    "value, message",
    [
        ("2025..2023", "Error: reversed year range '2025..2023': write 2023..2025\n"),
        ("20x4", "Error: malformed year '20x4' (use 2024, 2023..2025, 2025.., ..2017 or n.d.)\n"),
        ("..", "Error: malformed year '..' (use 2024, 2023..2025, 2025.., ..2017 or n.d.)\n"),
        (
            "2024..2025..2026",
            "Error: malformed year '2024..2025..2026' (use 2024, 2023..2025, 2025.., ..2017 or n.d.)\n",
        ),
    ],
)
def test_bad_years_are_usage_errors(cli, value, message):
    result = cli("list", "--year", value)
    assert (result.code, result.out, result.err) == (2, "", message)


def test_different_options_and(cli):
    assert ids(cli("list", "--layer", "L3", "--type", "official project", "--json")) == ["vllm", "sglang"]
    assert ids(cli("list", "--layer", "L2", "--year", "2024", "--json")) == ["sarathi-serve", "nanoflow"]


def test_empty_result_is_an_empty_array_and_success(cli):
    result = cli("list", "--layer", "L1", "--year", "2026", "--json")
    assert (result.code, result.out, result.err) == (0, "[]\n", "")
    assert cli("questions", "--layer", "L1", "--year", "2026", "--json").out == "[]\n"


# --- show ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        ("pagedattention", "pagedattention"),
        ("PagedAttention", "pagedattention"),
        ("paged attention", "pagedattention"),
        ("PagedAtention", "pagedattention"),
        ("sarathi", "sarathi-serve"),
        ("2407.00079", "mooncake"),
        ("arXiv:2407.00079", "mooncake"),
        ("llm-d", "llm-d"),
        ("LLM D", "llm-d"),
        ("10.1145/3731569.3764815", "aegaeon"),
        ("vLLM documentation and public source", "vllm"),
        ("Roofline, Williams, Waterman, and Patterson", "roofline"),
        ("vatention", "vattention"),
        ("distserv", "distserve"),
    ],
)
def test_show_finds_one_source(cli, name, expected):
    result = cli("show", name, "--json")
    assert result.code == 0 and result.err == ""
    assert json.loads(result.out)["id"] == expected


def test_show_json_is_one_object_with_every_key(cli):
    record = json.loads(cli("show", "mooncake", "--json").out)
    assert list(record) == [*KEYS, "reports"] and record["arxiv"] == "2407.00079"  # show adds the reports


def test_show_ambiguous_lists_candidates_and_never_guesses(cli):
    result = cli("show", "Speculative")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        "Error: 'Speculative' is ambiguous: it matches 2 sources\n"
        "Be more specific, or use an id:\n"
        "  Speculative Decoding (speculative-decoding)\n"
        "  Speculative Sampling (speculative-sampling)\n"
    )
    flash = cli("show", "flash")
    assert flash.code == 1 and "FlashAttention (flashattention)" in flash.err and "FlashInfer (flashinfer)" in flash.err


def test_show_no_match_suggests(cli):
    result = cli("show", "pagedattn-v2-ultra")
    assert (result.code, result.out) == (1, "")
    assert result.err.startswith(
        "Error: no source matches 'pagedattn-v2-ultra'\nDid you mean:\n  PagedAttention (pagedattention)\n"
    )
    nothing = cli("show", "qqqqqqqq")
    assert nothing.code == 1 and nothing.err.startswith("Error: no source matches 'qqqqqqqq', and no name is close\n")


def test_show_plain_and_table(cli):
    plain = cli("show", "pagedattention").out.splitlines()  # not a terminal: plain field lines
    assert (
        plain[0] == "id\tpagedattention"
        and "question\tWhich allocation and eviction rule avoids capacity loss for the workload?" in plain
    )
    table = cli("show", "pagedattention", "--format", "table").out
    assert "Open question" in table and "PagedAttention" in table


# --- questions -------------------------------------------------------------------------------------


def test_questions_default_and_json(cli):
    records = json.loads(cli("questions", "--layer", "L5", "--json").out)
    assert [list(r) for r in records] == [["id", "name", "layer", "layers", "question"]] * 6
    assert records[0] == {
        "id": "mooncake",
        "name": "Mooncake",
        "layer": "L3 and L5",
        "layers": ["L3", "L5"],
        "question": "When do cache-tier and handoff costs outweigh reduced phase interference?",
    }
    plain = cli("questions", "--layer", "L4").out.splitlines()
    assert (
        plain[0]
        == "aegaeon\tAegaeon\tL4\tWhich qualified profiles can share capacity without hiding model-specific objectives?"
    )
    table = cli("questions", "--layer", "L4", "--format", "table").out
    assert "Unresolved engineering question" in table and "Aegaeon" in table


# --- search ----------------------------------------------------------------------------------------


def test_search_robust_to_typos_and_word_order(cli):
    for text in ("virtaul memroy", "memory virtual"):
        hits = json.loads(cli("search", text, "--json").out)
        assert hits[0]["id"] == "vattention"
        assert list(hits[0]) == [*KEYS, "score", "matched", "corrected"]
    scores = [h["score"] for h in json.loads(cli("search", "kv cache offload", "--json").out)]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 100 for s in scores)


def test_search_limit_filters_and_widening(cli):
    assert len(json.loads(cli("search", "prefill decode", "--limit", "2", "--json").out)) == 2
    only_l5 = json.loads(cli("search", "prefill decode", "--layer", "L5", "--json").out)
    assert only_l5 and all("L5" in h["layers"] for h in only_l5)
    # "Bullet" is a name, not in any mechanism: --in name widens the search to it.
    assert not any(h["id"] == "bullet" for h in json.loads(cli("search", "bullet", "--in", "mechanism", "--json").out))
    assert json.loads(cli("search", "bullet", "--in", "name", "--json").out)[0]["id"] == "bullet"
    assert json.loads(cli("search", "goodput", "--in", "objective", "--json").out)[0]["id"] == "distserve"


def test_search_nothing_found_is_empty_success(cli):
    assert (cli("search", "zzzzqqqq", "--json").out, cli("search", "zzzzqqqq", "--json").code) == ("[]\n", 0)


def test_search_bad_field(cli):
    from invmap.filters import SEARCHABLE

    result = cli("search", "kv", "--in", "colour")
    assert (result.code, result.out) == (2, "")
    assert result.err == f"Error: cannot search field 'colour' (searchable: {', '.join(SEARCHABLE)})\n"
    assert "arxiv" not in SEARCHABLE and "url" not in SEARCHABLE  # identifiers are found by `show`
    near = cli("search", "kv", "--in", "mechansim")
    assert near.code == 2 and near.err.startswith("Error: cannot search field 'mechansim'; did you mean 'mechanism'?")


# --- the installed program ---------------------------------------------------------------------------


def test_version(cli, sh):
    from invmap import __version__

    assert cli("--version").out == f"invmap {__version__} — 30 sources, accessed 2026-08-07\n"
    assert sh("--version").out == f"invmap {__version__} — 30 sources, accessed 2026-08-07\n"


def test_subprocess_layer_filter_and_exit_codes(sh):
    result = sh("list", "--layer", "L3", "--json")
    assert (result.code, result.err) == (0, "")
    assert [r["id"] for r in json.loads(result.out)] == L3_IDS
    assert sh("show", "Speculative").code == 1
    assert sh("list", "--layer", "L9").code == 2
    assert sh("list", "--year", "2025..2023").code == 2
    assert json.loads(sh("show", "PagedAtention", "--json").out)["id"] == "pagedattention"
    assert json.loads(sh("search", "virtaul memroy", "--json").out)[0]["id"] == "vattention"
    assert len(json.loads(sh("questions", "--json").out)) == 30


def test_python_dash_m(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "invmap", "list", "--layer", "L6", "--fields", "id"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and done.stdout.splitlines() == ["llm-d", "bayesian-optimization"]


def test_pipe_output_has_no_ansi_and_head_ends_quietly(tmp_path):
    program = installed_invmap()
    done = bash(f"'{program}' list | head -1; echo \"rc=${{PIPESTATUS[0]}}\"")
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0].startswith("kiely-guide\t") and lines[1] == "rc=0"
    # A big table into a closed pipe ends quietly too.
    done = bash(f"'{program}' list --format table --color always | head -c 10 >/dev/null")
    assert done.stderr == ""
    plain = subprocess.run([program, "list", "--format", "table"], capture_output=True, text=True).stdout
    assert "\x1b[" not in plain


def test_usage_errors_from_click_exit_2(cli):
    result = cli("list", "--limit", "0")
    assert result.code == 2 and result.out == ""
    assert cli("frobnicate").code == 2
    assert cli("show").code == 2


def test_bare_invmap_prints_help_and_succeeds(sh):
    result = sh()
    assert result.code == 0 and result.err == ""
    assert result.out.startswith("Usage: invmap [OPTIONS] COMMAND [ARGS]...") and "  questions  " in result.out


@pytest.mark.parametrize("cols", [60, 80, 120])
def test_help_groups_every_command_under_the_step_it_serves(cols):
    """`invmap --help` at a terminal: one section a declared group, in the procedure's order, each
    command under its own group's heading once, its summary beside it (continued lines indented)."""
    from conftest import on_terminal
    from invmap import options as decl

    lines = on_terminal(["--help"], cols)
    headings = [ln for ln in lines if ln.endswith(" commands:")]
    assert headings == [f"{g} commands:" for g in decl.GROUPS]
    assert [g.split()[0] for g in decl.GROUPS] == ["Triage", "Read", "Code", "Recreate", "Record", "Your"]
    shown = []
    for group, heading in zip(decl.GROUPS, headings):
        rows = []
        for ln in lines[lines.index(heading) + 1 :]:
            if not ln.startswith("  "):
                break
            if not ln.startswith("   "):  # a summary's continued line is indented past the names
                rows.append(ln.split()[0])
        assert rows == [c.name for c in decl.TOP.values() if c.group == group], group
        shown += rows
    assert sorted(shown) == sorted(decl.TOP)  # every command, once
    assert max(len(ln) for ln in lines) <= cols


def test_help_groups_are_the_steps_of_the_map_procedure():
    """Every group declared is used, and the steps' own commands sit in their step's group."""
    from invmap import options as decl

    assert {c.group for c in decl.COMMANDS} == set(decl.GROUPS)
    by_group = {g: {c.name for c in decl.TOP.values() if c.group == g} for g in decl.GROUPS}
    assert {"triage", "search"} <= by_group["Triage and search"] and "show" in by_group["Read"]
    assert "settings" in by_group["Code and settings"] and {"estimate", "simulate"} <= by_group["Recreate"]
    assert "record" in by_group["Record"] and {"add", "edit", "rm"} <= by_group["Your catalog"]


def test_mistyped_command_suggests(cli):
    result = cli("lst")
    assert result.code == 2 and result.err.endswith("Error: No such command 'lst'. Did you mean 'list'?\n")


def test_data_is_never_read_as_markup(cli, tmp_path):
    from conftest import ASSETS

    path = tmp_path / "m.toml"
    path.write_text(
        (ASSETS / "mini.toml")
        .read_text(encoding="utf-8")
        .replace('name = "PagedAttention"', 'name = "[bold]Paged[/bold] [KV]"'),
        encoding="utf-8",
    )
    for args in (["list", "--fields", "id,name"], ["show", "pagedattention"], ["map"], ["layers", "L3"]):
        out = cli("--catalog", str(path), *args, "--format", "table").out
        assert "[bold]Paged[/bold] [KV]" in out, args


def test_byte_order_mark_is_accepted(cli, tmp_path):
    from conftest import ASSETS

    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + (ASSETS / "mini.toml").read_bytes())
    assert (
        cli("--catalog", str(path), "list", "--fields", "id", "--format", "plain").out == "pagedattention\nmooncake\n"
    )


def test_long_candidate_lists_are_cut(cli, tmp_path):
    import tomli_w

    from conftest import ASSETS
    from invmap import canonical
    from invmap import catalog as catalog_io

    table = canonical.to_toml_dict(catalog_io.load(str(ASSETS / "mini.toml")))
    table["sources"] = [{**table["sources"][0], "id": f"kv-{n}", "name": f"KV {n}"} for n in range(12)]
    path = tmp_path / "many.toml"
    path.write_text(tomli_w.dumps(table), encoding="utf-8")
    result = cli("--catalog", str(path), "show", "kv")
    lines = result.err.splitlines()
    assert result.code == 1 and lines[0] == "Error: 'kv' is ambiguous: it matches 12 sources"
    assert len(lines) == 13 and lines[2] == "  KV 0 (kv-0)" and lines[-1] == "  ... and 2 more"


def test_min_score_drops_weaker_matches(cli):
    everything = json.loads(cli("search", "kv cache offload", "--min-score", "0", "--limit", "30", "--json").out)
    strict = json.loads(cli("search", "kv cache offload", "--min-score", "50", "--limit", "30", "--json").out)
    assert len(strict) < len(everything) and strict and all(h["score"] >= 50 for h in strict)
    assert [h["id"] for h in strict] == [h["id"] for h in everything if h["score"] >= 50]
    assert all(h["matched"] for h in everything)  # a source matching no word is never listed
    assert cli("-V").out == cli("--version").out


def test_search_scores_an_id_that_is_not_its_name(cli, tmp_path):
    """A name that reads as its id is not scored twice (same score); an id that differs still counts."""
    text = (ASSETS / "mini.toml").read_text(encoding="utf-8").replace('id = "mooncake"', 'id = "zqxv-store"')
    path = tmp_path / "ids.toml"
    path.write_text(text, encoding="utf-8")
    by_id = json.loads(cli("-c", str(path), "search", "zqxv", "--json").out)
    assert [(r["id"], r["score"]) for r in by_id] == [("zqxv-store", 100.0)]
    by_name = json.loads(cli("-c", str(path), "search", "pagedattention", "--in", "id,name", "--json").out)
    assert [(r["id"], r["score"]) for r in by_name] == [("pagedattention", 100.0)]
    only_id = json.loads(cli("-c", str(path), "search", "pagedattention", "--in", "id", "--json").out)
    assert [(r["id"], r["score"]) for r in only_id] == [("pagedattention", 100.0)]


def test_a_bare_digit_names_its_level(cli):
    assert ids_of(cli("list", "--layer", "5", "--json")) == ids_of(cli("list", "--layer", "L5", "--json"))
    assert "llm-d" in ids_of(cli("list", "--layer", "5", "--json"))  # "L4 to L6" covers L5


def test_field_typo_suggests_the_field(cli):
    result = cli("list", "--fields", "id,nme")
    assert result.code == 2 and result.err.startswith(
        "Error: unknown field 'nme'; did you mean 'name'? (valid fields: id,"
    )


def test_sort_by_access_date(cli, mine):
    text = mine.read_text(encoding="utf-8").replace("accessed = 2026-08-07", "accessed = 2026-01-01", 1)
    mine.write_text(text, encoding="utf-8")
    records = json.loads(cli("--catalog", str(mine), "list", "--sort", "accessed", "--json").out)
    assert [r["accessed"] for r in records] == sorted(r["accessed"] for r in records)
    assert records[0]["accessed"] == "2026-01-01"


def test_a_unique_title_prefix_finds_its_source(cli):
    assert json.loads(cli("show", "Orca: A Distributed Serving System", "--json").out)["id"] == "orca"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["diff", "-", "-"], "Error: only one of A and B can be '-' (stdin)"),
        (["check", "--links", "--timeout", "0"], "Error: --timeout must be more than 0 seconds, not 0"),
        (
            ["check", "--links", "--max-age", "xyz"],
            "Error: --max-age takes an age such as 30m, 24h or 7d (0 checks again), not 'xyz'",
        ),
        (["check", "--update-redirects"], "Error: --update-redirects goes with --links"),
        (["search", "kv", "--min-score", "200"], "Error: --min-score must be between 0 and 100, not 200"),
        (["search", ""], "Error: search needs some text to look for"),
        (["layers", "L9"], "Error: unknown level 'L9' (levels: L1, L2, L3, L4, L5, L6, RL, P0)"),
        (
            ["list", "--sort", "bogus"],
            "Error: unknown sort key 'bogus' (valid keys: id, name, type, year, layer, accessed)",
        ),
        (["list", "--fields", ""], "Error: --fields needs at least one field name (valid fields: id, name, source,"),
        (["records", "/no-such-folder-here"], "Error: no such folder: /no-such-folder-here (records folder)"),
    ],
)
def test_usage_errors_say_what_is_wrong_and_exit_2(cli, args, message):
    result = cli(*args)
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith(message) and result.err.count("\n") == 1, result.err


def test_rm_refuses_to_empty_a_catalog(cli, mine):
    before = mine.read_bytes()
    result = cli("--catalog", str(mine), "rm", "--yes", "mooncake", "pagedattention")
    assert (result.code, result.err) == (
        2,
        f"Error: cannot remove every source of {mine}: a catalog holds at least one\n",
    )
    assert mine.read_bytes() == before
