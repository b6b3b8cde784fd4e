"""Markdown in and out: the seed document, links inside cells."""

from __future__ import annotations

import json

UPSTREAM_MAP = """# Research map

Primary papers and official project sources, by layer.

| Direction/type | Source | Year | Layer | Central mechanism | Reported objective | Unresolved engineering question | Implementation availability | Accessed |
| --- | --- | ---: | :--- | --- | --- | --- | --- | --- |
| Current | [PagedAttention, Kwon et al.](https://arxiv.org/abs/2309.06180) | 2023 | L3 | Map logical KV blocks to physical blocks. | Improve memory management. | Which eviction rule avoids capacity loss? | [vLLM public project](https://github.com/vllm-project/vllm). | 2026-08-07 |
| Official project | [vLLM documentation](https://docs.vllm.ai/) and [public source](https://github.com/vllm-project/vllm) | n.d. | L2 and L3 | Document scheduler boundaries. | Expose the runtime. | Which knobs are stable? | Official docs and source. | 2026-08-07 |
| Current | [Aegaeon](https://doi.org/10.1145/3731569.3764815) | 2025 | L4 | Pool GPUs across models. | Serve many models. | Which profiles can share? | Primary paper. | 2026-08-07 |

1. Start with the layer.
2. Read the primary source.
"""


def test_markdown_links_round_trip_keeps_every_link(cli, tmp_path):
    exported = cli("export", "--format", "markdown", "--links").out
    assert "[PagedAttention, Kwon et al.](https://arxiv.org/abs/2309.06180)" in exported
    back = cli("import", "-", input=exported)
    assert back.code == 0, back.err
    path = tmp_path / "back.toml"
    path.write_text(back.out, encoding="utf-8")
    assert cli("--catalog", str(path), "check").code == 0
    mine = {r["source"]: r for r in json.loads(cli("--catalog", str(path), "list", "--json").out)}
    for r in json.loads(cli("list", "--json").out):
        got = mine[r["source"]]
        assert (got["url"], got["code"]) == (r["url"], r["code"]), r["id"]
        if r["arxiv"] and r["url"].startswith("https://arxiv.org/"):  # the one Source link carries the arXiv id
            assert got["arxiv"] == r["arxiv"], r["id"]


def test_upstream_style_markdown_imports_with_links(cli, tmp_path):
    source = tmp_path / "map.md"
    source.write_text(UPSTREAM_MAP, encoding="utf-8")
    out = tmp_path / "map.toml"
    assert cli("import", str(source), "-o", str(out)).code == 0
    assert cli("--catalog", str(out), "check").code == 0
    records = {r["id"]: r for r in json.loads(cli("--catalog", str(out), "list", "--json").out)}
    paged = records["pagedattention"]
    assert (paged["arxiv"], paged["code"], paged["source"]) == (
        "2309.06180",
        "https://github.com/vllm-project/vllm",
        "PagedAttention, Kwon et al.",
    )
    assert paged["availability"] == "vLLM public project."
    vllm = records["vllm"]
    assert vllm["source"] == "vLLM documentation and public source"
    assert (vllm["url"], vllm["code"]) == ("https://docs.vllm.ai/", "https://github.com/vllm-project/vllm")
    assert records["aegaeon"]["doi"] == "10.1145/3731569.3764815"
    assert json.loads(cli("--catalog", str(out), "guide", "--json").out)["procedure"] == [
        "Start with the layer.",
        "Read the primary source.",
    ]
    assert json.loads(cli("--catalog", str(out), "show", "2309.06180", "--json").out)["id"] == "pagedattention"
