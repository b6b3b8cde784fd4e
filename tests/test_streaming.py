"""Large catalogs: validated in chunks, parsed safely, streamed a batch at a time."""

from __future__ import annotations

import json

import pytest

from conftest import generated_catalog


def test_chunked_validation_reports_exactly_what_one_pass_does(monkeypatch):
    import tomli

    from invmap import catalog as catalog_io
    from invmap import validation

    shipped = tomli.loads(catalog_io.shipped_path().read_text(encoding="utf-8"))
    sources = [dict(s, id=f"{s['id']}-{n}") for n in range(3) for s in shipped["sources"]]
    sources[40] = dict(sources[40], year="2023")
    sources[70] = dict(sources[70], id=sources[2]["id"])
    del sources[55]["mechanism"]
    found = []
    for chunk in (7, 10**9):
        monkeypatch.setattr(validation, "VALIDATE_CHUNK", chunk)
        with pytest.raises(catalog_io.CatalogError) as caught:
            validation.validate({"layers": {"L9": "x"}, "sources": [dict(s) for s in sources]}, "t")
        found.append(caught.value.problems)
    assert found[0] == found[1] and len(found[0]) == 4
    monkeypatch.setattr(validation, "VALIDATE_CHUNK", 7)
    good = validation.validate({"sources": [dict(s) for s in sources[:30]]}, "t")
    assert [s.id for s in good.sources] == [s["id"] for s in sources[:30]]


def test_fast_parser_agrees_with_tomli_and_never_sees_deep_nesting():
    import tomli

    from invmap import catalog as catalog_io
    from invmap import reading

    text = catalog_io.shipped_path().read_text(encoding="utf-8")
    assert reading._cannot_nest_deeply(text)
    assert reading.parse_text(text, "t") == tomli.loads(text)
    deep = "x = " + "[" * 100_000 + "]" * 100_000
    assert not reading._cannot_nest_deeply(deep)
    disguised = "[[sources]]\n" * 3 + "x = " + "[" * 300 + "]" * 300
    assert not reading._cannot_nest_deeply(disguised)


def test_machine_formats_stream_large_results_whole(sh, tmp_path):
    import csv
    import io

    path = generated_catalog(tmp_path / "gen.toml", 4500)
    records = json.loads(sh("--catalog", str(path), "list", "--json").out)
    assert len(records) == 4500 and len({r["id"] for r in records}) == 4500
    lines = sh("--catalog", str(path), "list", "--format", "jsonl").out.splitlines()
    assert [json.loads(line) for line in lines] == records
    rows = list(csv.reader(io.StringIO(sh("--catalog", str(path), "list", "--format", "csv").out)))
    assert len(rows) == 4501 and [r[0] for r in rows[1:]] == [r["id"] for r in records]
    assert len(sh("--catalog", str(path), "list", "--format", "plain").out.splitlines()) == 4500


def test_selections_are_read_a_batch_at_a_time_and_sort_as_whole_records_do(tmp_path, monkeypatch):
    """list, questions and the record exports hold only positions and the sort key; the records
    come from the index in batches, in exactly the order sorting the whole records gives."""
    from invmap import query, render
    from invmap.catalog import Location
    from invmap.index import Index, open_catalog

    path = generated_catalog(tmp_path / "gen.toml", 4500)
    idx = open_catalog(Location(str(path), "test"))
    every = query.build_filters(idx, {})
    l3 = query.build_filters(idx, {"layer": ["L3"]})
    for chosen in (every, l3):
        for key in (None, *query.SORT_KEYS):
            for reverse in (False, True):
                whole = query.sort_records(query.records_matching(idx, chosen), key, reverse)[:3000]
                lazy = query.lazy_selection(idx, chosen, sort=key, reverse=reverse, limit=3000)
                assert list(lazy) == whole, (key, reverse)
    for name, fmt in (("at", "csv"), ("json_at", "json")):  # JSON is written by the index itself
        reads: list[int] = []
        read = getattr(Index, name)
        monkeypatch.setattr(
            Index,
            name,
            lambda self, positions, columns, read=read, reads=reads: (
                reads.append(len(positions)) or read(self, positions, columns)
            ),
        )
        result = render.Result(query.lazy_selection(idx, every), list(query.SOURCE_FIELDS))
        text = render.text(result, fmt, "records")
        assert text.count("\n") >= 4500 and (fmt != "json" or len(json.loads(text)) == 4500)
        first = 1 if fmt == "csv" else 0  # +1: the first record's keys, read to see if rows need projecting
        assert sum(reads) == 4500 + first and max(reads) <= render.BATCH and len(reads) >= 3, fmt


def _streamed_and_whole(monkeypatch, path):
    """The catalog at `path` loaded a chunk of tables at a time (7 a chunk) and as one table."""
    from invmap import catalog as catalog_io
    from invmap import validation as validation_io

    monkeypatch.setattr(validation_io, "VALIDATE_CHUNK", 7)
    monkeypatch.setattr(validation_io, "STREAM_FROM", 20)
    out = []
    for streamed in (True, False):
        if not streamed:
            monkeypatch.setattr(validation_io, "STREAM_FROM", 10**9)
        try:
            validation, _ = catalog_io.stream_with_bases(str(path))
            assert isinstance(validation, catalog_io.StreamedValidation) is streamed
            for _ in validation.chunks():
                pass
            out.append(validation.catalog())
        except catalog_io.CatalogError as exc:
            out.append(exc.problems)
    return out


# `layers`: the shipped levels and reports first, a head with wide characters (CJK report titles)
# before ASCII tables, which the streamed path keeps apart.
@pytest.mark.parametrize("layers", [False, True])
def test_a_catalog_parsed_a_chunk_at_a_time_is_the_same_catalog(monkeypatch, tmp_path, layers):
    path = generated_catalog(tmp_path / "g.toml", 60, layers=layers)
    streamed, whole = _streamed_and_whole(monkeypatch, path)
    assert streamed == whole and len(streamed.sources) == 60 and (len(streamed.reports) > 0) is layers


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t.replace("year = ", 'year = "', 1).replace("\nlayer", '"\nlayer', 1),  # a wrong type, first chunk
        lambda t: t[: t.rindex("mechanism =")] + t[t.rindex("objective =") :],  # a field missing, last chunk
        lambda t: (
            t + t[(at := t.index("[[sources]]")) : t.index("[[sources]]", at + 1)]
        ),  # a duplicate id, across chunks
        lambda t: t + '\n[[sources]]\nname = """unfinished\n',  # a string left open
    ],
)
@pytest.mark.parametrize("layers", [False, True])
def test_any_problem_is_reported_exactly_as_one_pass_reports_it(monkeypatch, tmp_path, damage, layers):
    path = generated_catalog(tmp_path / "g.toml", 60, layers=layers)
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    streamed, whole = _streamed_and_whole(monkeypatch, path)
    assert isinstance(whole, list) and streamed == whole


def test_a_header_only_looking_like_one_never_cuts_a_source(monkeypatch, tmp_path):
    path = generated_catalog(tmp_path / "g.toml", 60)
    text = path.read_text(encoding="utf-8")
    at = [i for i in range(len(text)) if text.startswith("[[sources]]", i)][15]
    tricky = text[:at] + text[at:].replace('mechanism = "', 'mechanism = """\n[[sources]]\n', 1).replace(
        '."\nobjective', '."""\nobjective', 1
    )
    path.write_text(tricky, encoding="utf-8")
    from invmap import catalog as catalog_io
    from invmap import validation

    monkeypatch.setattr(validation, "VALIDATE_CHUNK", 7)
    monkeypatch.setattr(validation, "STREAM_FROM", 20)
    with pytest.raises(catalog_io.CatalogError) as caught:  # a newline is not allowed in a cell anyway
        catalog_io.load(str(path))
    assert "control character U+000A" in " ".join(caught.value.problems)


def test_a_table_after_the_sources_is_read_whole(monkeypatch, tmp_path):
    path = generated_catalog(tmp_path / "g.toml", 60)
    path.write_text(path.read_text(encoding="utf-8") + '\n[layers.L3]\ntitle = "Cache"\n', encoding="utf-8")
    from invmap import catalog as catalog_io
    from invmap import validation

    monkeypatch.setattr(validation, "STREAM_FROM", 20)
    validation, _ = catalog_io.stream_with_bases(str(path))
    assert not isinstance(validation, catalog_io.StreamedValidation)
