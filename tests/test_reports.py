"""Real symptom reports shipped with the map (`[[reports]]`): the data, `check`, `reports`, `show`."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import tomllib

from conftest import REPO, screen
from invmap.query import REPORT_KEYS
from invmap.vocabulary import TRIAGE_CODES

SHIPPED = tomllib.loads((REPO / "catalog.toml").read_text(encoding="utf-8"))
REPORTS = SHIPPED["reports"]
DEV = REPO.parent / "shared" / "triage" / "dev.json"


def test_every_level_and_rl_has_twenty_reports_from_twelve_engines():
    counts = Counter(r["primary"] for r in REPORTS)
    assert {code: counts[code] >= 20 for code in TRIAGE_CODES} == {code: True for code in TRIAGE_CODES}
    assert len(REPORTS) >= 150 and len({r["engine"] for r in REPORTS}) >= 12


def test_every_report_names_known_sources_and_a_url_once():
    ids = {s["id"] for s in SHIPPED["sources"]}
    assert [r["id"] for r in REPORTS if not set(r.get("sources", [])) <= ids] == []
    urls = Counter(r["url"].rstrip("/") for r in REPORTS)
    assert [u for u, n in urls.items() if n > 1] == []


@pytest.mark.skipif(not DEV.exists(), reason="the development set is not beside this clone")
def test_no_shipped_report_is_a_development_thread():
    threads = {c["thread"].rstrip("/") for c in json.loads(DEV.read_text(encoding="utf-8"))}
    assert [r["id"] for r in REPORTS if r["url"].rstrip("/") in threads] == []


def test_check_validates_the_shipped_reports(sh):
    assert sh("--catalog", str(REPO / "catalog.toml"), "check").code == 0


BAD = """
[[reports]]
id = "x-1"
title = "slow"
url = "https://github.com/a/b/issues/1"
engine = "vllm"
primary = "L2"
accessed = 2026-12-01

[[reports]]
id = "x-2"
title = "slow too"
url = "https://github.com/a/b/issues/1"
engine = "vllm"
primary = "L3"
secondary = "L3"
sources = ["nosuch"]
accessed = 2026-12-01
"""


def test_check_names_every_report_problem(sh, mine):
    mine.write_text(BAD + mine.read_text(encoding="utf-8"), encoding="utf-8")
    result = sh("--catalog", str(mine), "check")
    assert result.code == 3
    assert "report 2 (x-2): url is also report 1's" in result.err
    assert "report 2 (x-2): secondary repeats primary (L3); leave it out" in result.err
    assert "report 2 (x-2): no source 'nosuch' in this catalog" in result.err


def test_check_names_a_bad_level(sh, mine):
    mine.write_text(
        BAD.replace('primary = "L2"', 'primary = "L9"') + mine.read_text(encoding="utf-8"), encoding="utf-8"
    )
    result = sh("--catalog", str(mine), "check")
    assert result.code == 3 and "report 1 (x-1): field 'primary'" in result.err


def test_reports_filters_by_level_engine_and_source(cli):
    every = json.loads(cli("reports", "--json").out)
    assert len(every) == len(REPORTS) and all(list(r) == list(REPORT_KEYS) for r in every)
    l3 = json.loads(cli("reports", "--layer", "l3", "--json").out)
    assert l3 and all("L3" in (r["primary"], r["secondary"]) for r in l3)
    both = json.loads(cli("reports", "--layer", "L5", "--engine", "Mooncake", "--json").out)
    assert both and all(r["engine"] == "mooncake" and "L5" in (r["primary"], r["secondary"]) for r in both)
    paged = json.loads(cli("reports", "--source", "pagedattention", "--json").out)
    assert paged and all("pagedattention" in r["sources"] for r in paged)
    assert {r["id"] for r in paged} == {r["id"] for r in REPORTS if "pagedattention" in r.get("sources", [])}


def test_reports_usage_errors(cli):
    result = cli("reports", "--layer", "L9")
    assert (result.code, result.err) == (2, "Error: unknown level 'L9' (report levels: L1, L2, L3, L4, L5, L6, RL)\n")
    result = cli("reports", "--source", "pagedattentoin")
    assert result.code == 2 and "did you mean 'pagedattention'?" in result.err


def test_show_names_the_reports_a_source_addresses(cli):
    record = json.loads(cli("show", "pagedattention", "--json").out)
    expected = [r["id"] for r in REPORTS if "pagedattention" in r.get("sources", [])]
    assert record["reports"] == expected and len(expected) > 3
    plain = dict(line.split("\t", 1) for line in cli("show", "pagedattention").out.splitlines() if "\t" in line)
    assert plain["reports"] == ";".join([*expected[:3], f"+{len(expected) - 3} more"])


@pytest.mark.parametrize("width", [60, 80, 120])
def test_reports_table_keeps_ids_whole(width):
    lines = screen(["reports", "--layer", "L5"], width)
    assert all(len(line) <= width for line in lines)
    text = "\n".join(lines)
    assert all(r["id"] in text for r in REPORTS if r["primary"] == "L5" and len(r["id"]) < width // 3)


def test_tab_completes_engines_and_report_levels():
    from conftest import tab

    assert tab("invmap reports --engine sgl").stdout.split() == ["sglang"]
    assert tab("invmap reports --layer R").stdout.split() == ["RL"]
    engines = tab("invmap reports --engine ").stdout.split()
    assert engines == sorted({r["engine"] for r in REPORTS})


def test_resolutions_say_only_what_their_threads_say():
    """Issue 44: an unmerged pull request is proposed, not a fix; a participant is no maintainer; a
    figure the thread does not hold is gone."""
    import tomli

    from conftest import REPO

    reports = {r["id"]: r for r in tomli.loads((REPO / "catalog.toml").read_text(encoding="utf-8"))["reports"]}
    assert reports["production-stack-884"]["resolution"].startswith("Proposed in #884 (not merged)")
    assert reports["mlx-vlm-1435"]["resolution"].startswith("Proposed in #1435 (not merged)")
    assert "11x" not in reports["mlx-vlm-1435"]["resolution"]
    assert reports["tensorrt-llm-2865"]["resolution"].startswith("A participant")
    assert "resolution" not in reports["ollama-12305"]


def test_every_re_read_resolution_keeps_to_its_thread():
    """Issue 44, second pass: every resolution naming a PR, a fix, a maintainer or a figure was re-read
    against its thread. Unmerged PRs now say so, one maintainer is not "Maintainers", figures match
    the thread, and resolutions whose threads say nothing beyond the report are empty."""
    import tomli

    from conftest import REPO

    reports = {r["id"]: r for r in tomli.loads((REPO / "catalog.toml").read_text(encoding="utf-8"))["reports"]}
    res = {rid: r.get("resolution", "") for rid, r in reports.items()}
    # Threads that hold nothing beyond the report: no resolution at all.
    for rid in ("gllm-148", "llama-cpp-3869", "lmcache-485", "vllm-4917", "ollama-7408"):
        assert rid in reports and "resolution" not in reports[rid], rid
    # Pull requests not merged are proposals, and open ones are still open.
    for rid in ("sglang-6375", "sglang-14050", "vllm-52530", "llama-cpp-22145", "odh-kserve-1822"):
        assert "not merged" in res[rid] or "closed unmerged" in res[rid], rid
    for rid in ("atom-1835", "burn-lm-59", "sglang-31954", "sglang-35964", "ray-59681"):
        assert "still open" in res[rid], rid
    assert not any(res[rid].startswith("merged") for rid in ("sglang-35964", "odh-kserve-1822"))
    # One maintainer spoke in each of these threads.
    for rid in ("deepspeed-mii-313", "vllm-7604", "tgi-1435", "qwen-dgx-recipe-9", "deepspeed-mii-257"):
        assert not res[rid].startswith("Maintainers"), rid
    assert res["sglang-29358"].startswith("A participant")
    # Figures as the threads give them.
    assert "383% CPU" in res["vllm-plugin-fl-396"]
    assert "1.5K tokens" in res["omlx-3443"] and "3.9%" in res["omlx-3443"]
    assert "64.8 to 26.3 ms" in res["ray-59681"]
    assert "half the ranks" not in res["afd-plugin-156"] and "#157" in res["afd-plugin-156"]
    assert "or the KV ratio" not in res["lmdeploy-3138"]
