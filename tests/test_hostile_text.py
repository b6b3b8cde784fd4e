"""Hostile text: URLs that would break a .bib file, characters that hide text, a year of 5,000
digits, Click's own messages quoting what was typed, URLs that Markdown would cut short, a query
said ten thousand times, a BOM on stdin."""

from __future__ import annotations

import json
import re
import time

import pytest

from conftest import ASSETS

MINI = (ASSETS / "mini.toml").read_text(encoding="utf-8")
ONE = """[[sources]]
id = "{id}"
name = "{name}"
source = "{name}"
type = "Current"
year = {year}
layer = "L2"
mechanism = "{mechanism}"
objective = "o"
question = "q"
availability = "a"
accessed = 2026-08-07
{extra}
"""


def _catalog(tmp_path, *, name="one", year="2024", mechanism="m", extra="", count=1):
    path = tmp_path / f"{name}.toml"
    text = "".join(
        ONE.format(id=f"s{n}", name=f"S{n}", year=year, mechanism=mechanism, extra=extra) for n in range(count)
    )
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "url",
    [
        "https://x.test/a}\\\\input{/etc/passwd}{",
        "https://x.test/{\\\\immediate\\\\write18{touch x}}",
        "https://x.test/a{b}",
        "https://x.test/a\\\\b",
    ],
)
@pytest.mark.parametrize("field", ["url", "code"])
def test_check_refuses_braces_and_backslashes_in_urls(sh, tmp_path, field, url):
    path = _catalog(tmp_path, extra=f'{field} = "{url}"')
    result = sh("--catalog", str(path), "check")
    assert result.code == 3
    assert f"field '{field}'" in result.err
    assert "is not an absolute http(s) URL without spaces, braces or backslashes (percent-encode them" in result.err


def test_bibtex_export_escapes_what_a_link_carries(cli, tmp_path):
    """A DOI may hold braces (DOIs are nearly free text): its derived link percent-encodes them in the
    .bib, the doi field escapes them, and pybtex reads the file back whole."""
    from pybtex.database import parse_string

    path = _catalog(tmp_path, extra='doi = "10.1234/a}\\\\input{/etc/passwd}{"')
    assert cli("--catalog", str(path), "check").code == 0
    text = cli("--catalog", str(path), "export", "--format", "bibtex").out
    fields = parse_string(text, "bibtex").entries["s0"].fields
    link = fields.get("url") or fields["howpublished"]  # a @misc carries its link once, in howpublished
    assert "https://doi.org/10.1234/a%7D%5Cinput%7B/etc/passwd%7D%7B" in link
    assert "\\input{" not in text.replace("\\textbackslash{}input", "")


HIDDEN = ["\U000e0020", "\U000e0041", "\U000e007f", "\u2061", "\u2064", "\u206a", "\u206f", "\u180e"]


@pytest.mark.parametrize("char", HIDDEN, ids=lambda c: f"U+{ord(c):04X}")
def test_text_hiding_characters_are_refused_and_escaped(sh, tmp_path, char):
    path = _catalog(tmp_path, mechanism=f"looks fine{char}hidden")
    result = sh("--catalog", str(path), "check")
    assert result.code == 3 and f"field 'mechanism': contains the control character U+{ord(char):04X}" in result.err
    assert char not in result.out + result.err
    for fmt in ("plain", "json"):
        shown = sh("show", f"x{char}y", "--format", fmt)
        assert shown.code == 1 and char not in shown.out + shown.err
    escaped = f"\\U{ord(char):08x}" if ord(char) > 0xFFFF else f"\\u{ord(char):04x}"
    assert escaped in sh("show", f"x{char}y").err


def test_a_year_of_5000_digits_is_an_invalid_catalog(sh, tmp_path):
    path = _catalog(tmp_path, year="1" + "0" * 5000)
    for args, where in ((["check"], ":6:1"), (["list"], "")):  # check names the line and column
        result = sh("--catalog", str(path), *args)
        assert (result.code, result.out) == (3, ""), result.err[-300:]
        assert result.err == (
            f"Error: {path}{where}: source 1 (s0): field 'year': implausible year of about 5,000 digits "
            "(expected 1900 to 2027, or leave it out for n.d.)\n"
        )


@pytest.mark.parametrize(
    "args, message",
    [
        (["where", "x\u202e\u2066\u200b"], "Error: Got unexpected extra argument(s) (x\\u202e\\u2066\\u200b)"),
        (["list", "--x\u202e"], "Error: No such option: --x\\u202e"),
        (["\u202eabc"], "Error: No such command '\\u202eabc'."),
        (["list", "--color", "x\u2066"], "Error: Invalid value for '--color'"),
    ],
)
def test_clicks_own_messages_are_escaped(sh, args, message):
    for env in ({}, {"INVMAP_TYPER_SHORTCUTS": "0"}):
        result = sh(*args, env=env)
        assert result.code == 2 and message in result.err, result.err
        assert not re.search("[\u202a-\u202e\u2066-\u2069\u200b]", result.err)


URLS = [
    "https://x.test/a)b",
    "https://x.test/(a)",
    "https://x.test/a|b",
    "https://x.test/a]b",
    "https://x.test/a<b>c",
    "https://x.test/a`b",
    "https://x.test/a%5Db",
    "https://x.test/a&amp;b",
    "https://x.test/a*b_c_?d=1&e=2#f",
]


def test_markdown_round_trip_keeps_every_url(cli, tmp_path):
    text = "".join(
        ONE.format(id=f"s{n}", name=f"S{n}", year=2024, mechanism="m", extra=f"url = {json.dumps(u)}")
        for n, u in enumerate(URLS)
    )
    path = tmp_path / "urls.toml"
    path.write_text(text, encoding="utf-8")
    assert cli("--catalog", str(path), "check").code == 0
    markdown = cli("--catalog", str(path), "export", "--format", "markdown", "--links").out
    back = tmp_path / "back.toml"
    result = cli("import", "-", "-o", str(back), input=markdown)
    assert result.code == 0, result.err
    records = json.loads(cli("--catalog", str(back), "list", "--json").out)
    assert [r["url"] for r in records] == URLS


@pytest.mark.parametrize("command, word", [("search", "kv"), ("triage", "eviction"), ("search", "KV cache")])
def test_a_word_said_ten_thousand_times_costs_what_it_costs_once(sh, command, word):
    once = sh(command, word)
    started = time.monotonic()
    many = sh(command, *[word] * 10_000)
    took = time.monotonic() - started
    assert (many.code, many.out) == (once.code, once.out) and once.code == 0
    assert took < 5


def test_diff_reads_markdown_with_a_bom_on_stdin_as_it_reads_the_file(cli, tmp_path):
    markdown = cli("export", "--format", "markdown").out
    path = tmp_path / "map.md"
    path.write_text("\ufeff" + markdown, encoding="utf-8")
    by_path = cli("diff", str(path), str(path))
    on_stdin = cli("diff", str(path), "-", input="\ufeff" + markdown)
    assert (on_stdin.code, on_stdin.out, on_stdin.err) == (by_path.code, by_path.out, by_path.err) == (0, "", "")
