"""Property tests: generated catalogs and edits survive fmt, export and import; junk never crashes."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import tomli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from invmap import canonical, interchange, validation
from invmap.model import FORBIDDEN, Catalog
from invmap.vocabulary import SEED_COLUMNS

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Any text a catalog may hold (no control, separator or bidi-control characters: the model refuses
# them); cells of a Markdown table are single-line and stripped.
# Bidi marks, overrides and isolates, zero-width spaces, the word joiner and a BOM: catalog text
# may not hold them (model.FORBIDDEN); the joiners U+200C and U+200D it may.
_INVISIBLE = "\u061c\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff"
_REFUSED = re.compile(f"[{FORBIDDEN}]")  # the model's own set: a character it refuses is never drawn
clean = st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters=_INVISIBLE).filter(
    lambda c: not _REFUSED.match(c)
)
any_text = st.text(clean, min_size=1, max_size=40).filter(str.strip)
prose = st.text(st.one_of(clean, st.sampled_from("\n\t")), max_size=30)
cell_text = st.text(clean, min_size=1, max_size=40).map(lambda s: " ".join(s.split())).filter(bool)
labels = st.sampled_from(["L1", "L2 and L3", "L4 to L6", "Runtime lever", "P0 field guide", "L3 and L5", "Future map"])
years = st.one_of(st.none(), st.integers(1900, dt.date.today().year + 1))
dates = st.dates(dt.date(1990, 1, 1), dt.date(2030, 12, 31))


@st.composite
def catalogs(draw, text=any_text) -> Catalog:
    count = draw(st.integers(1, 5))
    sources = []
    for n in range(count):
        entry = {
            "id": f"s{n}-{draw(st.from_regex(r'[a-z0-9]{1,6}', fullmatch=True))}",
            "name": draw(text),
            "source": draw(text),
            "type": draw(text),
            "layer": draw(labels),
            "mechanism": draw(text),
            "objective": draw(text),
            "question": draw(text),
            "availability": draw(text),
            "accessed": draw(dates),
        }
        if (year := draw(years)) is not None:
            entry["year"] = year
        if draw(st.booleans()):
            entry["authors"] = draw(text)
        sources.append(entry)
    info = {
        "title": draw(text),
        "preface": draw(prose),
        "procedure": draw(st.lists(text, max_size=3)),
        "afterword": draw(prose),
    }
    return validation.validate({"catalog": info, "sources": sources}, "generated")


@SETTINGS
@given(catalogs())
def test_fmt_and_toml_export_are_fixed_points(cat):
    text = canonical.dumps(cat)
    reloaded = validation.validate(tomli.loads(text), "generated")
    assert reloaded == cat
    assert canonical.dumps(reloaded) == text


@SETTINGS
@given(catalogs(text=cell_text))
def test_markdown_export_import_keeps_the_nine_columns(cat):
    back = validation.validate(interchange.read_markdown(interchange.to_markdown(cat), "-"), "-")
    assert len(back.sources) == len(cat.sources)
    for before, after in zip(cat.sources, back.sources):
        for _, key in SEED_COLUMNS:
            assert getattr(after, key) == getattr(before, key)


@SETTINGS
@given(catalogs())
def test_records_read_from_the_index_are_the_models_records(cli, cat):
    """list, show and the record exports read the SQLite index; they give what the model says."""
    import json

    text = canonical.dumps(cat)
    expected = [s.to_dict() for s in cat.sources]
    assert json.loads(cli("-c", "-", "export", "--format", "json", input=text).out) == expected
    assert json.loads(cli("-c", "-", "list", "--json", input=text).out) == expected
    lines = cli("-c", "-", "list", "--format", "jsonl", "--reverse", input=text).out.splitlines()
    assert [json.loads(line) for line in lines] == expected[::-1]
    shown = json.loads(cli("-c", "-", "show", expected[-1]["id"], "--json", input=text).out)
    assert shown == {**expected[-1], "reports": []}  # show adds the reports naming it (none here)


@SETTINGS
@given(st.binary(max_size=300))
def test_any_bytes_as_a_catalog_exit_0_or_3(cli, data):
    result = cli("--catalog", "-", "check", input=data)
    assert result.code in (0, 3)
    assert "Traceback" not in result.err


@SETTINGS
@given(st.text(max_size=200))
def test_any_text_as_a_catalog_exit_0_or_3(cli, data):
    result = cli("--catalog", "-", "list", "--json", input=data)
    assert result.code in (0, 3)


@SETTINGS
@given(
    year=st.one_of(st.text(max_size=8), st.sampled_from(["1850", "3000", "n.d.", "2024..2025"])),
    layer=st.one_of(st.text(max_size=10), st.sampled_from(["L9", "L6 to L4", ""])),
    ident=st.one_of(st.text(max_size=10), st.sampled_from(["pagedattention", "Bad Id", "-x-"])),
    arxiv=st.one_of(st.text(max_size=10), st.sampled_from(["2407.00079", "abc"])),
)
def test_a_failing_add_never_changes_the_file(cli, tmp_path_factory, year, layer, ident, arxiv):
    folder: Path = tmp_path_factory.mktemp("add")
    target = folder / "c.toml"
    target.write_bytes((Path(__file__).parent / "assets" / "mini.toml").read_bytes())
    before = target.read_bytes()
    result = cli(
        "--catalog",
        str(target),
        "add",
        "--name",
        "N",
        "--source",
        "S",
        "--type",
        "Current",
        "--year",
        year,
        "--layer",
        layer,
        "--mechanism",
        "m",
        "--objective",
        "o",
        "--question",
        "q",
        "--availability",
        "a",
        "--id",
        ident,
        "--arxiv",
        arxiv,
    )
    assert result.code in (0, 2)
    if result.code != 0:
        assert target.read_bytes() == before
    else:
        assert target.read_bytes().startswith(before)
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) == ["c.toml"]


@SETTINGS
@given(st.text(max_size=40) | st.text(st.characters(max_codepoint=127), max_size=40))
def test_lookup_keys_ignore_case_spacing_and_punctuation_for_any_text(text):
    """The ASCII fast path of `normalize` gives what the general rule gives."""
    import re

    from invmap.text import normalize

    assert normalize(text) == re.sub(r"[\W_]+", "", text.casefold())
