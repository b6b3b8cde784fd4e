"""The English word list that corrections consult (issue 34, words: corrections that respect English):
a word is corrected only if it is neither in the index's vocabulary nor an ordinary English word.
`invmap.text.is_english` answers the second half from a list shipped in the package."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from importlib import metadata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import REPO
from invmap import text
from invmap.errors import FileAccessError

SHIPPED = REPO / "src" / "invmap" / "data" / text.ENGLISH_FILE


def builder():
    """scripts/build_english_words.py as a module (its constants; wordfreq is imported only to build)."""
    spec = importlib.util.spec_from_file_location("build_english_words", REPO / "scripts" / "build_english_words.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WORDS = SHIPPED.read_text(encoding="ascii").splitlines()[1:]
WORD_SET = frozenset(WORDS)


@pytest.mark.parametrize("word", ["claims", "arrive", "climbs", "loading", "prompts", "when", "Claims", "ARRIVE"])
def test_ordinary_words_are_english(word):
    assert text.is_english(word)


@pytest.mark.parametrize("word", ["cahce", "specualtive", "prefil", "evction", "", "3d", "p99", "-", "kv_cache"])
def test_typos_numbers_and_symbols_are_not(word):
    assert not text.is_english(word)


def test_compounds_are_english_when_every_part_is():
    assert text.is_english("well-known") and text.is_english("doesn't") and text.is_english("doesn\u2019t")
    assert text.is_english("head-of-line")
    assert not text.is_english("prefill-heavy") and not text.is_english("well-")


def test_the_shipped_list_is_what_the_script_writes():
    """Header, size and form as scripts/build_english_words.py declares them (rebuilding needs
    wordfreq itself: `python scripts/build_english_words.py --check`)."""
    build = builder()
    lines = SHIPPED.read_text(encoding="ascii").splitlines()
    assert lines[0] == build.HEADER
    assert len(WORDS) == build.WORDS == len(set(WORDS))
    assert WORDS == sorted(WORDS)
    assert all(re.fullmatch(r"[a-z]+", w) for w in WORDS)
    assert build.OUT == SHIPPED


def test_every_listed_word_is_found():
    found = text.english_text()
    assert all(text._listed(found, w) for w in WORDS)


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12))
def test_the_bisection_agrees_with_a_set(word):
    assert text._listed(text.english_text(), word) == (word in WORD_SET)


def test_a_missing_or_foreign_list_is_an_io_error(tmp_path):
    with pytest.raises(FileAccessError, match="cannot read invmap's English word list") as missing:
        text.read_english(str(tmp_path / "english.txt"))
    assert missing.value.exit_code == 4
    (tmp_path / "english.txt").write_text("the\nto\n", encoding="ascii")
    with pytest.raises(FileAccessError, match="not invmap's English word list"):
        text.read_english(str(tmp_path / "english.txt"))


def test_the_installed_package_finds_its_list(tmp_path):
    """The interpreter the tests run with, from a folder outside the repository, imports the installed
    invmap and reads the list from the package; installed from a wheel (as README's command and
    CI install it), the wheel's RECORD names the file."""
    code = (
        "import json, invmap.text as t; "
        "print(json.dumps([t.english_path(), t.is_english('climbs'), t.is_english('cahce')]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    path, climbs, cahce = json.loads(done.stdout)
    assert (climbs, cahce) == (True, False) and path.endswith("invmap/data/english.txt")
    dist = metadata.distribution("invmap")
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct.get("dir_info", {}).get("editable"):
        pytest.skip("an editable install reads src/ itself: the wheel's contents are checked on a plain install")
    assert "invmap/data/english.txt" in {str(f) for f in dist.files or []}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            b"kv\t1.5\nthe\t7.73\ncache\t4.1",
            {"kv": 1.5, "the": 7.73, "cache": 4.1, "KV": 1.5, "he": None},
        ),  # first, last
        (b"", {"the": None}),  # an empty list: every word weighs as rare
        (None, {"the": None}),  # no list at all: the same
    ],
)
def test_zipf_reads_every_line_of_the_frequency_list(tmp_path, monkeypatch, content, expected):
    from invmap import english

    path = tmp_path / "english-frequencies.txt"
    if content is not None:
        path.write_bytes(content)
    monkeypatch.setattr(english, "_LIST", path)
    monkeypatch.setattr(english, "_text", None)
    assert {word: english.zipf(word) for word in expected} == expected


def test_zipf_of_the_shipped_list():
    from invmap import english

    lines = [line.split("\t") for line in english._LIST.read_text(encoding="utf-8").splitlines()]
    entries = [(word, float(value)) for word, value in (line for line in lines if len(line) == 2)]
    assert len(entries) > 50_000
    assert all(english.zipf(word) == value for word, value in entries)
    assert english.zipf("specualtive") is None
