"""`add --from` and `refresh` against a local server serving recorded arXiv and Crossref answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import source_toml

ONE = source_toml(
    "orca",
    name="ORCA",
    source="ORCA, Yu et al.",
    year=2022,
    layer="L2",
    mechanism="Iteration-level scheduling and selective batching.",
)
CELLS = ["--type", "Current", "--layer", "L3 and L5", "--mechanism", "m", "--objective", "o", "--question", "q"]
CELLS += ["--availability", "Primary paper."]


@pytest.fixture
def own(tmp_path) -> Path:
    path = tmp_path / "own.toml"
    path.write_text(ONE, encoding="utf-8")
    return path


def test_add_from_an_arxiv_id_fills_the_papers_facts(cli, own, services):
    result = cli("--catalog", str(own), "add", "--from", "arXiv:2407.00079v2", *CELLS, "--json")
    assert result.code == 0, result.err
    added = json.loads(result.out)
    assert {k: added[k] for k in ("id", "name", "source", "title", "year", "venue", "entry_type", "arxiv", "doi")} == {
        "id": "mooncake",
        "name": "Mooncake",
        "source": "Mooncake, arXiv:2407.00079",
        "title": "Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving",
        "year": 2024,
        "venue": "arXiv preprint",
        "entry_type": "misc",
        "arxiv": "2407.00079",
        "doi": None,
    }
    assert added["author_names"][:2] == ["Ruoyu Qin", "Zheming Li"] and len(added["author_names"]) == 7
    assert added["url"] == "https://arxiv.org/abs/2407.00079"  # derived, as for any source with an arXiv id
    assert "id_list=2407.00079" in services.requests[0][1] and services.requests[0][2].startswith("invmap/")


def test_add_from_a_doi_and_options_always_win(cli, own, services):
    result = cli(
        "--catalog",
        str(own),
        "add",
        "--from",
        "https://doi.org/10.1145/3600006.3613165",
        "--name",
        "PagedAttention",
        "--year",
        "2024",
        *CELLS,
        "--json",
    )
    assert result.code == 0, result.err
    added = json.loads(result.out)
    assert (added["name"], added["source"], added["year"]) == (
        "PagedAttention",
        "PagedAttention, DOI:10.1145/3600006.3613165",
        2024,
    )
    assert (added["venue"], added["entry_type"], added["doi"]) == (
        "SOSP 2023",
        "inproceedings",
        "10.1145/3600006.3613165",
    )
    assert added["published_in"] == "Proceedings of the 29th Symposium on Operating Systems Principles"
    assert added["author_names"][-1] == "Ion Stoica"


@pytest.mark.parametrize(
    "identifier, message",
    [
        ("9999.99999", "arXiv has no paper 9999.99999"),
        ("10.1145/0000000.0000000", "Crossref has no work with DOI 10.1145/0000000.0000000"),
    ],
)
def test_an_unknown_id_is_not_found_and_nothing_is_written(cli, own, services, identifier, message):
    before = own.read_bytes()
    result = cli("--catalog", str(own), "add", "--from", identifier, *CELLS)
    assert (result.code, own.read_bytes()) == (1, before)
    assert result.err == f"Error: {message}\n"


def test_a_service_that_cannot_answer_is_exit_4_and_nothing_is_written(cli, own, services, monkeypatch):
    import socket

    before = own.read_bytes()
    services.busy = True
    result = cli("--catalog", str(own), "add", "--from", "2407.00079", *CELLS)
    assert (result.code, own.read_bytes()) == (4, before)
    assert result.err.startswith("Error: arXiv did not answer with a feed") and "Rate exceeded." in result.err
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("INVMAP_CROSSREF_API", f"http://127.0.0.1:{port}")
    result = cli("--catalog", str(own), "add", "--from", "10.1145/3600006.3613165", *CELLS)
    assert (result.code, own.read_bytes()) == (4, before)
    assert result.err.startswith("Error: cannot reach Crossref")


def test_missing_cells_are_a_usage_error_before_any_request(cli, own, services):
    result = cli("--catalog", str(own), "add", "--from", "2407.00079", "--type", "Current")
    assert result.code == 2 and result.err.startswith("Error: add needs --layer, --mechanism")
    assert services.requests == []


def test_refresh_shows_what_differs_and_write_applies_it(cli, own, services):
    stale = own.read_text() + ONE.replace('id = "orca"', 'id = "mooncake"').replace(
        'name = "ORCA"', 'name = "Mooncake"'
    ).replace("year = 2022", 'arxiv = "2407.00079"\ntitle = "Mooncake: an old title"\nyear = 2024')
    own.write_text(stale, encoding="utf-8")
    result = cli("--catalog", str(own), "refresh", "--json")
    assert result.code == 1
    changed = json.loads(result.out)
    assert [c["id"] for c in changed] == ["mooncake"]
    assert changed[0]["fields"]["title"] == [
        "Mooncake: an old title",
        "Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving",
    ]
    assert changed[0]["fields"]["author_names"][0] == []
    assert cli("--catalog", str(own), "refresh", "--write").code == 0
    assert cli("--catalog", str(own), "refresh").code == 0  # nothing differs now
    record = json.loads(cli("--catalog", str(own), "show", "mooncake", "--json").out)
    assert record["title"].startswith("Mooncake: A KVCache-centric") and len(record["author_names"]) == 7


def test_refresh_finds_the_doi_a_preprint_gained(cli, own, services):
    own.write_text(
        own.read_text()
        + ONE.replace('id = "orca"', 'id = "paged"').replace("year = 2022", 'arxiv = "2309.06180"\nyear = 2023')
    )
    changed = json.loads(cli("--catalog", str(own), "refresh", "paged", "--json").out)
    assert changed[0]["fields"]["doi"] == [None, "10.1145/3600006.3613165"]


def test_refresh_never_writes_the_shipped_catalog(cli, services):
    assert cli("refresh", "--write").code == 2


def test_at_most_one_arxiv_request_every_3_seconds_across_runs(sh, own, services):
    """Two separate processes (the real 3 s rule, kept by a time stamp in the cache folder)."""
    sh("--catalog", str(own), "add", "--from", "9999.99999", *CELLS)
    sh("--catalog", str(own), "add", "--from", "9999.99999", *CELLS)
    times = [t for t, path, _ in services.requests if path.startswith("/api/query")]
    assert len(times) == 2 and times[1] - times[0] >= 2.9
