"""Hostile input: catalogs, arguments and environments that try to break or drive the terminal."""

from __future__ import annotations

import re

import pytest

from conftest import ASSETS, tab

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


def test_oversize_catalog_and_dev_zero(sh):
    result = sh("--catalog", "/dev/zero", "list", env={"INVMAP_MAX_CATALOG": "1M"})
    assert result.code == 3 and "larger than" in result.err and "Traceback" not in result.err


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
