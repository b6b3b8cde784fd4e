"""Overview views: layers, stats, map, related, guide, links."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from conftest import ASSETS, SEED, seed_rows
from invmap import catalog as catalog_io
from invmap.render.overview import bar_charts

ROWS = seed_rows()
CODES = ["L1", "L2", "L3", "L4", "L5", "L6", "RL", "P0"]


def codes_of(label: str) -> set[str]:
    """An independent reading of a layer label, for checking counts."""
    found = set(re.findall(r"\b([LP]\d)\b", label)) | ({"RL"} if "runtime lever" in label.lower() else set())
    if m := re.search(r"L(\d) to L(\d)", label):
        found |= {f"L{n}" for n in range(int(m.group(1)), int(m.group(2)) + 1)}
    return found


def test_layers_counts_and_members(cli):
    rows = json.loads(cli("layers", "--json").out)
    assert [r["code"] for r in rows[:8]] == CODES
    for row in rows[:8]:
        expected = [r["Source"] for r in ROWS if row["code"] in codes_of(r["Layer"])]
        assert row["count"] == len(expected) == len(row["sources"])
    assert rows[2]["title"] == "Cache management"
    assert rows[2]["scope"] == "paging, prefix reuse, reservation, eviction, compression, tiering, and transfer"
    assert list(rows[2]) == ["code", "title", "scope", "question", "metrics", "symptoms", "count", "sources", "names"]
    assert rows[2]["names"] == ["PagedAttention", "vLLM", "vAttention", "Mooncake", "SGLang", "LMCache"]
    free = [(r["code"], r["title"], r["count"]) for r in rows[8:]]
    assert free == [
        (None, label, 1) for label in ["Guide navigation", "Transformer anatomy", "Model and KV memory", "Future map"]
    ]
    assert (
        cli("layers").out.splitlines()[4]
        == "L5\tCluster architecture\t6\tmooncake;lmcache;distserve;smartgen;prefill-deflection;llm-d"
    )


def test_layer_titles_are_data(cli, tmp_path):
    mine = tmp_path / "m.toml"
    mine.write_text(
        (ASSETS / "mini.toml").read_text(encoding="utf-8").replace("KV-cache memory management", "Paging"),
        encoding="utf-8",
    )
    rows = json.loads(cli("--catalog", str(mine), "layers", "--json").out)
    assert rows[2]["title"] == "Paging" and rows[0]["title"] is None and rows[0]["count"] == 0


def test_stats_counts_match_the_seed(cli):
    counts = json.loads(cli("stats", "--json").out)
    assert counts["total"] == 30
    assert counts["by_type"] == dict(
        sorted(Counter(r["Direction/type"] for r in ROWS).items(), key=lambda kv: (-kv[1], kv[0]))
    )
    years = Counter(r["Year"] for r in ROWS)
    assert counts["by_year"] == {y: years[y] for y in sorted(y for y in years if y != "n.d.")} | {"n.d.": years["n.d."]}
    assert counts["by_layer"] == {c: sum(c in codes_of(r["Layer"]) for r in ROWS) for c in CODES}
    assert list(counts["by_year"])[-1] == "n.d."


def test_stats_plain_rows(cli):
    lines = cli("stats").out.splitlines()
    assert lines[0] == "type\tCurrent\t18"
    assert "year\tn.d.\t4" in lines and "layer\tL2\t8" in lines


def test_bar_charts_share_one_scale():
    out = bar_charts([("By layer", {"L1": 3, "L2": 8, "L6": 0}), ("By type", {"Current": 3})], 30)
    assert out == (
        "By layer\n  L1       ██████ 3\n  L2       █████████████████ 8\n  L6       0\n\nBy type\n  Current  ██████ 3\n"
    )


def test_stats_charts_at_fixed_width(cli):
    result = cli("stats", "--format", "table", env={"COLUMNS": "80"})
    assert result.out == (ASSETS / "stats_80.txt").read_text(encoding="utf-8")


def test_map_grid_at_fixed_width(cli):
    result = cli("map", "--format", "table", env={"COLUMNS": "80"})
    assert result.out == (ASSETS / "map_80.txt").read_text(encoding="utf-8")
    assert len(result.out.splitlines()) <= 45


def test_map_json_and_filters(cli):
    grid = json.loads(cli("map", "--json").out)
    assert grid["years"] == ["2008", "2012", "2017", "2022", "2023", "2024", "2025", "2026", "n.d."]
    l3 = next(r for r in grid["rows"] if r["code"] == "L3")
    assert l3["cells"]["2024"] == ["vAttention", "Mooncake"] and l3["cells"]["n.d."] == ["vLLM", "SGLang"]
    official = json.loads(cli("map", "--type", "official project", "--json").out)
    assert official["years"] == ["n.d."]
    # empty rows are dropped: only levels that hold an official project
    assert [(r["code"], r["cells"]["n.d."]) for r in official["rows"]] == [
        ("L2", ["vLLM", "SGLang"]),
        ("L3", ["vLLM", "SGLang"]),
        ("L4", ["llm-d"]),
        ("L5", ["llm-d"]),
        ("L6", ["llm-d"]),
    ]
    only_l3 = json.loads(cli("map", "--layer", "L3", "--json").out)
    assert [r["code"] for r in only_l3["rows"]] == ["L3"]
    assert cli("map", "--year", "2008").out == "L1\t2008\tRoofline\n"


@pytest.mark.parametrize(
    "name, nearest",
    [
        ("PagedAttention", "vattention"),
        ("DistServe", None),
        ("Aegaeon", "prism"),
        ("vAttention", "pagedattention"),
    ],
)
def test_related_ordering(cli, name, nearest):
    hits = json.loads(cli("related", name, "--json").out)
    me = json.loads(cli("show", name, "--json").out)["id"]
    assert me not in [h["id"] for h in hits]
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and len(hits) == 5
    if nearest:
        assert nearest in [h["id"] for h in hits[:3]]


def test_related_pagedattention_puts_vattention_in_the_top_three(sh):
    result = sh("related", "PagedAttention", "--limit", "3", "--json")
    assert result.code == 0 and "vattention" in [h["id"] for h in json.loads(result.out)]
    assert sh("related", "Speculative").code == 1


def test_guide_is_the_catalogs_text(cli):
    info = catalog_io.load(str(catalog_io.shipped_path())).catalog
    plain = cli("guide").out
    assert plain == (
        f"{info.title}\n\n{info.preface}\n\nStudy procedure\n"
        + "\n".join(f"  {i}. {s}" for i, s in enumerate(info.procedure, 1))
        + f"\n\n{info.afterword}\n"
    )
    seed = SEED.read_text(encoding="utf-8").splitlines()
    assert [s[2:] for s in seed if s.startswith("- ")] == list(info.procedure)
    assert json.loads(cli("guide", "--json").out)["procedure"] == list(info.procedure)
    md = cli("guide", "--format", "markdown").out
    assert "## Study procedure" in md and "1. Start with the layer whose metric boundary" in md
    wrapped = cli("guide", "--format", "table", env={"COLUMNS": "60"}).out
    assert all(len(line) <= 60 for line in wrapped.splitlines())
    assert cli("guide", "--format", "csv").code == 2


def test_show_prints_the_link(cli):
    assert "url\thttps://arxiv.org/abs/2407.00079" in cli("show", "mooncake").out.splitlines()
    assert "url\thttps://doi.org/10.1145/3731569.3764815" in cli("show", "aegaeon").out.splitlines()


@pytest.mark.parametrize(
    "name, link",
    [
        ("mooncake", "https://arxiv.org/abs/2407.00079"),
        ("Bullet", "https://doi.org/10.1145/3779212.3790135"),
    ],
)
def test_open_print(cli, sh, name, link):
    assert cli("open", name, "--print").out == f"{link}\n"
    result = sh("open", name, "--print")
    assert (result.code, result.out, result.err) == (0, f"{link}\n", "")


def test_open_without_a_browser_prints(sh):
    result = sh("open", "mooncake", env={"BROWSER": "", "DISPLAY": "", "WAYLAND_DISPLAY": "", "PATH": "/nonexistent"})
    assert result.out == "https://arxiv.org/abs/2407.00079\n"


def test_every_shipped_source_opens_and_code_links(cli):
    ids = [r["id"] for r in json.loads(cli("list", "--json").out)]
    for ident in ids:
        result = cli("open", ident, "--print")
        assert result.code == 0 and re.fullmatch(r"https?://\S+\n", result.out), ident
    assert cli("open", "vllm", "--code", "--print").out == "https://github.com/vllm-project/vllm\n"
    assert cli("open", "vllm", "sglang", "--print").out == "https://docs.vllm.ai/\nhttps://docs.sglang.io/\n"
    none = cli("open", "gqa", "--code", "--print")
    assert (none.code, none.out) == (1, "")
    assert none.err == "Error: GQA (gqa) has no public source repository (code)\n"


def test_views_in_row_formats(cli):
    import csv
    import io

    stats_rows = list(csv.DictReader(io.StringIO(cli("stats", "--format", "csv").out)))
    assert stats_rows[0] == {"group": "type", "key": "Current", "count": "18"}
    grid_md = cli("map", "--format", "markdown", "--year", "2008").out.splitlines()
    assert grid_md == ["| Layer | Year | Names |", "|---|---|---|", "| L1 | 2008 | Roofline |"]
    layers_md = cli("layers", "--format", "markdown").out.splitlines()
    assert layers_md[0] == "| Code | Title | Scope | Count | Names |" and layers_md[4].startswith(
        "| L3 | Cache management | paging, prefix reuse, reservation, eviction, compression, tiering, and transfer | 6 | PagedAttention"
    )
