"""Keeping a map alive by hand: edit and rm in place, and overlays of the shipped map (issue: alive)."""

from __future__ import annotations

import json
import time

import pytest

from conftest import REPO, add_args, generated_catalog, ids_of, installed_invmap
from invmap.fields import FIELDS
from invmap.model import effective_link


def show(cli, catalog, ident):
    return json.loads(cli("--catalog", str(catalog), "show", ident, "--json").out)


def test_edit_changes_only_that_table_and_keeps_every_other_byte(cli, mine):
    text = "# my own notes\n" + mine.read_text(encoding="utf-8").replace(
        "[[sources]]", "# the next one\n[[sources]]", 2
    )
    mine.write_text(text, encoding="utf-8")
    result = cli("--catalog", str(mine), "edit", "pagedattention", "--seam", "the block manager", "--keyword", "paging")
    assert (result.code, result.out) == (
        0,
        f"Changed pagedattention in {mine}:\n  keywords: +paging\n  seam: (none) → the block manager\n",
    )
    after = mine.read_text(encoding="utf-8")
    paged = after.index('id = "pagedattention"')
    assert after[:paged] == text[:paged]  # comments and the other tables before it
    moon = after.index('# the next one\n[[sources]]\nid = "mooncake"')
    assert after[moon:] == text[text.index('# the next one\n[[sources]]\nid = "mooncake"') :]
    record = show(cli, mine, "pagedattention")
    assert (record["seam"], record["keywords"]) == ("the block manager", ["paging"])


SETTABLE = [f for f in FIELDS if f.stored and f.name not in ("id", "name")]


@pytest.mark.parametrize("field", SETTABLE, ids=lambda f: f.name)
def test_every_field_is_set_by_add_and_changed_by_edit(cli, mine, field):
    """Each field's own option (from fields.py), with its declared example: `add` stores it, `edit`
    changes it and nothing else, and `show --json` gives the value back in the JSON contract's form."""
    text = field.example or f"A new {field.name}."
    expected = field.kind.json(field.kind.parse([text] if field.kind.many else text))
    base = add_args("Trial")
    given = dict(zip(base[::2], base[1::2])) | {field.flag: text}
    added = cli("--catalog", str(mine), "add", *(part for pair in given.items() for part in pair))
    assert added.code == 0, added.err
    trial = show(cli, mine, "trial")
    assert trial[field.name] == expected
    before = show(cli, mine, "mooncake")
    edited = cli("--catalog", str(mine), "edit", "mooncake", field.flag, text)
    assert edited.code == 0, edited.err
    after = {**before, field.name: expected}
    if field.name == "layer":  # the codes follow the label
        after["layers"] = trial["layers"]
    if field.name in ("arxiv", "doi") and before["url"] == effective_link(None, before["arxiv"], before["doi"]):
        after["url"] = effective_link(None, after["arxiv"], after["doi"])  # a url of no own: the new page
    assert show(cli, mine, "mooncake") == after


def test_edit_lists_add_and_unset_clears(cli, mine):
    cli("--catalog", str(mine), "edit", "mooncake", "--keyword", "a", "--keyword", "b")
    assert show(cli, mine, "mooncake")["keywords"] == ["a", "b"]
    cli("--catalog", str(mine), "edit", "mooncake", "--keyword", "c")
    assert show(cli, mine, "mooncake")["keywords"] == ["a", "b", "c"]
    assert cli("--catalog", str(mine), "edit", "mooncake", "--unset", "keywords,arxiv").code == 0
    record = show(cli, mine, "mooncake")
    assert (record["keywords"], record["arxiv"]) == ([], None)
    assert cli("--catalog", str(mine), "edit", "mooncake", "--year", "n.d.").code == 0
    assert show(cli, mine, "mooncake")["year"] is None


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["edit", "mooncake", "--unset", "name"], 2, "Error: --unset name: a required field cannot be removed"),
        (["edit", "mooncake", "--unset", "venu"], 2, "Error: --unset venu: no such optional field"),
        (["edit", "mooncake"], 2, "Error: edit needs a field to change (--FIELD VALUE) or --unset FIELD"),
        (["edit", "mooncake", "--year", "20x"], 2, "Error: --year takes a year such as 2024"),
        (["edit", "mooncake", "--id", "pagedattention"], 2, "Error: cannot change 'mooncake' in"),
        (["edit", "nosuch", "--seam", "x"], 1, "Error: no source 'nosuch'"),
        (["rm", "--yes", "nosuch"], 1, "Error: no source 'nosuch'"),
        (["edit", "mooncake", "--type", "Curent"], 2, "Error: unknown type 'Curent'"),
    ],
)
def test_bad_edits_change_nothing(cli, mine, args, code, message):
    before = mine.read_bytes()
    result = cli("--catalog", str(mine), *args)
    assert (result.code, mine.read_bytes()) == (code, before)
    assert result.err.startswith(message), result.err


def test_edit_and_rm_refuse_the_shipped_catalog(cli):
    for args in (["edit", "vllm", "--seam", "x"], ["rm", "--yes", "vllm"]):
        result = cli(*args)
        assert result.code == 2 and "refusing to change the catalog shipped with invmap" in result.err


def test_rm_removes_the_table_and_nothing_else(cli, mine):
    before = mine.read_text(encoding="utf-8")
    cli("--catalog", str(mine), "add", *add_args("Z"))
    assert cli("--catalog", str(mine), "rm", "--yes", "z").out == f"Removed z from {mine}\n"
    assert mine.read_text(encoding="utf-8") == before
    result = cli("--catalog", str(mine), "rm", "--yes", "pagedattention", "mooncake")
    assert result.code == 2 and "cannot remove every source" in result.err
    assert mine.read_text(encoding="utf-8") == before


def test_edit_keeps_crlf(cli, mine):
    mine.write_bytes(mine.read_bytes().replace(b"\n", b"\r\n"))
    assert cli("--catalog", str(mine), "edit", "mooncake", "--seam", "x").code == 0
    data = mine.read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n")


def test_a_header_inside_a_string_never_cuts_a_table(cli, mine):
    text = mine.read_text(encoding="utf-8").replace(
        'preface = "Two sources for tests."', 'preface = """Two sources,\n[[sources]]\nid = "fake"\nfor tests."""'
    )
    mine.write_text(text, encoding="utf-8")
    assert cli("--catalog", str(mine), "check").code == 0
    assert cli("--catalog", str(mine), "edit", "pagedattention", "--seam", "s").code == 0
    assert cli("--catalog", str(mine), "edit", "mooncake", "--seam", "t").code == 0
    assert (show(cli, mine, "pagedattention")["seam"], show(cli, mine, "mooncake")["seam"]) == ("s", "t")
    assert mine.read_text(encoding="utf-8").startswith(text[: text.index('[[sources]]\nid = "pagedattention"')])
    assert cli("--catalog", str(mine), "rm", "--yes", "pagedattention").code == 0
    assert ids_of(cli("--catalog", str(mine), "list", "--json")) == ["mooncake"]


def test_edit_by_identifier_but_never_by_a_name(cli, mine):
    """A writer takes an exact id, arXiv id, DOI or link: a name is a near miss (exit 1, nothing written)."""
    assert cli("--catalog", str(mine), "edit", "https://arxiv.org/abs/2407.00079v2", "--seam", "by link").out == (
        f"Changed mooncake in {mine}:\n  seam: (none) → by link\n"
    )
    before = mine.read_bytes()
    result = cli("--catalog", str(mine), "edit", "PagedAttention", "--seam", "by name")
    assert (result.code, result.out, mine.read_bytes()) == (1, "", before)
    assert result.err.startswith("Error: no source 'PagedAttention'; did you mean 'pagedattention'?\n")


def test_edit_is_quick_on_a_large_catalog(tmp_path, sh):
    """`edit` within twice `add` (plus a second), each with the index current as benchmarks/run.py
    times them: a write leaves the index stale, and a write on a stale index goes the full way."""
    big = generated_catalog(tmp_path / "big.toml", 10000)
    assert sh("--catalog", str(big), "list", "--limit", "1", "--json").code == 0
    started = time.monotonic()
    assert sh("--catalog", str(big), "add", *add_args("Zed")).code == 0
    adding = time.monotonic() - started
    assert sh("--catalog", str(big), "list", "--limit", "1", "--json").code == 0
    started = time.monotonic()
    assert sh("--catalog", str(big), "edit", "zed", "--seam", "here").code == 0
    editing = time.monotonic() - started
    assert editing < 2 * adding + 1, (editing, adding)


# --- overlays -------------------------------------------------------------------------------------


@pytest.fixture
def overlay(cli, tmp_path):
    path = tmp_path / "my-map.toml"
    result = cli("init", "--overlay", str(path))
    assert result.code == 0 and result.out.startswith(f"Wrote {path}, an overlay of the shipped map")
    return path


def test_an_overlay_starts_as_the_shipped_map(cli, overlay):
    assert ids_of(cli("--catalog", str(overlay), "list", "--json")) == ids_of(cli("list", "--json"))
    assert json.loads(cli("--catalog", str(overlay), "define", "ttft", "--json").out)[0]["term"] == "TTFT"
    assert json.loads(cli("--catalog", str(overlay), "triage", "ttft", "--json").out)[0]["code"] == "L2"
    where = json.loads(cli("--catalog", str(overlay), "where", "--json").out)
    assert where["extends"] == [str(REPO / "src" / "invmap" / "catalog.toml")] or where["extends"][0].endswith(
        "catalog.toml"
    )


def test_add_edit_rm_on_an_overlay_write_only_the_overlay(cli, overlay):
    shipped = (REPO / "catalog.toml").read_bytes()
    assert cli("--catalog", str(overlay), "add", *add_args("Mine")).code == 0
    assert cli("--catalog", str(overlay), "edit", "vllm", "--seam", "my seam", "--unset", "keywords").code == 0
    assert cli("--catalog", str(overlay), "rm", "--yes", "kiely-guide").code == 0
    assert (REPO / "catalog.toml").read_bytes() == shipped
    listed = ids_of(cli("--catalog", str(overlay), "list", "--json"))
    assert "mine" in listed and "kiely-guide" not in listed and len(listed) == 30
    vllm = show(cli, overlay, "vllm")
    assert (vllm["seam"], vllm["keywords"], vllm["code"]) == ("my seam", [], "https://github.com/vllm-project/vllm")
    text = overlay.read_text(encoding="utf-8")
    assert 'id = "vllm"\nseam = "my seam"\nunset = [\n    "keywords",\n]' in text
    assert 'id = "kiely-guide"\nremove = true' in text
    assert cli("--catalog", str(overlay), "fmt", "--check").code == 0
    assert cli("--catalog", str(overlay), "rm", "--yes", "vllm").code == 0  # its change becomes a removal
    assert "vllm" not in ids_of(cli("--catalog", str(overlay), "list", "--json"))


def test_an_overlay_change_to_a_source_the_base_lost_is_reported(cli, overlay):
    overlay.write_text(overlay.read_text() + '\n[[sources]]\nid = "gone-paper"\nseam = "x"\n', encoding="utf-8")
    result = cli("--catalog", str(overlay), "check")
    assert result.code == 3
    assert "overlay source 1 (gone-paper): changes a source the base catalog does not have" in result.err


def test_an_overlay_of_a_file_follows_that_file(cli, tmp_path, mine):
    over = tmp_path / "over.toml"
    over.write_text('[catalog]\nextends = "mine.toml"\n\n[[sources]]\nid = "mooncake"\nremove = true\n')
    assert ids_of(cli("--catalog", str(over), "list", "--json")) == ["pagedattention"]
    cli("--catalog", str(mine), "add", *add_args("Later"))
    assert ids_of(cli("--catalog", str(over), "list", "--json")) == ["pagedattention", "later"]


def test_an_overlay_loop_is_a_clear_error(cli, tmp_path):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text('[catalog]\nextends = "b.toml"\n')
    b.write_text('[catalog]\nextends = "a.toml"\n')
    result = cli("--catalog", str(a), "list")
    assert result.code == 3 and "which extends this file again (a loop)" in result.err


def test_the_index_of_an_overlay_is_rebuilt_when_its_base_changes(sh, tmp_path, mine):
    over = tmp_path / "over.toml"
    over.write_text('[catalog]\nextends = "mine.toml"\n')
    assert sh("--catalog", str(over), "list", "--json").code == 0
    trace = sh("--catalog", str(over), "list", "--json", env={"INVMAP_TRACE": "1"})
    assert trace.err.startswith("invmap: index: current")
    time.sleep(0.01)
    mine.write_text(mine.read_text() + "\n", encoding="utf-8")
    assert sh("--catalog", str(over), "list", "--json", env={"INVMAP_TRACE": "1"}).err.startswith(
        "invmap: index: built"
    )


def test_init_overlay_refuses_an_existing_file(cli, overlay):
    assert cli("init", "--overlay", str(overlay)).code == 2
    assert installed_invmap()


# --- diff ------------------------------------------------------------------------------------------


def test_diff_of_a_catalog_with_itself_is_empty_and_exit_0(cli):
    result = cli("diff", "shipped", "shipped", "--json")
    assert result.code == 0
    assert json.loads(result.out) == {
        "added": [],
        "removed": [],
        "changed": [],
        "tables": {"catalog": [], "layers": [], "glossary": []},
    }


def test_diff_names_added_removed_and_changed_fields(cli, tmp_path, overlay):
    cli("--catalog", str(overlay), "add", *add_args("Mine"))
    cli("--catalog", str(overlay), "edit", "vllm", "--seam", "my seam")
    cli("--catalog", str(overlay), "rm", "--yes", "kiely-guide")
    overlay.write_text(overlay.read_text() + '\n[glossary.TTFT]\ndefinition = "Mine."\n', encoding="utf-8")
    result = cli("diff", "shipped", str(overlay), "--json")
    assert result.code == 1
    old_seam = json.loads(cli("show", "vllm", "--json").out)["seam"]
    assert json.loads(result.out) == {
        "added": ["mine"],
        "removed": ["kiely-guide"],
        "changed": [{"id": "vllm", "fields": {"seam": [old_seam, "my seam"]}}],
        "tables": {"catalog": [], "layers": [], "glossary": ["TTFT"]},
    }
    plain = cli("diff", "shipped", str(overlay)).out.splitlines()
    assert plain[:3] == ["added\tmine\t\t\t", "removed\tkiely-guide\t\t\t", f"changed\tvllm\tseam\t{old_seam}\tmy seam"]


def test_diff_matches_a_renamed_source_by_its_identifiers(cli, mine, tmp_path):
    other = tmp_path / "other.toml"
    other.write_text(mine.read_text().replace('id = "mooncake"', 'id = "moon"'), encoding="utf-8")
    difference = json.loads(cli("diff", str(mine), str(other), "--json").out)
    assert difference["changed"] == [{"id": "moon", "fields": {"id": ["mooncake", "moon"]}}]
    assert difference["added"] == difference["removed"] == []


def test_diff_reads_markdown_and_stdin(cli, tmp_path):
    md = tmp_path / "map.md"
    cli("export", "--format", "markdown", "--links", "-o", str(md))
    assert cli("diff", str(md), str(md)).code == 0
    toml = cli("export", "--format", "toml").out
    assert cli("diff", "shipped", "-", input=toml).code == 0
    assert cli("diff", "-", "-").code == 2


@pytest.mark.parametrize("field", SETTABLE, ids=lambda f: f.name)
def test_add_validates_once_and_writes_what_the_full_path_writes(cli, mine, tmp_path, monkeypatch, field):
    """On a catalog that extends nothing, `add` validates only the result (the file as it was is never
    validated: the fast path answered), and writes byte for byte what the full path (the file validated
    before and after) writes, for each field's own option with its declared example."""
    from invmap import edits

    full = tmp_path / "full.toml"
    full.write_bytes(mine.read_bytes())
    text = field.example or f"A new {field.name}."
    base = add_args("Trial")
    args = [part for pair in (dict(zip(base[::2], base[1::2])) | {field.flag: text}).items() for part in pair]
    once = tmp_path / "once.toml"
    once.write_bytes(mine.read_bytes())
    with monkeypatch.context() as m:
        m.setattr(edits, "plain_tables", lambda *a: None)
        m.setattr(edits._Opened, "indexed", lambda self: None)
        slow = cli("--catalog", str(full), "add", *args)
        assert slow.code == 0, slow.err
    with monkeypatch.context() as m:
        m.setattr(edits._Opened, "indexed", lambda self: None)
        m.setattr(edits._Opened, "catalog", lambda self: pytest.fail("the file as it was was validated"))
        assert cli("--catalog", str(once), "add", *args).code == 0
    with _only_the_index_answers(monkeypatch):
        fast = cli("--catalog", str(mine), "add", *args)
    assert _said(fast) == _said(slow, full, mine)
    assert mine.read_bytes() == once.read_bytes() == full.read_bytes()


def _said(result, path=None, instead=None):
    """What a command said (exit code, stdout, stderr), one catalog's path read as another's."""
    if path is None:
        return result.code, result.out, result.err
    return tuple(p.replace(str(path), str(instead)) if isinstance(p, str) else p for p in _said(result))


def _only_the_index_answers(monkeypatch):
    """A context in which a write must take the index's way: validating or parsing the whole file fails."""
    from invmap import edits

    m = monkeypatch.context()
    context = m.__enter__()

    def whole(*a, **k):
        pytest.fail("the whole file was parsed or validated: the index did not answer")

    for name in ("validate_bytes", "parse_bytes", "plain_tables"):
        context.setattr(edits, name, whole)
    context.setattr(edits._Opened, "catalog", whole)
    context.setattr(edits._Opened, "table", whole)

    class Scope:
        def __enter__(self):
            return context

        def __exit__(self, *exc):
            m.__exit__(*exc)

    return Scope()


@pytest.mark.parametrize("field", SETTABLE, ids=lambda f: f.name)
def test_edit_through_the_index_writes_what_the_full_path_writes(cli, mine, tmp_path, monkeypatch, field):
    """With a current index, `edit` finds the source and validates its table alone (neither parsing
    nor validating the whole file), and writes and says byte for byte what the full path does."""
    from invmap import edits

    text = field.example or f"A new {field.name}."
    full = tmp_path / "full.toml"
    full.write_bytes(mine.read_bytes())
    with monkeypatch.context() as m:
        m.setattr(edits._Opened, "indexed", lambda self: None)
        slow = cli("--catalog", str(full), "edit", "mooncake", field.flag, text)
    assert cli("--catalog", str(mine), "list").code == 0  # the index, current for the file
    with _only_the_index_answers(monkeypatch):
        fast = cli("--catalog", str(mine), "edit", "2407.00079", field.flag, text)  # found by its arXiv id
    assert _said(fast) == _said(slow, full, mine)
    assert slow.code == 0, slow.err
    assert mine.read_bytes() == full.read_bytes()


def test_rm_through_the_index_writes_what_the_full_path_writes(cli, mine, tmp_path, monkeypatch):
    """With a current index, `rm` of several sources finds each through it and takes their tables out
    without parsing or validating the whole file: the same bytes as the full path."""
    from invmap import edits

    for name in ("Trial", "Other"):
        assert cli("--catalog", str(mine), "add", *add_args(name)).code == 0
    full = tmp_path / "full.toml"
    full.write_bytes(mine.read_bytes())
    with monkeypatch.context() as m:
        m.setattr(edits._Opened, "indexed", lambda self: None)
        slow = cli("--catalog", str(full), "rm", "other", "mooncake", "--yes")
    assert cli("--catalog", str(mine), "list").code == 0
    with _only_the_index_answers(monkeypatch):
        fast = cli("--catalog", str(mine), "rm", "other", "2407.00079", "--yes")
    assert _said(fast) == _said(slow, full, mine)
    assert slow.code == 0, slow.err
    assert mine.read_bytes() == full.read_bytes()
    assert ids_of(cli("--catalog", str(mine), "list", "--json")) == ["pagedattention", "trial"]


def test_an_index_of_other_bytes_is_not_asked(cli, mine):
    """An index is trusted for the file's current bytes only: a change made behind invmap's back
    (the file replaced after its index was built) sends `add` the full way, which sees the id taken."""
    assert cli("--catalog", str(mine), "list").code == 0
    text = mine.read_text(encoding="utf-8")
    first = "[[sources]]" + text.split("[[sources]]")[1]  # pagedattention's table, under another id
    mine.write_text(text + "\n" + first.replace('id = "pagedattention"', 'id = "trial"'), encoding="utf-8")
    before = mine.read_bytes()
    taken = cli("--catalog", str(mine), "add", *add_args("Trial"))
    assert (taken.code, mine.read_bytes()) == (2, before)
    assert "id 'trial' already exists" in taken.err


def test_refusals_through_the_index_are_worded_as_before(cli, mine, monkeypatch):
    """Where the index says a write may be refused, the full path answers with its own words."""
    from invmap import edits

    assert cli("--catalog", str(mine), "list").code == 0
    asked = []
    real = edits._Opened.catalog
    monkeypatch.setattr(edits._Opened, "catalog", lambda self: asked.append(1) or real(self))
    before = mine.read_bytes()
    linked = cli("--catalog", str(mine), "add", *add_args("Trial", source="Trial, arXiv:2407.00079"))
    assert (linked.code, mine.read_bytes()) == (2, before)
    assert "arXiv id 2407.00079 (in its Source text) is already in the map, as mooncake" in linked.err
    bad = cli("--catalog", str(mine), "edit", "mooncake", "--year", "1200")
    assert (bad.code, mine.read_bytes()) == (2, before)
    assert bad.err.startswith(f"Error: cannot change 'mooncake' in {mine}:\n  field 'year': implausible year 1200 (")
    every = cli("--catalog", str(mine), "rm", "mooncake", "pagedattention", "--yes")
    assert (every.code, mine.read_bytes()) == (2, before)
    assert f"cannot remove every source of {mine}" in every.err
    assert asked  # the full path answered


def test_add_refusals_on_the_fast_path_are_worded_as_before(cli, mine):
    before = mine.read_bytes()
    taken = cli("--catalog", str(mine), "add", *add_args("Trial", id="mooncake"))
    assert (taken.code, mine.read_bytes()) == (2, before)
    assert "id 'mooncake' already exists" in taken.err
    twice = cli("--catalog", str(mine), "add", *add_args("Trial", arxiv=show(cli, mine, "mooncake")["arxiv"]))
    assert (twice.code, mine.read_bytes()) == (2, before)
    assert "is already in the map, as mooncake" in twice.err


def test_rm_validates_a_catalog_that_extends_nothing_once(cli, mine, monkeypatch):
    """`rm` on a catalog that extends nothing validates only the result: the file as it was is never
    validated (the fast path answered), and the table is gone."""
    from invmap import edits

    monkeypatch.setattr(edits._Opened, "catalog", lambda self: pytest.fail("the file as it was was validated"))
    result = cli("--catalog", str(mine), "rm", "mooncake", "--yes")
    assert result.code == 0, result.err
    assert 'id = "mooncake"' not in mine.read_text(encoding="utf-8")


def test_a_header_line_inside_a_multi_line_string_sends_a_write_the_full_way(cli, mine, tmp_path, monkeypatch):
    """A line that only looks like a `[[sources]]` header (inside a multi-line string) makes the line
    scan find one table too many for the index's count: the index's way declines, and `edit` and `rm`
    write and say what the full path does."""
    from invmap import edits
    from invmap.spans import source_starts

    head = '[catalog]\npreface = """My notes.\n[[sources]]\nid = "ghost"\nThat was no table."""\n\n'
    text = head + mine.read_text(encoding="utf-8")
    mine.write_text(text, encoding="utf-8")
    assert source_starts(text, 2) is None
    full = tmp_path / "full.toml"
    full.write_bytes(mine.read_bytes())
    for args in (["edit", "pagedattention", "--seam", "here"], ["rm", "mooncake", "--yes"]):
        with monkeypatch.context() as m:
            m.setattr(edits._Opened, "indexed", lambda self: None)
            slow = cli("--catalog", str(full), *args)
        assert cli("--catalog", str(mine), "list").code == 0
        fast = cli("--catalog", str(mine), *args)
        assert _said(fast) == _said(slow, full, mine), args
        assert mine.read_bytes() == full.read_bytes()
