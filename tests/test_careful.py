"""What a careful user trips over (issue: careful): writes that lose data quietly, fuzzy destructive
commands, formats that lie, shapes that change. One section per item of the issue, through the real CLI
(a real subprocess or pseudo-terminal where the process matters)."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ASSETS, REPO, add_args, bash, ids_of, installed_invmap, on_terminal, screen, tab
from invmap import formats
from invmap import options as decl
from invmap.fields import FIELDS, HEADERS, MAX_ID, TEXT_FIELDS


def show(cli, catalog, ident):
    return json.loads(cli("--catalog", str(catalog), "show", ident, "--json").out)


@pytest.fixture
def overlay(cli, tmp_path):
    path = tmp_path / "my-map.toml"
    assert cli("init", "--overlay", str(path)).code == 0
    return path


def on_a_terminal(args, answer="", cols=80, rows=40, env=None):
    """The installed invmap with stdin, stdout and stderr on a pseudo-terminal; `answer` is typed once
    a prompt appears (or at once). Returns (exit status, everything the terminal showed)."""
    master, slave = os.openpty()
    os.system(f"stty -F {os.ttyname(slave)} cols {cols} rows {rows}")  # noqa: S605 - a fixed command
    full = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    full.update({"INVMAP_PAGER": "cat", "TERM": "xterm-256color", **(env or {})})
    child = subprocess.Popen([installed_invmap(), *args], stdin=slave, stdout=slave, stderr=slave, env=full)
    os.close(slave)
    seen = b""
    typed = not answer
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        if not typed and b"[y/N]" in seen:
            os.write(master, answer.encode())
            typed = True
        if child.poll() is not None and not ready:
            break
    code = child.wait(timeout=30)
    os.close(master)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode("utf-8", "replace")).replace("\r", "")
    return code, text


# --- 1. edit's list options: add, remove, replace; what changed, field by field -------------------------

LISTS = [f for f in FIELDS if f.stored and f.kind.name == "list"]


@pytest.mark.parametrize("field", LISTS, ids=lambda f: f.name)
def test_every_list_field_adds_removes_and_replaces_item_by_item(cli, mine, field):
    """The trio comes from fields.py for every list field: --X adds (the others stay), --remove-X
    removes, --set-Xs replaces; `edit` prints what changed."""
    edit = ["--catalog", str(mine), "edit", "mooncake"]
    assert cli(*edit, field.set_flag, "first;second").out == (
        f"Changed mooncake in {mine}:\n  {field.name}: +first, +second\n"
    )
    added = cli(*edit, field.flag, field.example)
    assert added.out == f"Changed mooncake in {mine}:\n  {field.name}: +{field.example}\n"
    assert show(cli, mine, "mooncake")[field.name] == ["first", "second", field.example]
    removed = cli(*edit, field.remove_flag, "first")
    assert removed.out == f"Changed mooncake in {mine}:\n  {field.name}: -first\n"
    assert show(cli, mine, "mooncake")[field.name] == ["second", field.example]
    again = cli(*edit, field.flag, "second")  # already there: nothing written
    assert again.out == f"Unchanged mooncake in {mine}: every value was already so\n"
    assert cli(*edit, field.set_flag, "").out == (
        f"Changed mooncake in {mine}:\n  {field.name}: -second, -{field.example}\n"
    )
    assert show(cli, mine, "mooncake")[field.name] == []
    before = mine.read_bytes()
    missing = cli(*edit, field.remove_flag, "nothing such")
    assert (missing.code, mine.read_bytes()) == (2, before)
    assert missing.err.startswith(f"Error: {field.remove_flag} 'nothing such': mooncake does not hold it\n")
    both = cli(*edit, field.set_flag, "a", field.flag, "b")
    assert (both.code, mine.read_bytes()) == (2, before)
    assert both.err == (
        f"Error: {field.set_flag} replaces the whole list: give every item there, without {field.flag}\n"
    )


def test_edit_help_declares_the_trio_for_every_list_field(cli):
    text = cli("edit", "--help").out
    for field in LISTS:
        for flag in (field.flag, field.remove_flag, field.set_flag):
            assert re.search(rf"(^|\s){re.escape(flag)}\s", text), flag


def test_edit_prints_scalar_changes_old_to_new(cli, mine):
    result = cli("--catalog", str(mine), "edit", "mooncake", "--year", "2025", "--unset", "arxiv")
    assert result.out == f"Changed mooncake in {mine}:\n  arxiv: 2407.00079 → (none)\n  year: 2024 → 2025\n"


def test_docs_edit_example_keeps_vllm_keywords(sh, tmp_path):
    """docs/catalogs.md's own example, as written, on a fresh overlay: vLLM keeps its twelve keywords, and
    `search continuous batching` still finds it."""
    readme = (REPO / "docs" / "catalogs.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if line.startswith("invmap edit vllm "))
    overlay = tmp_path / "my-map.toml"
    env = {"INVMAP_CATALOG": str(overlay)}
    assert sh("init", "--overlay", str(overlay)).code == 0
    keywords = json.loads(sh("show", "vllm", "--json", env=env).out)["keywords"]
    assert len(keywords) == 12
    done = bash(line, PATH=f"{Path(installed_invmap()).parent}:{os.environ['PATH']}", **env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Changed vllm in {overlay}:\n  seam: ")
    after = json.loads(sh("show", "vllm", "--json", env=env).out)
    assert after["keywords"] == keywords and "prefix caching" in after["keywords"]
    assert after["seam"] == "the scheduler and the KV-cache manager"
    assert "vllm" in ids_of(sh("search", "continuous", "batching", "--json", env=env))


# --- 2. destructive commands take exact names ------------------------------------------------------------


def test_rm_and_edit_refuse_a_near_miss(cli, overlay):
    before = overlay.read_bytes()
    for args in (["rm", "--yes", "vlm"], ["edit", "vlm", "--year", "2023"]):
        result = cli("--catalog", str(overlay), *args)
        assert (result.code, result.out, overlay.read_bytes()) == (1, "", before)
        assert result.err == (
            "Error: no source 'vlm'; did you mean 'vllm'?\n"
            "Hint: edit and rm take an exact id, arXiv id, DOI or link (see 'invmap list')\n"
        )
    paged = cli("--catalog", str(overlay), "edit", "paged", "--year", "2023")
    assert (paged.code, overlay.read_bytes()) == (1, before)
    assert paged.err.startswith("Error: no source 'paged'; did you mean 'pagedattention'?\n")


def test_rm_twice_never_removes_a_second_source(cli, mine):
    for name in ("kvx", "kvx-two"):
        assert cli("--catalog", str(mine), "add", *add_args(name, id=name)).code == 0
    assert cli("--catalog", str(mine), "rm", "--yes", "kvx").out == f"Removed kvx from {mine}\n"
    second = cli("--catalog", str(mine), "rm", "--yes", "kvx")
    assert second.code == 1 and second.err.startswith("Error: no source 'kvx'; did you mean 'kvx-two'?\n")
    assert "kvx-two" in ids_of(cli("--catalog", str(mine), "list", "--json"))


def test_rm_and_edit_take_an_arxiv_id_doi_or_link(cli, overlay):
    assert cli("--catalog", str(overlay), "edit", "arXiv:2407.00079", "--venue", "FAST 2025").out.startswith(
        f"Changed mooncake in {overlay}:\n"
    )
    assert cli("--catalog", str(overlay), "rm", "--yes", "https://docs.vllm.ai/").out == (
        f"Removed vllm from {overlay}\n"
    )


def test_parallel_renames_of_one_id_succeed_once(sh, mine):
    """20 processes at once rename the same source: the first wins, every other finds no source by
    that exact id (checked under the file's lock), and nothing else is renamed."""
    assert sh("--catalog", str(mine), "add", *add_args("Dupe")).code == 0
    assert sh("--catalog", str(mine), "list", "--json").code == 0  # the index, built once

    def rename(n: int):
        return sh("--catalog", str(mine), "edit", "dupe", "--id", f"dupe-{n}")

    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(rename, range(20)))
    assert sorted(r.code for r in results) == [0] + [1] * 19
    assert all(r.err.startswith("Error: no source 'dupe'") for r in results if r.code)
    listed = ids_of(sh("--catalog", str(mine), "list", "--json"))
    assert len([i for i in listed if i.startswith("dupe")]) == 1 and len(listed) == 3


def test_rm_off_a_terminal_needs_yes(sh, mine):
    before = mine.read_bytes()
    result = sh("--catalog", str(mine), "rm", "mooncake", input="y\n")
    assert (result.code, result.out, mine.read_bytes()) == (2, "", before)
    assert result.err == "Error: rm needs --yes when it cannot ask (stdin or stderr is not a terminal)\n"


def test_rm_asks_on_a_terminal(mine):
    before = mine.read_bytes()
    code, text = on_a_terminal(["--catalog", str(mine), "rm", "mooncake"], answer="n\n")
    assert code == 0 and f"Remove mooncake (Mooncake) from {mine}? [y/N]" in text and "nothing removed" in text
    assert mine.read_bytes() == before
    code, text = on_a_terminal(["--catalog", str(mine), "rm", "mooncake"], answer="y\n")
    assert code == 0 and f"Removed mooncake from {mine}" in text
    assert b'id = "mooncake"' not in mine.read_bytes()


def test_tab_after_edit_and_rm_offers_ids():
    subprocess.run([installed_invmap(), "list", "--json"], capture_output=True, check=True)
    for command in ("edit", "rm"):
        assert tab(f"invmap {command} Pag").stdout == "pagedattention\n"
        assert tab(f"invmap {command} Att").stdout.split() == []  # only a name starts so: names are not offered
        offered = tab(f"invmap {command} ").stdout.split()
        assert len(offered) == 30 and all(re.fullmatch(r"[a-z0-9-]+", i) for i in offered)
    assert tab("invmap show Pag").stdout == "PagedAttention\n"  # show still offers names


# --- 3. a removal on an overlay can be undone ------------------------------------------------------------


def test_rm_undo_brings_back_a_source_an_overlay_removes(cli, overlay):
    start = overlay.read_bytes()
    assert cli("--catalog", str(overlay), "rm", "--yes", "kiely-guide").code == 0
    for args in (["rm", "--yes", "kiely-guide"], ["edit", "kiely-guide", "--year", "2020"]):
        again = cli("--catalog", str(overlay), *args)
        assert (again.code, again.err) == (
            1,
            f"Error: kiely-guide is removed by this overlay ({overlay})\n"
            "Hint: 'invmap rm --undo kiely-guide' brings it back\n",
        )
    assert cli("--catalog", str(overlay), "rm", "--undo", "kiely-guide").out == (f"Restored kiely-guide in {overlay}\n")
    assert overlay.read_bytes() == start
    assert "kiely-guide" in ids_of(cli("--catalog", str(overlay), "list", "--json"))
    nothing = cli("--catalog", str(overlay), "rm", "--undo", "kiely-guide")
    assert (nothing.code, nothing.err) == (
        1,
        f"Error: nothing to undo for 'kiely-guide' in {overlay}: this overlay does not remove it\n",
    )


def test_rm_undo_keeps_the_overlays_other_changes(cli, overlay):
    cli("--catalog", str(overlay), "rm", "--yes", "vllm")
    overlay.write_text(overlay.read_text().replace("remove = true", 'seam = "kept"\nremove = true'))
    assert cli("--catalog", str(overlay), "rm", "--undo", "vllm").code == 0
    assert show(cli, overlay, "vllm")["seam"] == "kept"


# --- 4. add never replaces a source, nor adds one twice --------------------------------------------------


def test_add_of_an_existing_id_is_refused(cli, overlay, mine):
    for catalog, name in ((overlay, "vLLM"), (mine, "Mooncake")):
        before = catalog.read_bytes()
        result = cli("--catalog", str(catalog), "add", *add_args(name))
        ident = name.lower()
        assert (result.code, result.out, catalog.read_bytes()) == (2, "", before)
        assert result.err == f"Error: id '{ident}' already exists; use `invmap edit {ident}`, or --id for a new one\n"


def test_add_refuses_a_known_identifier_unless_allowed_and_check_reports_it(cli, overlay):
    before = overlay.read_bytes()
    again = add_args("Paged Again", arxiv="2309.06180")
    refused = cli("--catalog", str(overlay), "add", *again)
    assert (refused.code, overlay.read_bytes()) == (2, before)
    assert refused.err == (
        "Error: arXiv id 2309.06180 is already in the map, as pagedattention: one source, added twice?\n"
        "Hint: pass --allow-duplicate to add it anyway\n"
    )
    assert cli("--catalog", str(overlay), "add", *again, "--allow-duplicate").code == 0
    checked = cli("--catalog", str(overlay), "check")
    assert checked.code == 0
    assert "source 31 (paged-again): arXiv id 2309.06180 is also source 9's (pagedattention)" in checked.err


# --- 5. fmt never drops comments silently; add, edit and rm keep them --------------------------------------


def test_fmt_refuses_to_drop_comments(cli, mine):
    text = mine.read_text().replace('[[sources]]\nid = "mooncake"', '# the second\n[[sources]]\nid = "mooncake"')
    text = "# mine\n" + text.replace('layer = "L3"\n', 'layer = "L3"  # for now\n', 1).replace(
        "year = 2023", "year=2023"
    )
    mine.write_text(text)
    lines = [n for n, line in enumerate(text.splitlines(), 1) if "#" in line]
    result = cli("fmt", str(mine))
    assert (result.code, result.err) == (
        2,
        f"Error: fmt would drop 3 comments (lines {', '.join(map(str, lines))}); --drop-comments to proceed\n",
    )
    assert mine.read_text() == text
    assert cli("fmt", str(mine), "--drop-comments").code == 0 and "#" not in mine.read_text()


def test_add_edit_and_rm_keep_comments_outside_their_table(cli, mine):
    text = "# my map\n" + mine.read_text().replace(
        '[[sources]]\nid = "mooncake"', '# next\n[[sources]]\nid = "mooncake"'
    )
    text += "# the end\n"
    mine.write_text(text)
    assert cli("--catalog", str(mine), "add", *add_args("Zed")).code == 0
    assert cli("--catalog", str(mine), "edit", "mooncake", "--seam", "s").code == 0
    assert cli("--catalog", str(mine), "rm", "--yes", "zed").code == 0
    after = mine.read_text()
    assert after.startswith("# my map\n") and '# next\n[[sources]]\nid = "mooncake"' in after and "# the end\n" in after


# --- 6. export -o: the format from the extension, and what was written -----------------------------------


@pytest.mark.parametrize("name", formats.names_for(formats.CATALOG))
def test_export_infers_the_format_from_the_extension(cli, tmp_path, name):
    fmt = formats.BY_NAME[name]
    assert fmt.extensions  # every format export writes has a file name of its own
    target = tmp_path / f"map{fmt.extensions[0]}"
    result = cli("export", "-o", str(target))
    assert (result.code, result.out) == (0, f"Wrote {target}: 30 sources as {fmt.name}\n")
    assert target.read_text(encoding="utf-8") == cli("export", "--format", fmt.name).out


def test_export_warns_when_format_and_extension_disagree(cli, tmp_path):
    target = tmp_path / "map.bib"
    result = cli("export", "--format", "csv", "-o", str(target))
    assert result.code == 0 and result.err == f"warning: writing csv to {target}, a name that means bibtex\n"
    assert target.read_text().startswith("id,name,source,")
    plain = tmp_path / "map.txt"
    assert cli("export", "-o", str(plain)).out == f"Wrote {plain}: 30 sources as markdown\n"


# --- 7. fmt FILE, check FILE; problems by line and column -------------------------------------------------


def test_fmt_and_check_take_the_catalog_as_an_argument(cli, mine):
    assert cli("check", str(mine)).out == f"{mine}: ok, 2 sources\n"
    assert cli("fmt", "--check", str(mine)).out == f"{mine}: already canonical\n"
    for command in (["check", str(mine)], ["fmt", str(mine)]):
        both = cli("--catalog", str(mine), *command)
        assert (both.code, both.out) == (2, "")
        assert both.err == f"Error: give the catalog once: as {command[0]}'s PATH or with --catalog, not both\n"


def test_check_names_each_problem_by_line_and_column(cli, tmp_path):
    text = (
        (ASSETS / "mini.toml")
        .read_text()
        .replace('id = "mooncake"', 'id = "Bad Id"')
        .replace("year = 2023", 'year = "x"')
    )
    bad = tmp_path / "catalog.toml"
    bad.write_text(text)
    lines = text.splitlines()
    year, ident = lines.index('year = "x"') + 1, lines.index('id = "Bad Id"') + 1
    result = cli("check", str(bad))
    assert (result.code, result.err) == (
        3,
        f"Error: {bad} has 2 problems:\n"
        f"{bad}:{year}:1: source 1 (pagedattention): field 'year': expected an integer, got text 'x'\n"
        f"{bad}:{ident}:1: source 2 (Bad Id): field 'id': 'Bad Id' is not lowercase kebab-case such as 'llm-d'\n",
    )
    report = json.loads(cli("check", str(bad), "--json").out)
    assert [(d["line"], d["column"]) for d in report["details"]] == [(year, 1), (ident, 1)]
    assert [d["problem"] for d in report["details"]] == report["problems"]
    broken = tmp_path / "broken.toml"
    broken.write_text(text + "\n[[sources]]\nid = \n")
    at = len((text + "\n[[sources]]\nid = \n").splitlines())
    assert json.loads(cli("check", str(broken), "--json").out)["details"][0]["line"] == at


# --- 8. show has one shape in a pipe, whatever the number of names ----------------------------------------


def test_show_prints_blocks_of_field_tab_value_for_one_name_or_many(sh):
    def blocks(*names: str) -> list[dict[str, str]]:
        out = sh("show", *names, "--fields", "id,name,year").out
        return [dict(line.split("\t", 1) for line in block.splitlines()) for block in out.split("\n\n")]

    assert blocks("vllm") == [{"id": "vllm", "name": "vLLM", "year": "n.d."}]
    assert blocks("vllm", "sglang") == [
        {"id": "vllm", "name": "vLLM", "year": "n.d."},
        {"id": "sglang", "name": "SGLang", "year": "n.d."},
    ]


# --- 9. records: which file, and why not valid --------------------------------------------------------------


def test_records_show_the_file_and_why_a_record_is_not_valid(cli, tmp_path):
    folder = tmp_path / "experiments"
    for sub in ("a", "b"):
        (folder / sub).mkdir(parents=True)
        made = cli(
            "record", "new", "sarathi-serve", "--id", "sarathi-serve-2026-12-01", "-o", str(folder / sub / "x.json")
        )
        assert made.code == 0
    (folder / "broken.json").write_text("{bad")
    rows = [line.split("\t") for line in cli("records", str(folder)).out.splitlines()]
    assert [r[0] for r in rows] == [
        str(folder / "a" / "x.json"),
        str(folder / "b" / "x.json"),
        str(folder / "broken.json"),
    ]
    assert rows[2][4:6] == [
        "false",
        "invalid JSON: Expecting property name enclosed in double quotes (line 1, column 2)",
    ]
    assert rows[0][5] == "hypothesis still holds the draft's prompt (REPLACE: ...): write your own"
    listed = json.loads(cli("records", str(folder), "--json").out)
    assert listed[2]["problems"] == [rows[2][5]]


def test_record_check_says_a_value_is_missing(cli, tmp_path):
    record = json.loads(cli("record", "new", "sarathi-serve").out)
    record["raw_measurements"] = [{"name": "ttft p99", "unit": "ms", "evidence": "measured"}]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(record))
    result = cli("record", "check", str(path))
    assert f"{path}: raw_measurements[0].value is missing (a JSON number is required)" in result.err.splitlines()


# --- 10. narrow terminals say what they leave out; triage wraps its why lines -------------------------------


def test_a_narrow_list_names_the_columns_it_hides():
    lines = on_terminal(["list"], 60)
    footer = re.fullmatch(r"(.+) hidden at 60 columns; --fields to choose", lines[-1])
    assert footer, lines[-1]
    header = lines[0].split()
    hidden = footer.group(1).split(", ")
    assert hidden and all(h not in header for h in hidden)
    assert not any("hidden at" in line for line in on_terminal(["list", "--fields", "id,year"], 60))


def test_triage_wraps_why_lines_as_it_wraps_questions():
    lines = on_terminal(["triage", "requests are preempted because the KV cache is full"], 60)
    assert not any(line.rstrip().endswith("…") for line in lines)
    assert all(len(line.rstrip()) <= 60 for line in lines)
    assert "  why  requests are preempted or swapped out because the KV" in lines


# --- 11. long help goes through the pager; help never splits a URL or an option --------------------------


def test_long_help_is_paged_like_other_long_output(tmp_path):
    stand_in = tmp_path / "pager.sh"
    marker = tmp_path / "paged"
    stand_in.write_text(f"#!/bin/sh\ncat > '{marker}'\n")
    stand_in.chmod(0o755)
    for args in (["--help"], ["add", "--help"], []):
        screen(args, 80, env={"INVMAP_PAGER": str(stand_in)}, rows=40)
        assert marker.exists() and "Usage: invmap" in marker.read_text(), args
        marker.unlink()
    screen(["--help"], 80, env={"INVMAP_PAGER": str(stand_in)}, rows=200)  # fits: printed as it is
    screen(["--no-pager", "--help"], 80, env={"INVMAP_PAGER": str(stand_in)}, rows=40)
    assert not marker.exists()


@pytest.mark.parametrize("command", [c for c in decl.COMMANDS if c.name != "record"], ids=lambda c: c.path)
def test_help_never_splits_a_flag_or_a_link(command):
    text = "\n".join(on_terminal([*command.path.split(), "--help"], 80))  # as an 80-column terminal shows it
    words = set(text.split())
    for option in decl.options_of(command):
        assert any(w.startswith(option.flags[0]) for w in words), option.flags[0]
    for link in re.findall(r"https?://[^\s;]+", " ".join(o.help for o in decl.options_of(command))):  # `;` ends one
        assert link.rstrip(".") in text


# --- 12. small things ----------------------------------------------------------------------------------------


def test_a_url_is_searched_as_text(cli):
    result = cli("search", "https://docs.vllm.ai/", "--json")
    assert result.code == 0 and "vllm" in ids_of(result)
    assert cli("search", "http://foo", "--json").code == 0


def test_a_word_to_exclude_before_dashes_shows_where_to_put_it(sh):
    result = sh("search", "kv", "cache", "-survey")
    assert (result.code, result.out, result.err) == (
        2,
        "",
        "Error: no such option: -survey\nHint: exclude words after --: invmap search -- kv cache -survey\n",
    )
    assert sh("search", "--json", "--", "kv", "cache", "-survey").code == 0


def test_catalog_shipped_names_the_shipped_catalog(cli, tmp_path):
    assert cli("--catalog", "shipped", "list", "--json").out == cli("list", "--json").out
    assert json.loads(cli("--catalog", "shipped", "where", "--json").out)["reason"] == "--catalog shipped"


def test_fields_json_lists_every_field(cli):
    listed = json.loads(cli("fields", "--json").out)
    assert [f["name"] for f in listed][: len(FIELDS)] == [f.name for f in FIELDS]
    assert listed[0] == {
        "name": "id",
        "header": "ID",
        "kind": "text",
        "help": FIELDS[0].help,
        "stored": True,
        "sortable": True,
        "searchable": True,
    }


def test_diff_says_no_differences_at_a_terminal():
    assert on_terminal(["diff", "shipped", "shipped"], 80) == ["no differences"]


@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_search_in_takes_a_fields_label_as_show_prints_it(cli, field):
    from invmap.fields import FIELD_ALIASES

    label = HEADERS[field]
    by_name = cli("search", "--in", field, "cache", "--json").out
    assert cli("search", "--in", label, "cache", "--json").out == by_name
    assert cli("search", f"{label.split()[0].lower()}:cache", "--json").code in (0, 2)
    assert FIELD_ALIASES["".join(c for c in label.casefold() if c.isalnum())] == field


def test_where_names_the_seam_field(cli):
    assert (
        cli("search", "--in", "where", "scheduler", "--json").out
        == cli("search", "--in", "seam", "scheduler", "--json").out
    )
    assert ids_of(cli("search", "where:scheduler", "--json"))[0] == "sarathi-serve"


# --- 13. import derives short ids ----------------------------------------------------------------------------


def test_import_cuts_ids_at_a_word_boundary(cli, tmp_path):
    seed = (ASSETS / "seed.md").read_text(encoding="utf-8")
    rows = [line for line in seed.splitlines() if line.startswith("|")]
    long_row = rows[2].split("|")
    long_row[2] = " Fast Inference from Transformers via Speculative Decoding, Leviathan et al. "
    table = "\n".join([rows[0], rows[1], "|".join(long_row), "|".join(long_row)])
    result = cli("import", "-", input=table + "\n")
    assert result.code == 0, result.err
    ids = re.findall(r'(?m)^id = "(.*)"$', result.out)
    assert ids == ["fast-inference-from", "fast-inference-from-2"]
    assert all(len(i) <= MAX_ID for i in ids)
    out = tmp_path / "imported.toml"
    out.write_text(result.out)
    assert " id is " not in cli("check", str(out)).err  # (the long names are warned about, as they are)


# --- 14. a Markdown export says what it leaves out -------------------------------------------------------------


def test_markdown_export_names_the_fields_it_leaves_out(cli):
    result = cli("export", "--format", "markdown")
    kept = ("type", "source", "year", "layer", "mechanism", "objective", "question", "availability", "accessed")
    lost = [f.name for f in FIELDS if f.stored and f.name not in kept]
    assert result.err == (
        f"note: a Markdown export keeps the seed's nine columns and leaves out {', '.join(lost)}, layers, glossary "
        "('invmap import' derives id, name, authors, arXiv id and DOI from the Source cell again); "
        "--format toml or json keeps every field\n"
    )
    assert "code" not in cli("export", "--format", "markdown", "--links").err.split("leaves out ")[1].split(" (")[0]
    assert cli("export", "--format", "toml").err == ""


def test_docs_own_catalog_block_runs_as_written(tmp_path):
    """docs/catalogs.md's "Your own catalogs" block, as one shell session in an empty folder: every line succeeds
    (diff exits 1: the map differs), and the edit keeps vLLM's keywords."""
    readme = (REPO / "docs" / "catalogs.md").read_text(encoding="utf-8")
    block = re.search(r"## Your own catalogs\n.*?```sh\n(.*?)```", readme, re.S).group(1)
    commands = block.replace("\\\n", " ").splitlines()
    script = "".join(f'{line}\necho "== $?"\n' for line in commands if line.strip())
    env = {k: v for k, v in os.environ.items() if k != "INVMAP_CATALOG"}
    env["PATH"] = f"{Path(installed_invmap()).parent}:{env['PATH']}"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    statuses = re.findall(r"(?m)^== (\d+)$", done.stdout)
    assert statuses == ["0"] * (len(statuses) - 1) + ["1"], (done.stdout, done.stderr)
    assert [line.split()[1] for line in commands if line.strip()][-1] == "diff"
    listed = subprocess.run(
        [installed_invmap(), "--catalog", str(tmp_path / "my-map.toml"), "show", "vllm", "--json"],
        capture_output=True,
        text=True,
    )
    assert len(json.loads(listed.stdout)["keywords"]) == 12
