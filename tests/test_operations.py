"""The authoring operations called without the CLI (`run(opts)` and friends): the data they return
and the error classes they raise, on a catalog in a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ASSETS
from invmap import authoring, checking, diffing, edits, entries, exchange, formats
from invmap import refresh as refreshing
from invmap.errors import CatalogError, NotFoundError, UsageError
from invmap.location import Location, shipped_path
from invmap.render import outcomes

CELLS = {
    "type": "Current",
    "layer": "L3 and L5",
    "mechanism": "m",
    "objective": "o",
    "question": "q",
    "availability": "Primary paper.",
}


@pytest.fixture
def mini(tmp_path) -> Location:
    path = tmp_path / "mini.toml"
    path.write_text((ASSETS / "mini.toml").read_text(encoding="utf-8"), encoding="utf-8")
    return Location(str(path), "--catalog option")


# --- entries: option values -> an entry -----------------------------------------------------------


def test_entry_from_options_reads_each_value_by_its_fields_kind():
    entry = entries.entry_from_options(
        {"name": "X", "year": "2024", "keywords": ["a", "b"], "venue": None}, partial=False
    )
    assert entry == {"name": "X", "year": 2024, "keywords": ["a", "b"]}
    assert entries.entry_from_options({"year": "n.d."}, partial=True) == {"year": None}
    assert entries.entry_from_options({"year": "n.d."}, partial=False) == {}


@pytest.mark.parametrize(
    "values, message",
    [({"year": "soon"}, "--year "), ({"name": "bad \udcff"}, "--name is not valid UTF-8 text")],
)
def test_entry_from_options_refuses_what_a_field_cannot_hold(values, message):
    with pytest.raises(UsageError, match=message):
        entries.entry_from_options(values, partial=False)


def test_list_changes_one_per_list_field_given():
    changes = entries.list_changes({"keywords": ["a"]}, {"keywords": ["b"]}, {"author_names": "X; Y"})
    assert changes == {
        "keywords": edits.ListChange(["a"], ["b"], None),
        "author_names": edits.ListChange([], [], ["X", "Y"]),
    }
    assert entries.list_changes({}, {}, {}) == {}
    with pytest.raises(
        UsageError, match="--set-keywords replaces the whole list: give every item there, without --keyword"
    ):
        entries.list_changes({"keywords": ["a"]}, {}, {"keywords": "a;b"})


def test_unset_fields_and_catalog_type():
    assert entries.unset_fields(["venue,seam", " doi "]) == ["venue", "seam", "doi"]
    with pytest.raises(UsageError, match="--unset name: a required field cannot be removed"):
        entries.unset_fields(["name"])
    assert entries.catalog_type(["Current", "Foundational"], " current ", False) == "Current"
    assert entries.catalog_type(["Current"], "Brand new", True) == "Brand new"
    with pytest.raises(UsageError, match="unknown type 'Curent'") as caught:
        entries.catalog_type(["Current"], "Curent", False)
    assert "did you mean 'Current'?" in caught.value.hint


def test_missing_for_add_names_every_option_at_once():
    assert entries.missing_for_add({}) == [
        "--name",
        "--source",
        "--type",
        "--year",
        "--layer",
        "--mechanism",
        "--objective",
        "--question",
        "--availability",
    ]
    assert entries.missing_for_add(CELLS, entries.FROM_FILLS) == []


def test_fill_from_a_local_arxiv_fills_only_what_was_not_given(services):
    values = {"name": "Given name"}
    entries.fill_from(values, "arXiv:2407.00079v2")
    assert values["name"] == "Given name"
    assert values["title"].startswith("Mooncake: A KVCache-centric")
    assert values["arxiv"] == "2407.00079" and values["year"] == "2024"
    assert values["source"] == "Given name, arXiv:2407.00079"


# --- add, edit, rm ---------------------------------------------------------------------------------


def test_add_returns_the_source_written(mini):
    opts = authoring.AddOptions(mini, {"name": "TestServe", "source": "TestServe, Doe", "year": "2025", **CELLS})
    entry = authoring.new_entry(opts, lambda: ["Current"])
    assert list(entry)[:3] == ["id", "name", "source"] and entry["id"] == "testserve"
    added = authoring.add(opts, entry)
    assert added.id == "testserve" and added.year == 2025
    assert outcomes.added_text(added, "my.toml") == "Added testserve to my.toml\n"
    with pytest.raises(UsageError, match="add needs --name"):
        authoring.new_entry(authoring.AddOptions(mini, {}), lambda: [])


def test_add_from_fills_the_entry_from_the_local_service(mini, services):
    opts = authoring.AddOptions(mini, dict(CELLS), from_id="2407.00079")
    entry = authoring.new_entry(opts, lambda: ["Current"])
    assert entry["id"] == "mooncake" and entry["arxiv"] == "2407.00079"


def test_edit_plans_then_applies_and_says_what_changed(mini):
    opts = authoring.EditOptions(mini, "mooncake", {"keywords": ["prefix caching"], "seam": "the scheduler"})
    plan = authoring.plan_edit(opts)
    assert plan.changes == {"seam": "the scheduler"} and list(plan.lists) == ["keywords"]
    done = authoring.edit(opts, plan)
    assert done.ident == "mooncake" and done.source.seam == "the scheduler"
    assert outcomes.what_changed(done.before, done.after) == [
        "keywords: +prefix caching",
        "seam: (none) → the scheduler",
    ]
    with pytest.raises(UsageError, match="--unset seam and --seam cannot both be given"):
        authoring.plan_edit(authoring.EditOptions(mini, "mooncake", {"seam": "x"}, unset=["seam"]))
    with pytest.raises(UsageError, match="edit needs a field to change"):
        authoring.plan_edit(authoring.EditOptions(mini, "mooncake", {}))
    with pytest.raises(edits.NoSuchId):
        authoring.edit(authoring.EditOptions(mini, "mooncak", {"seam": "x"}), plan)


def test_near_miss_names_the_source_show_would_find(mini):
    from invmap.index import open_catalog

    miss = authoring.near_miss(open_catalog(mini), "mooncak")
    assert isinstance(miss, NotFoundError) and miss.message == "no source 'mooncak'; did you mean 'mooncake'?"


def test_rm_previews_then_removes(mini):
    assert authoring.to_remove(mini, ["mooncake"]) == [("mooncake", "Mooncake")]
    assert authoring.remove(mini, ["mooncake"]) == (["mooncake"], 0)
    with pytest.raises(edits.NoSuchId):
        authoring.remove(mini, ["mooncake"])


def test_where_and_init(tmp_path):
    shipped = Location(str(shipped_path()), "shipped with invmap")
    assert authoring.where(shipped) == {
        "path": shipped.path,
        "reason": "shipped with invmap",
        "shipped": True,
        "extends": [],
    }
    overlay = str(tmp_path / "over.toml")
    assert authoring.init(overlay, overlay=True, force=False) == overlay
    data = authoring.where(Location(overlay, "--catalog option"), with_index=True)
    assert data["extends"] == [shipped.path] and list(data) == ["path", "reason", "shipped", "extends", "index"]


# --- check -----------------------------------------------------------------------------------------


def test_check_reports_a_valid_catalog(mini):
    report = checking.check(mini)
    assert report.data() == {
        "path": mini.path,
        "valid": True,
        "sources": 2,
        "problems": [],
        "warnings": [],
        "details": [],
    }
    assert outcomes.check_text(report) == f"{mini.path}: ok, 2 sources\n"


def test_check_locates_each_problem(mini):
    Path(mini.path).write_text(Path(mini.path).read_text().replace('id = "mooncake"', 'id = "Bad Id"'))
    report = checking.check(mini)
    assert not report.valid and report.exit_code == 3 and report.sources is None
    [detail] = report.data()["details"]
    assert detail["problem"].startswith("source 2 (Bad Id): field 'id'") and detail["column"] == 1
    assert outcomes.check_text(report) == ""
    assert outcomes.problems_message(report).startswith(f"{mini.path}:{detail['line']}:1: source 2")


def test_link_check_options_are_checked_before_any_request(mini):
    with pytest.raises(UsageError, match="--max-age"):
        checking.links_to_check(checking.LinkCheckOptions(mini, max_age="soon"), lambda: None)
    with pytest.raises(UsageError, match="--timeout must be more than 0 seconds, not 0"):
        checking.links_to_check(checking.LinkCheckOptions(mini, timeout=0), lambda: None)
    found = checking.links_to_check(checking.LinkCheckOptions(mini), lambda: None)
    assert {link.id for link in found} == {"mooncake"}


# --- diff, refresh, export, import ----------------------------------------------------------------


def test_diff_loads_each_side(mini, tmp_path):
    assert diffing.is_empty(diffing.run(mini.path, mini.path))
    markdown = tmp_path / "map.md"
    markdown.write_bytes((ASSETS / "seed.md").read_bytes())
    assert len(diffing.load(str(markdown)).sources) == len(diffing.load("shipped").sources) == 30
    difference = diffing.run("shipped", mini.path)
    assert "mooncake" not in difference["removed"] and "roofline" in difference["removed"]
    with pytest.raises(UsageError, match="only one of A and B can be '-'"):
        diffing.run("-", "-")
    markdown.write_bytes(b"| \xff |")
    with pytest.raises(CatalogError, match="not UTF-8 text"):
        diffing.load(str(markdown))


def test_refresh_compares_with_the_local_services(mini, services):
    Path(mini.path).write_text(
        Path(mini.path).read_text().replace('name = "Mooncake"', 'name = "Mooncake"\ntitle = "old"')
    )
    changed = refreshing.run(refreshing.RefreshOptions(mini), lambda: None)
    assert [c["id"] for c in changed] == ["mooncake"]
    assert changed[0]["fields"]["title"][0] == "old" and changed[0]["fields"]["author_names"][0] == []
    rows = refreshing.rows(changed)
    assert rows[0] == {"change": "changed", "id": "mooncake", "field": "title", "old": "old", "new": rows[0]["new"]}
    refreshing.write(mini, changed)
    assert refreshing.run(refreshing.RefreshOptions(mini), lambda: None) == []


def test_refresh_compares_titles_whatever_their_spacing_and_case():
    assert refreshing.same("A  title\n", "a TITLE")
    assert not refreshing.same(["A"], ["a"])


def test_export_format_and_what_markdown_leaves_out(mini):
    assert exchange.export_format(None, "map.bib") == ("bibtex", "bibtex")
    assert exchange.export_format("csv", None) == ("csv", None)
    assert exchange.export_format(None, "-") == ("markdown", None)
    with pytest.raises(UsageError, match="unknown export format 'html'"):
        exchange.export_format("html", None)
    from invmap import catalog as catalogs

    assert exchange.markdown_leaves_out(catalogs.load(mini), links=False) == [
        "id",
        "name",
        "authors",
        "arxiv",
        "layers",
    ]


def test_each_authoring_view_declares_its_formats():
    assert formats.names_for(formats.CHECK) == ("table", "json", "jsonl", "plain")
    assert formats.names_for(formats.WRITTEN) == ("table", "json", "jsonl", "plain")  # README: add, edit
    assert formats.names_for(formats.RECORD_CHECK) == ("table", "json", "jsonl", "plain")


def test_json_and_format_json_are_one_road(cli, mine):
    """`--json` is `--format json` for the authoring commands too: the same bytes, one renderer."""
    for words in (["where"], ["check"], ["check", str(mine)], ["--catalog", str(mine), "where"]):
        assert cli(*words, "--json").out == cli(*words, "--format", "json").out, words
    line = cli("check", str(mine), "--format", "jsonl").out
    assert line.count("\n") == 1 and json.loads(line)["sources"] == 2
