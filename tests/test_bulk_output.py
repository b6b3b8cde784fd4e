"""Machine formats encoded a batch at a time (issue 47, scale): the bytes are exactly those of one
`json.dumps(record, ensure_ascii=False)` a record, across batch boundaries, for JSON and JSON lines."""

from __future__ import annotations

import json

from conftest import generated_catalog
from invmap.render import BATCH


def _catalog(tmp_path):
    path = generated_catalog(tmp_path / "big.toml", BATCH + 700, layers=True)
    text = path.read_text(encoding="utf-8")
    # Text beyond ASCII in a cell, so the escaping pass over a whole batch is exercised too.
    path.write_text(text.replace('mechanism = "', 'mechanism = "Déjà vu — ', 5), encoding="utf-8")
    return path


def test_json_and_jsonl_are_one_dumps_a_record(cli, tmp_path):
    path = _catalog(tmp_path)
    whole = cli("--catalog", str(path), "list", "--json")
    lines = cli("--catalog", str(path), "list", "--format", "jsonl")
    assert whole.code == 0 and lines.code == 0
    records = json.loads(whole.out)
    assert len(records) == BATCH + 700 and sum("Déjà vu — " in r["mechanism"] for r in records) == 5
    encoded = [json.dumps(r, ensure_ascii=False) for r in records]
    assert whole.out == "[\n" + ",\n".join(encoded) + "\n]\n"
    assert lines.out == "".join(e + "\n" for e in encoded)


def test_a_search_and_a_triage_in_jsonl_are_one_dumps_a_line(cli, tmp_path):
    path = _catalog(tmp_path)
    for args in (["search", "kv cache", "--limit", "50"], ["triage", "kv", "cache", "full"]):
        out = cli("--catalog", str(path), *args, "--format", "jsonl").out
        rows = [json.loads(line) for line in out.splitlines()]
        assert rows and out == "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def test_indented_json_is_json_dumps_with_indent_2(cli, tmp_path):
    """The one-document answers (`triage`, `show`, `check`) are written a scalar at a time by
    the C encoder: the bytes are still exactly `json.dumps(..., indent=2, ensure_ascii=False)`'s."""
    big = ["--catalog", str(_catalog(tmp_path))]
    for args in ([*big, "triage", "kv", "cache", "full"], ["show", "PagedAttention"], [*big, "check"]):
        result = cli(*args, "--json")
        data = json.loads(result.out)
        assert result.code == 0 and data
        assert result.out == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
