"""`list`'s JSON written by the index (issue 47, scale): SQLite's json_quote writes each record, and
Python only the records it cannot write byte for byte. Either way a line is exactly
`json.dumps(record, ensure_ascii=False)`, with the terminal-safe escapes, whatever the cells hold."""

from __future__ import annotations

import json

from conftest import source_toml
from invmap.safe import json_safe

# Cells SQL must write as Python does: quotes, backslashes (in a list item too, where a `\u001f`
# typed as text must not read as the items' separator), text beyond ASCII, a table of places, and a
# source without a year (a catalog refuses control characters in its cells).
_TRICKY = [
    ("plain", 2024, ""),
    ("quoted", 2023, 'keywords = ["say \\"hi\\"", "a/b c"]\n'),
    ("slashed", 2022, 'keywords = ["back\\\\slash", "typed \\\\u001f text", "x"]\n'),
    ("yearless", None, 'keywords = ["one", "two"]\n'),
    ("wide", 2021, 'title = "Déjà vu — 東京 🙂"\nkeywords = ["ü", "ß"]\n'),
    (
        "placed",
        2020,
        'code = "https://github.com/a/b"\nplaces = [{ path = "a/b.py", symbol = "F", note = "n", commit = "01b8c31da30a7e1109451df2b4b4698946c6c35c" }]\n',
    ),
]


def _catalog(tmp_path):
    text = "".join(source_toml(ident, year=year, layer="L3 and L5", extra=extra) for ident, year, extra in _TRICKY)
    path = tmp_path / "tricky.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_record_is_one_dumps_whichever_writes_it(cli, tmp_path):
    path = _catalog(tmp_path)
    whole = cli("--catalog", str(path), "list", "--json")
    lines = cli("--catalog", str(path), "list", "--format", "jsonl")
    assert whole.code == 0 and lines.code == 0, whole.err
    records = json.loads(whole.out)
    assert [r["id"] for r in records] == [ident for ident, _, _ in _TRICKY]
    by_id = {r["id"]: r for r in records}
    assert by_id["slashed"]["keywords"] == ["back\\slash", "typed \\u001f text", "x"]
    assert by_id["quoted"]["keywords"] == ['say "hi"', "a/b c"]
    assert by_id["wide"]["keywords"] == ["ü", "ß"] and by_id["yearless"]["year"] is None
    assert by_id["placed"]["places"][0]["path"] == "a/b.py" and by_id["plain"]["layers"] == ["L3", "L5"]
    encoded = [json_safe(json.dumps(r, ensure_ascii=False)) for r in records]
    assert whole.out == "[\n" + ",\n".join(encoded) + "\n]\n"
    assert lines.out == "".join(e + "\n" for e in encoded)


def test_chosen_fields_in_any_order_are_written_the_same(cli, tmp_path):
    path = _catalog(tmp_path)
    fields = ["year", "places", "keywords", "id", "layers", "title"]
    out = cli("--catalog", str(path), "list", "--format", "jsonl", "--fields", ",".join(fields))
    assert out.code == 0, out.err
    rows = [json.loads(line) for line in out.out.splitlines()]
    assert [list(r) for r in rows] == [fields] * len(_TRICKY)
    assert out.out == "".join(json_safe(json.dumps(r, ensure_ascii=False)) + "\n" for r in rows)
