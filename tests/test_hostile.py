"""Hostile input: catalogs, arguments and environments that try to break or drive the terminal."""

from __future__ import annotations

import re

import pytest

from conftest import ASSETS, tab
from invmap import formats
from invmap.filters import FILTERS

HOSTILE = ASSETS / "hostile"
MINI_SOURCES = "\n".join(
    line for line in (ASSETS / "mini.toml").read_text(encoding="utf-8").split("[[sources]]", 1)[1:]
)


@pytest.mark.parametrize("name", ["osc_title.toml", "clear_screen.toml", "bidi.toml", "bare_cr.toml"])
def test_hostile_catalogs_are_refused_and_never_echoed_raw(sh, name):
    result = sh("--catalog", str(HOSTILE / name), "check")
    assert result.code == 3
    assert "contains the control character U+" in result.err
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", result.out + result.err)


@pytest.mark.parametrize("name", ["nested.toml", "dotted.toml"])
def test_absurd_nesting_is_a_clean_error(sh, name):
    result = sh("--catalog", str(HOSTILE / name), "list")
    assert result.code == 3 and "Traceback" not in result.err


def test_hostile_argument_is_escaped(sh):
    result = sh("show", "\x1b]0;pwned\x07")
    assert result.code == 1 and "\x1b" not in result.err and "\\x1b]0;pwned\\x07" in result.err


def test_oversize_catalog_and_dev_zero(sh, tmp_path):
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (2**20 + 1))
    result = sh("--catalog", str(big), "list", env={"INVMAP_MAX_CATALOG": "1M"})
    assert result.code == 3 and "larger than" in result.err and "Traceback" not in result.err
    result = sh("--catalog", "/dev/zero", "list")  # not a regular file: refused before a byte is read
    assert (result.code, result.err) == (
        4,
        "Error: cannot read /dev/zero: it is a character device, not a regular file\n",
    )


def test_malformed_completion_environment_is_silent(tmp_path):
    for cword in ("abc", "-5", "1.5"):
        done = tab("invmap show", cword)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_check_warns_about_long_ids(sh, tmp_path):
    path = tmp_path / "long.toml"
    path.write_text(
        "[[sources]]\n" + MINI_SOURCES.replace('id = "mooncake"', 'id = "a-very-long-identifier-for-mooncake"'),
        encoding="utf-8",
    )
    result = sh("--catalog", str(path), "check")
    assert result.code == 0 and "warning:" in result.err and "at most 24" in result.err
    assert result.out == f"{path}: ok, 2 sources\n"


@pytest.mark.parametrize(
    "link", ["javascript:alert(1)", "file:///etc/passwd", "https://exa mple.org/", "ftp://x.org/a"]
)
def test_check_refuses_links_that_are_not_http(sh, tmp_path, link):
    path = tmp_path / "c.toml"
    path.write_text(
        "[[sources]]\n" + MINI_SOURCES.replace('source = "Mooncake', f'code = "{link}"\nsource = "Mooncake', 1),
        encoding="utf-8",
    )
    result = sh("--catalog", str(path), "check")
    assert result.code == 3 and "field 'code'" in result.err and "http(s) URL" in result.err


def test_tab_never_reads_devices_or_stdin():
    for catalog in ("/dev/zero", "-"):
        done = tab(f"invmap -c {catalog} show ")
        assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "", ""), catalog


RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069]")


def _hostile_records(cli, folder):
    import json

    folder.mkdir()
    draft = json.loads(cli("record", "new", "mooncake", "--id", "evil\x1b[31m\x9b\u202e").out)
    (folder / "f\x1b]0;x\x07.json").write_text(json.dumps(draft))
    return folder


@pytest.mark.parametrize("fmt", formats.names_for(formats.RECORDS))
def test_record_text_and_file_names_never_reach_stdout_raw(cli, sh, tmp_path, fmt):
    folder = _hostile_records(cli, tmp_path / "ex")
    for result in (
        sh("records", str(folder), "--format", fmt),
        sh("questions", "--records", str(folder), "--format", fmt),
    ):
        assert result.code == 0 and not RAW.search(result.out + result.err), (fmt, result.out[:300])
    if not formats.BY_NAME[fmt].escapes:  # shown escaped by the way out (safe.data_text)
        assert "evil\\x1b[31m\\x9b\\u202e" in sh("records", str(folder), "--format", fmt).out


def test_json_writes_every_control_as_an_escape_of_the_same_string(cli, sh, tmp_path):
    import json

    folder = _hostile_records(cli, tmp_path / "ex")
    out = sh("records", str(folder), "--json").out
    assert not RAW.search(out) and "\\u009b" in out and "\\u202e" in out
    assert json.loads(out)[0]["record_id"] == "evil\x1b[31m\x9b\u202e"


def test_record_new_names_a_hostile_file_escaped(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("record", "new", "pagedattention", "-o", "\x1b]0;PWNED\x07.json")
    assert result.code == 0 and not RAW.search(result.out + result.err)
    assert (tmp_path / "\x1b]0;PWNED\x07.json").is_file()


def test_records_walk_skips_what_is_not_a_file_and_never_recurses(cli, sh, tmp_path):
    import json
    import os

    folder = tmp_path / "ex"
    folder.mkdir()
    os.mkfifo(folder / "x.json")
    (folder / "z.json").symlink_to("/dev/zero")
    deep = folder
    os.chdir(folder)  # 1,100 nested folders, made one step at a time (the path outgrows PATH_MAX)
    for _ in range(1100):
        os.mkdir("d")
        os.chdir("d")
    (tmp_path / "ok.json").write_text(json.dumps({"schema_version": "1.0"}))
    os.rename(tmp_path / "ok.json", "deep.json")
    os.chdir(tmp_path)
    try:
        result = sh("records", str(deep), "--json")
        assert result.code == 0 and "Traceback" not in result.err, result.err[-500:]
        assert f"note: skipped {folder / 'x.json'}: not a regular file" in result.err
        assert f"note: skipped {folder / 'z.json'}: not a regular file" in result.err
        listed = json.loads(result.out)
        assert [r["valid"] for r in listed] == [False] and listed[0]["path"].endswith("/d/deep.json")
    finally:
        _remove_deep(folder)


def _remove_deep(folder):
    """Remove the nested folders one level at a time (shutil.rmtree would recurse past Python's limit,
    as pytest's own clean-up of old temporary folders would)."""
    import os

    os.chdir(folder)
    depth = 0
    while os.path.isdir("d"):
        os.chdir("d")
        depth += 1
    for name in os.listdir("."):
        os.unlink(name)
    for _ in range(depth):
        os.chdir("..")
        os.rmdir("d")
    os.chdir(folder.parent)


def test_record_check_of_an_endless_file_stops_at_the_cap(sh):
    result = sh("record", "check", "/dev/zero", env={"INVMAP_MAX_RECORD": "1M"})
    assert (
        result.code == 3
        and result.err == "/dev/zero: larger than 1,048,576 bytes ($INVMAP_MAX_RECORD sets the limit)\n"
    )


@pytest.mark.parametrize("option, value", [(o.flags[0], o.example) for o in FILTERS if o.kind != "flag"])
def test_a_thousand_filter_values_are_one(cli, option, value):
    import json

    many = json.loads(cli("list", option, ",".join([value] * 999), "--json").out)
    assert many == json.loads(cli("list", option, value, "--json").out) and many


def test_many_distinct_filter_values_are_bound_not_nested(cli):
    import json

    years = ",".join(str(y) for y in range(1000, 3000))
    dated = [r for r in json.loads(cli("list", "--json").out) if r["year"] is not None]
    assert json.loads(cli("list", "--year", years, "--json").out) == dated


def test_markdown_cells_keep_link_syntax_through_export_and_import(cli, tmp_path, mine):
    import json

    text = mine.read_text(encoding="utf-8").replace(
        'mechanism = "Map logical KV blocks to physical blocks."',
        'mechanism = "See [the paper](https://x.org), *not* `this` & <b>that</b> [x]."',
    )
    mine.write_text(text, encoding="utf-8")
    exported = tmp_path / "map.md"
    assert cli("--catalog", str(mine), "export", "--format", "markdown", "-o", str(exported)).code == 0
    back = tmp_path / "back.toml"
    assert cli("import", str(exported), "-o", str(back)).code == 0
    records = {r["id"]: r for r in json.loads(cli("--catalog", str(back), "list", "--json").out)}
    assert records["pagedattention"]["mechanism"] == "See [the paper](https://x.org), *not* `this` & <b>that</b> [x]."


def test_markdown_link_parsing_is_linear(cli, tmp_path):
    import time

    import tomli

    from invmap.vocabulary import SEED_COLUMNS

    cell = "[" * 30000 + "](" * 30000
    row = {"type": "Current", "source": cell, "year": "2024", "layer": "L3", "mechanism": "m", "objective": "o"}
    row |= {"question": "q", "availability": "a", "accessed": "2026-08-07"}
    document = "| " + " | ".join(header for header, _ in SEED_COLUMNS) + " |\n"
    document += "|" + "---|" * len(SEED_COLUMNS) + "\n"
    document += "| " + " | ".join(row[key] for _, key in SEED_COLUMNS) + " |\n"
    path = tmp_path / "deep.md"
    path.write_text(document, encoding="utf-8")
    started = time.monotonic()
    result = cli("import", str(path))
    assert time.monotonic() - started < 10
    assert result.code == 0, result.err
    assert tomli.loads(result.out)["sources"][0]["source"] == cell  # no link in it: the text as written


@pytest.mark.parametrize("char", ["\u200e", "\u200f", "\u061c", "\u200b", "\u2060", "\ufeff"])
def test_invisible_marks_are_refused_in_catalog_text_and_shown_escaped(cli, mine, char):
    text = mine.read_text(encoding="utf-8").replace('name = "PagedAttention"', f'name = "Paged{char}Attention"')
    mine.write_text(text, encoding="utf-8")
    result = cli("--catalog", str(mine), "check")
    assert result.code == 3 and f"contains the control character U+{ord(char):04X}" in result.err
    assert char not in result.err


def test_joiners_that_scripts_need_stay_allowed(cli, mine):
    text = mine.read_text(encoding="utf-8").replace('name = "PagedAttention"', 'name = "می\u200cخواهم"')
    mine.write_text(text, encoding="utf-8")
    assert cli("--catalog", str(mine), "check").code == 0
