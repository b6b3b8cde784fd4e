"""Catalog authoring: where, check, init, add, fmt, export, import — and bad input never loses data."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
from pathlib import Path

import pytest
from test_catalog_errors import EXPECTED

from conftest import ASSETS, REPO, SEED, add_args, seed_rows
from invmap import canonical, validation, writers
from invmap import catalog as catalog_io
from invmap.vocabulary import SEED_COLUMNS

BROKEN = ASSETS / "broken"
ADD = [
    "--name",
    "TestServe",
    "--source",
    "TestServe, Doe et al.",
    "--type",
    "Current",
    "--year",
    "2025",
    "--layer",
    "L2 and L5",
    "--mechanism",
    "Route prefill by queue depth.",
    "--objective",
    "Cut tail delay.",
    "--question",
    "When does rerouting cost more than it saves?",
    "--availability",
    "Primary paper.",
]


@pytest.fixture
def mine(tmp_path) -> Path:
    path = tmp_path / "mine.toml"
    path.write_bytes((ASSETS / "mini.toml").read_bytes())
    return path


def files_in(folder: Path) -> list[str]:
    """What a write leaves: the files, never a temporary one. The empty `.NAME.lock` marker stays by
    design (removing a lock file others may hold open would let two writers in)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))


# --- where / check / init ----------------------------------------------------------------------------


def test_where_names_the_active_catalog_and_why(cli, mine):
    shipped = str(catalog_io.shipped_path())
    assert cli("where").out == f"{shipped}\t(shipped with invmap)\n"
    assert cli("where", env={"INVMAP_CATALOG": str(mine)}).out == f"{mine}\t($INVMAP_CATALOG)\n"
    both = cli("--catalog", str(mine), "where", env={"INVMAP_CATALOG": "/elsewhere.toml"})
    assert both.out == f"{mine}\t(--catalog option)\n"
    where = json.loads(cli("where", "--json").out)
    assert {k: where[k] for k in ("path", "reason", "shipped")} == {
        "path": shipped,
        "reason": "shipped with invmap",
        "shipped": True,
    }
    assert where["index"]["state"] in ("missing", "current")


def test_check_clean(cli, sh, mine):
    assert cli("check").code == 0
    result = sh("--catalog", str(mine), "check")
    assert (result.code, result.out, result.err) == (0, f"{mine}: ok, 2 sources\n", "")
    assert json.loads(cli("--catalog", str(mine), "check", "--json").out) == {
        "path": str(mine),
        "valid": True,
        "sources": 2,
        "problems": [],
        "warnings": [],
        "details": [],
    }


def test_check_reports_every_problem(cli):
    path = str(BROKEN / "many_problems.toml")
    result = cli("--catalog", path, "check")
    assert result.code == 3 and result.out == ""
    assert len(result.err.splitlines()) == 5
    report = json.loads(cli("--catalog", path, "check", "--json").out)
    assert report["valid"] is False and len(report["problems"]) == 4
    assert report["problems"][3] == "source 2 (pagedattention): duplicate id 'pagedattention' (first used by source 1)"


def test_init_copies_the_shipped_catalog(cli, tmp_path):
    target = tmp_path / "own.toml"
    assert cli("init", str(target)).code == 0
    assert target.read_bytes() == catalog_io.shipped_path().read_bytes()
    again = cli("init", str(target))
    assert again.code == 2 and again.err == f"Error: {target} already exists\nHint: pass --force to overwrite it\n"
    assert cli("init", str(target), "--force").code == 0
    assert cli("init", str(tmp_path)).code == 2
    assert files_in(tmp_path) == ["own.toml"]


# --- add ---------------------------------------------------------------------------------------------


def test_add_appends_and_keeps_the_rest_byte_for_byte(cli, sh, mine):
    before = mine.read_bytes()
    result = sh("--catalog", str(mine), "add", *ADD)
    assert (result.code, result.out, result.err) == (0, f"Added testserve to {mine}\n", "")
    after = mine.read_bytes()
    assert after.startswith(before)
    record = json.loads(cli("--catalog", str(mine), "show", "testserve", "--json").out)
    assert record["authors"] is None and record["layers"] == ["L2", "L5"]
    assert record["accessed"] == dt.date.today().isoformat() and record["year"] == 2025
    assert cli("--catalog", str(mine), "check").code == 0
    assert files_in(mine.parent) == ["mine.toml"]


def test_add_optional_fields_and_nd(cli, mine):
    args = [*ADD, "--id", "my-id", "--authors", "Doe et al.", "--arxiv", "2501.01005", "--accessed", "2026-01-02"]
    args[args.index("2025")] = "n.d."
    result = cli("--catalog", str(mine), "add", *args, "--json")
    assert result.code == 0
    record = json.loads(result.out)
    assert (record["id"], record["year"], record["arxiv"], record["accessed"]) == (
        "my-id",
        None,
        "2501.01005",
        "2026-01-02",
    )
    assert record["url"] == "https://arxiv.org/abs/2501.01005"


@pytest.mark.parametrize(
    "change, message",
    [
        (
            ["--layer", "L9"],
            "  field 'layer': unknown layer code 'L9' in 'L9' (valid codes: L1, L2, L3, L4, L5, L6, RL, P0)",
        ),
        (["--arxiv", "not-an-id"], "  field 'arxiv': 'not-an-id' is not an arXiv id such as '2407.00079'"),
        (["--mechanism", "  "], "  field 'mechanism': must not be empty"),
        (["--id", "Bad Id"], "  field 'id': 'Bad Id' is not lowercase kebab-case such as 'llm-d'"),
    ],
)
def test_rejected_add_leaves_the_file_as_it_was(cli, mine, change, message):
    before = mine.read_bytes()
    args = list(ADD)
    for flag, value in zip(change[::2], change[1::2]):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    result = cli("--catalog", str(mine), "add", *args)
    assert result.code == 2 and result.out == ""
    assert result.err == f"Error: cannot add this source to {mine}:\n{message}\n"
    assert mine.read_bytes() == before
    assert files_in(mine.parent) == ["mine.toml"]


@pytest.mark.parametrize(
    "flag, value, message",
    [
        (
            "--year",
            "2020..2024",
            "Error: --year takes a year such as 2024, or n.d. for an undated source, not '2020..2024'\n",
        ),
        ("--year", "soon", "Error: --year takes a year such as 2024, or n.d. for an undated source, not 'soon'\n"),
        ("--year", "1850", None),
        ("--accessed", "yesterday", "Error: --accessed takes a date such as 2026-08-07, not 'yesterday'\n"),
    ],
)
def test_add_bad_values(cli, mine, flag, value, message):
    before = mine.read_bytes()
    args = list(ADD)
    if flag in args:
        args[args.index(flag) + 1] = value
    else:
        args += [flag, value]
    result = cli("--catalog", str(mine), "add", *args)
    assert result.code == 2 and mine.read_bytes() == before
    if message:
        assert result.err == message
    else:
        assert "implausible year 1850" in result.err


def test_add_refuses_the_shipped_catalog_and_stdin(cli):
    shipped = catalog_io.shipped_path()
    before = shipped.read_bytes()
    result = cli("add", *ADD)
    assert result.code == 2
    assert result.err == (
        f"Error: refusing to change the catalog shipped with invmap ({shipped})\n"
        "Hint: start a catalog of your own with 'invmap init my-catalog.toml', then use "
        "'--catalog my-catalog.toml' or set INVMAP_CATALOG\n"
    )
    assert shipped.read_bytes() == before
    assert cli("--catalog", "-", "add", *ADD, input="").code == 2


@pytest.mark.parametrize(
    "name",
    [
        "syntax.toml",
        "missing_field.toml",
        "duplicate_id.toml",
        "empty.toml",
        "binary.toml",
        "unknown_field.toml",
        "wrong_type.toml",
        "bad_layer.toml",
    ],
)
@pytest.mark.parametrize("command", [["add", *ADD], ["fmt"], ["fmt", "--check"]])
def test_writing_commands_refuse_broken_catalogs_untouched(cli, tmp_path, name, command):
    target = tmp_path / name
    target.write_bytes((BROKEN / name).read_bytes())
    before = target.read_bytes()
    result = cli("--catalog", str(target), *command)
    assert result.code == 3 and result.out == ""
    assert result.err == f"Error: {target}: {EXPECTED[name]}\n"
    assert target.read_bytes() == before
    assert files_in(tmp_path) == [name]


def test_missing_file_and_directory_for_writers(cli, tmp_path):
    missing = tmp_path / "none.toml"
    assert cli("--catalog", str(missing), "add", *ADD).err == f"Error: {missing}: no such file\n"
    assert cli("--catalog", str(tmp_path), "fmt").err == f"Error: {tmp_path}: is a directory, not a catalog file\n"
    assert not missing.exists()


def test_interrupted_write_leaves_the_file_and_no_temporary(mine, monkeypatch):
    before = mine.read_bytes()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        writers.write_atomic(mine, "new text")
    assert mine.read_bytes() == before
    assert files_in(mine.parent) == ["mine.toml"]


# --- fmt ---------------------------------------------------------------------------------------------


def test_shipped_catalog_is_canonical(cli):
    text = (REPO / "catalog.toml").read_text(encoding="utf-8")
    assert canonical.dumps(catalog_io.load(str(REPO / "catalog.toml"))) == text
    result = cli("fmt", "--check")
    assert result.code == 0 and result.out.endswith(": already canonical\n")


def test_fmt_check_and_rewrite(cli, mine):
    messy = "# my notes\n" + mine.read_text(encoding="utf-8").replace(
        'year = 2023\nlayer = "L3"', 'layer = "L3"\nyear   =   2023'
    )
    mine.write_text(messy, encoding="utf-8")
    check = cli("--catalog", str(mine), "fmt", "--check")
    assert (check.code, check.out) == (1, "")
    assert check.err == f"{mine}: not canonical; 'invmap fmt' would rewrite it\n"
    assert mine.read_text(encoding="utf-8") == messy
    refused = cli("--catalog", str(mine), "fmt")  # its comment would be lost
    assert (refused.code, refused.err) == (2, "Error: fmt would drop 1 comment (line 1); --drop-comments to proceed\n")
    assert mine.read_text(encoding="utf-8") == messy
    done = cli("--catalog", str(mine), "fmt", "--drop-comments")
    assert (done.code, done.out) == (0, f"{mine}: reformatted\n")
    assert mine.read_text(encoding="utf-8") == (ASSETS / "mini.toml").read_text(encoding="utf-8")
    assert cli("--catalog", str(mine), "fmt", "--check").code == 0
    assert cli("fmt").code == 2  # the shipped catalog is never rewritten


# --- export ------------------------------------------------------------------------------------------


def seed_table_lines() -> list[str]:
    return [line for line in SEED.read_text(encoding="utf-8").splitlines() if line.startswith("|")]


def test_markdown_export_reproduces_the_seed_table(cli):
    out = cli("export", "--format", "markdown").out
    assert [line for line in out.splitlines() if line.startswith("|")] == seed_table_lines()
    seed = SEED.read_text(encoding="utf-8").splitlines()
    assert seed[0] in out and seed[-1] in out and all(line in out for line in seed if line.startswith("- "))


def test_markdown_export_reads_as_a_table_in_a_real_parser(cli):
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(cli("export").out)
    cells, row = [], None
    for token in tokens:
        if token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append(token.content)
        elif token.type == "tr_close":
            cells.append(row)
            row = None
    header, *rows = cells
    assert header == [
        "Direction/type",
        "Source",
        "Year",
        "Layer",
        "Central mechanism",
        "Reported objective",
        "Unresolved engineering question",
        "Implementation availability",
        "Accessed",
    ]
    assert rows == [list(r.values()) for r in seed_rows()]
    assert sum(1 for t in tokens if t.type == "bullet_list_open") == 1


def _bib(cli, *args):
    import bibtexparser
    from bibtexparser import middlewares

    text = cli(*args, "export", "--format", "bibtex").out
    decode = [middlewares.LatexDecodingMiddleware(), middlewares.SeparateCoAuthors()]
    library = bibtexparser.parse_string(text, append_middleware=decode)
    assert library.failed_blocks == []
    return text, {e.key: e for e in library.entries}


def test_bibtex_entry_types_follow_the_venue(cli):
    text, entries = _bib(cli)
    records = {r["id"]: r for r in json.loads(cli("list", "--json").out)}
    assert len(entries) == len(records) == 30
    for key, entry in entries.items():
        fields = {f.key for f in entry.fields}
        kind = records[key]["entry_type"] or "misc"
        assert entry.entry_type == kind, key
        need = {
            "inproceedings": {"author", "booktitle", "year"},
            "article": {"author", "journal", "year"},
            "techreport": {"author", "institution", "number", "year"},
            "misc": {"title"},
        }[kind]
        assert need <= fields, (key, need - fields)
        if kind == "misc" and records[key]["arxiv"]:  # the link once, in url; howpublished names the preprint
            assert {"eprint", "archiveprefix", "howpublished", "url"} <= fields
            assert records[key]["url"] not in next(f.value for f in entry.fields if f.key == "howpublished")
        elif kind == "misc":  # a page: its link once, in howpublished (which every style prints)
            assert "howpublished" in fields and "url" not in fields, key
    page = {f.key: f.value for f in entries["pagedattention"].fields}
    assert entries["pagedattention"].entry_type == "inproceedings"
    assert page["booktitle"] == "Proceedings of the ACM SIGOPS 29th Symposium on Operating Systems Principles"
    roofline = {f.key: f.value for f in entries["roofline"].fields}
    assert (entries["roofline"].entry_type, roofline["institution"], roofline["number"]) == (
        "techreport",
        "EECS Department, University of California, Berkeley",
        "UCB/EECS-2008-134",
    )
    # the title's case is kept by a second pair of braces
    assert "  title = {{Roofline: An Insightful Visual Performance Model for Floating-Point Programs" in text
    vllm = {f.key: f.value for f in entries["vllm"].fields}
    assert entries["vllm"].entry_type == "misc" and "url" not in vllm
    assert "  howpublished = {\\url{https://docs.vllm.ai/}}" in text
    assert text.count("https://docs.vllm.ai/") == 1
    assert "year" not in vllm


def test_bibtex_authors_read_back_whole_and_in_their_letters(cli):
    _, entries = _bib(cli)
    for record in json.loads(cli("list", "--json").out):
        authors = {f.key: f.value for f in entries[record["id"]].fields}.get("author")
        if record["author_names"]:
            assert authors == record["author_names"], record["id"]
    assert {f.key: f.value for f in entries["transformer"].fields}["author"][6] == "Łukasz Kaiser"
    assert {f.key: f.value for f in entries["flashattention"].fields}["author"][-1] == "Christopher Ré"


def test_bibtex_formats_in_pybtex_plain_without_a_warning(cli, tmp_path):
    import warnings

    from pybtex import errors
    from pybtex.backends.plaintext import Backend
    from pybtex.database import parse_string
    from pybtex.style.formatting.plain import Style

    text, _ = _bib(cli)
    errors.set_strict_mode(True)  # a warning (missing journal, missing author) raises
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        formatted = list(Style().format_bibliography(parse_string(text, "bibtex")).entries)
    assert len(formatted) == 30
    shown = {e.key: e.text.render(Backend()) for e in formatted}
    assert shown["orca"].startswith(
        "Gyeong-In Yu, Joo Seong Jeong, Geon-Woo Kim, Soojeong Kim, and Byung-Gon Chun. Orca:"
    )
    assert "In Proceedings of the 16th USENIX Symposium on Operating Systems Design and Implementation" in shown["orca"]


def test_bibtex_for_a_catalog_without_author_lists_keeps_the_source_wording(cli, mine):
    _, entries = _bib(cli, "--catalog", str(mine))
    assert all(e.entry_type == "misc" for e in entries.values())
    assert {f.key: f.value for f in entries["pagedattention"].fields}["author"] == ["Kwon", "others"]


def test_bibtex_escapes_special_characters(cli, tmp_path, mine):
    text = mine.read_text(encoding="utf-8").replace('name = "PagedAttention"', 'name = "Paged & 100% {KV}_cache #1"')
    mine.write_text(text, encoding="utf-8")
    import bibtexparser

    out = cli("--catalog", str(mine), "export", "--format", "bibtex").out
    assert r"Paged \& 100\% \{KV\}\_cache \#1" in out
    assert bibtexparser.parse_string(out).failed_blocks == []


def test_other_exports(cli, tmp_path):
    assert cli("export", "--format", "toml").out == (REPO / "catalog.toml").read_text(encoding="utf-8")
    assert json.loads(cli("export", "--format", "json").out) == json.loads(cli("list", "--json").out)
    rows = list(csv.DictReader(io.StringIO(cli("export", "--format", "csv", "--layer", "L6").out)))
    assert [r["id"] for r in rows] == ["llm-d", "bayesian-optimization"]
    target = tmp_path / "map.md"
    result = cli("export", "-o", str(target))
    assert (result.code, result.out) == (0, f"Wrote {target}: 30 sources as markdown\n")
    assert target.read_text(encoding="utf-8") == cli("export").out
    assert cli("export", "--format", "yaml").code == 2
    assert cli("export", "--year", "1901").code == 1


# --- import ------------------------------------------------------------------------------------------


def test_import_the_seed_gives_the_shipped_records(cli, sh):
    result = sh("import", str(SEED))
    assert result.code == 0 and result.err == ""
    imported = validation.validate(__import__("tomli").loads(result.out), "imported")
    shipped = catalog_io.load(str(catalog_io.shipped_path()))
    seed_keys = [key for _, key in SEED_COLUMNS]
    # The seed's nine cells come back verbatim; the shipped catalog adds short ids, names, titles, links.
    assert [[getattr(s, k) for k in seed_keys] for s in imported.sources] == [
        [getattr(s, k) for k in seed_keys] for s in shipped.sources
    ]
    assert imported.catalog.procedure == shipped.catalog.procedure


def test_export_markdown_import_round_trip(sh):
    exported = sh("export", "--format", "markdown").out
    back = sh("import", "-", input=exported)
    assert back.code == 0
    catalog = validation.validate(__import__("tomli").loads(back.out), "-")
    shipped = catalog_io.load(str(catalog_io.shipped_path()))
    seed_keys = [key for _, key in SEED_COLUMNS]
    assert [[getattr(s, k) for k in seed_keys] for s in catalog.sources] == [
        [getattr(s, k) for k in seed_keys] for s in shipped.sources
    ]
    assert catalog.catalog == shipped.catalog


def test_import_output_file_and_force(cli, tmp_path):
    target = tmp_path / "out.toml"
    first = cli("import", str(SEED), "-o", str(target))
    assert (first.code, first.out) == (0, f"Wrote {target}: 30 sources\n")
    before = target.read_bytes()
    second = cli("import", str(SEED), "-o", str(target))
    assert second.code == 2 and second.err == f"Error: {target} already exists\nHint: pass --force to overwrite it\n"
    assert target.read_bytes() == before
    assert cli("import", str(SEED), "-o", str(target), "--force").code == 0


@pytest.mark.parametrize(
    "text, message",
    [
        ("no table here\n", "-: no Markdown table found (expected a header row and a |---| row)"),
        ("| Source | Year |\n|---|---|\n| x | 2020 |\n", "-: table has no column 'Direction/type', 'Layer', "),
        (
            "| " + " | ".join(h for h in seed_rows()[0]) + " |\n|" + "---|" * 9 + "\n| a | b |\n",
            "-: table row 1 (line 3): 2 cells, expected 9",
        ),
    ],
)
def test_import_bad_markdown(cli, text, message):
    result = cli("import", "-", input=text)
    assert result.code == 3 and result.out == "" and result.err.startswith(f"Error: {message}")


def test_import_validates_like_check(cli):
    table = [l for l in SEED.read_text(encoding="utf-8").splitlines() if l.startswith("|")][:3]
    table[2] = table[2].replace("| n.d. |", "| soon |")
    result = cli("import", "-", input="\n".join(table) + "\n")
    assert result.code == 3
    assert result.err == "Error: -: source 1 (official-inference): field 'year': expected an integer, got text 'soon'\n"


def test_tsv_and_jsonl_exports_parse_back(cli):
    records = json.loads(cli("list", "--json").out)
    rows = list(csv.DictReader(io.StringIO(cli("export", "--format", "tsv").out), delimiter="\t"))
    assert [r["id"] for r in rows] == [r["id"] for r in records] and rows[0]["source"] == records[0]["source"]
    assert [json.loads(line) for line in cli("export", "--format", "jsonl").out.splitlines()] == records


def test_add_type_takes_the_catalogs_spelling(cli, mine):
    before = mine.read_bytes()
    wrong = cli("--catalog", str(mine), "add", *add_args("Z", type="Curent"))
    assert (wrong.code, mine.read_bytes()) == (2, before)
    assert wrong.err.splitlines()[-1] == (
        "Hint: did you mean 'Current'? pass --new-type to add a type the catalog does not use yet"
    )
    assert cli("--catalog", str(mine), "add", *add_args("Z", type="current")).code == 0
    assert json.loads(cli("--catalog", str(mine), "show", "z", "--json").out)["type"] == "Current"


def test_new_type_is_stored_and_check_warns_about_near_twins(cli, mine):
    assert cli("--catalog", str(mine), "add", *add_args("Z", type="Curent"), "--new-type").code == 0
    result = cli("--catalog", str(mine), "check")
    assert result.code == 0
    assert "type 'Curent' (1 source) looks like 'Current' (2): one type?" in result.err


def test_add_names_every_missing_option_at_once(cli, mine):
    result = cli("--catalog", str(mine), "add", "--name", "Z", "--year", "2024")
    assert result.code == 2
    assert result.err.splitlines()[0] == (
        "Error: add needs --source, --type, --layer, --mechanism, --objective, --question, --availability"
    )
