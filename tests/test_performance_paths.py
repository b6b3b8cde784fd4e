"""What keeps invmap fast, checked as behaviour (timings live in benchmarks/run.py, not here):
the light command paths import no rich tables or rapidfuzz, and the parsed-catalog cache is used
when fresh and ignored when stale, corrupt or from another version, with identical results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ASSETS
from invmap import cache, query
from invmap import catalog as catalog_io

PROBE = """
import sys
from invmap.cli import app
try:
    app(prog_name="invmap", args=sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("rich", "rapidfuzz"))
print(",".join(heavy), file=sys.stderr)
"""


def heavy_modules(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True)
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    return [m for m in last.split(",") if m]


@pytest.mark.parametrize("args", [
    ["list", "--layer", "L3", "--json"], ["--version"], ["--help"], ["list", "--help"],
    ["questions", "--layer", "L5", "--json"], ["show", "pagedattention", "--json"], ["list", "--format", "csv"],
])  # fmt: skip
def test_light_paths_import_no_rich_or_rapidfuzz(args):
    assert heavy_modules(*args) == []


def test_heavy_paths_do_import_what_they_need():
    assert any(m.startswith("rapidfuzz") for m in heavy_modules("search", "kv", "--json"))
    assert any(m.startswith("rich") for m in heavy_modules("list", "--format", "table"))


def test_version_and_help_skip_the_models():
    probe = "import sys\nfrom invmap.cli import app\ntry:\n    app(prog_name='invmap', args=sys.argv[1:])\nexcept SystemExit:\n    pass\nprint('invmap.model' in sys.modules, file=sys.stderr)"
    for args in (["--version"], ["--help"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True)
        assert done.stderr.strip().splitlines()[-1] == "False"


# --- the parsed-catalog cache ----------------------------------------------------------------------


@pytest.fixture
def mine(tmp_path) -> Path:
    path = tmp_path / "mine.toml"
    shutil.copy(ASSETS / "mini.toml", path)
    return path


def entries(cache_home: Path) -> list[str]:
    return sorted(p.name.split("-")[0] for p in (cache_home / "invmap").glob("*.marshal"))


def test_cache_is_written_and_used_when_fresh(mine, isolated, monkeypatch):
    first = catalog_io.load(str(mine))
    assert entries(isolated) == ["catalog", "index"]

    def no_parsing(*args, **kwargs):
        raise AssertionError("a fresh cache must not be parsed again")

    monkeypatch.setattr(catalog_io, "parse", no_parsing)
    assert catalog_io.load(str(mine)) == first


def test_stale_cache_is_ignored(mine, isolated):
    catalog_io.load(str(mine))
    mine.write_text(mine.read_text(encoding="utf-8").replace("Mooncake", "Moonshot"), encoding="utf-8")
    os.utime(mine, ns=(1, 1))
    assert [s.name for s in catalog_io.load(str(mine)).sources] == ["PagedAttention", "Moonshot"]


@pytest.mark.parametrize("junk", [b"", b"garbage", b"\xff" * 64, __import__("marshal").dumps({"key": 1, "data": 2})])
def test_corrupt_cache_is_ignored(mine, isolated, junk):
    expected = catalog_io.load(str(mine))
    for entry in (isolated / "invmap").glob("*.marshal"):
        entry.write_bytes(junk)
    assert catalog_io.load(str(mine)) == expected


def test_well_keyed_but_malformed_entry_is_ignored(mine, isolated):
    import marshal

    expected = catalog_io.load(str(mine))
    key = cache.key_of(str(mine))
    target = next((isolated / "invmap").glob("catalog-*.marshal"))
    target.write_bytes(marshal.dumps({"key": cache._marshalable(key), "data": {"sources": [[1, 2]]}}))
    assert catalog_io.load(str(mine)) == expected


def test_cache_from_another_version_is_ignored(mine, isolated, monkeypatch):
    catalog_io.load(str(mine))
    monkeypatch.setattr(cache, "__version__", "999.0")
    calls = []
    real_parse = catalog_io.parse
    monkeypatch.setattr(catalog_io, "parse", lambda *a: calls.append(1) or real_parse(*a))
    catalog_io.load(str(mine))
    assert calls == [1]


def test_results_identical_with_and_without_cache(sh, mine):
    args = ["--catalog", str(mine), "list", "--json"]
    cold = sh(*args, env={"INVMAP_NO_CACHE": "1"}).out
    assert sh(*args).out == cold  # writes the cache
    assert sh(*args).out == cold  # reads it
    search = ["--catalog", str(mine), "search", "kv blocks", "--json"]
    assert sh(*search).out == sh(*search, env={"INVMAP_NO_CACHE": "1"}).out


def test_large_catalogs_write_their_cache_after_the_output(mine, isolated, monkeypatch):
    monkeypatch.setattr(cache, "DEFER_FROM", 1)
    catalog_io.load(str(mine))
    assert entries(isolated) == []
    cache.finish(wait=True)
    assert entries(isolated) == ["catalog", "index"]
    monkeypatch.setattr(catalog_io, "parse", lambda *a: (_ for _ in ()).throw(AssertionError("cached")))
    assert [s.id for s in catalog_io.load(str(mine)).sources] == ["pagedattention", "mooncake"]


def test_search_on_two_cores_equals_one(monkeypatch):
    sources = catalog_io.load(str(catalog_io.shipped_path())).sources
    serial = query.search(sources, "virtaul memroy kv", limit=None, min_score=0)
    monkeypatch.setattr(query, "PARALLEL_FROM", 1)
    assert query.search(sources, "virtaul memroy kv", limit=None, min_score=0) == serial


def test_big_tables_are_capped_with_a_note(cli, tmp_path):
    # 250 sources: a table shows 200 and says how to see the rest; machine formats stream all.
    import tomli_w

    base = catalog_io.load(str(ASSETS / "mini.toml"))
    table = catalog_io.to_toml_dict(base)
    one = table["sources"][0]
    table["sources"] = [{**one, "id": f"s-{n}", "name": f"S{n}"} for n in range(250)]
    path = tmp_path / "big.toml"
    path.write_text(tomli_w.dumps(table), encoding="utf-8")
    out = cli("--catalog", str(path), "list", "--format", "table", "--fields", "id").out
    assert "s-199" in out and "s-200" not in out
    assert "50 more; use --limit or --all, or a machine format (--format jsonl, csv)" in out
    assert "s-249" in cli("--catalog", str(path), "list", "--format", "table", "--all", "--fields", "id").out
    assert len(json.loads(cli("--catalog", str(path), "list", "--json").out)) == 250


def test_only_the_running_commands_module_is_imported():
    probe = ("import sys\nfrom invmap.cli import app\ntry:\n    app(prog_name='invmap', args=sys.argv[1:])\n"
             "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith('invmap.cli.')), file=sys.stderr)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe, "list", "--json"], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == "['invmap.cli.querying', 'invmap.cli.shared']"


def test_command_registry_matches_the_modules():
    import importlib

    from invmap.cli import COMMANDS

    defined = {}
    for module in set(COMMANDS.values()):
        for info in importlib.import_module(f"invmap.cli.{module}").commands.registered_commands:
            defined[info.name] = module
    assert defined == COMMANDS


# --- parsing a large catalog on two cores -------------------------------------------------------------


@pytest.fixture
def split_everything(monkeypatch):
    monkeypatch.setattr(catalog_io, "PARALLEL_PARSE_FROM", 0)


def shipped_text() -> str:
    return catalog_io.shipped_path().read_text(encoding="utf-8")


def test_parsing_in_halves_equals_one_parse(split_everything):
    import tomli

    text = shipped_text()
    assert catalog_io._parse_in_halves(text, tomli.loads) == tomli.loads(text)
    assert catalog_io.parse(text.encode(), "x") == tomli.loads(text)


def test_a_header_inside_a_multiline_string_is_not_a_cut(split_everything):
    import tomli

    filler = "x" * 40_000
    trick = f'\n[[sources]]\nid = "tricky"\nmechanism = """{filler}\n[[sources]]\nid = "inside-a-string"\n"""\n'
    text = shipped_text() + trick
    assert text.find("\n[[sources]]\n", len(text) // 2) > text.index("tricky")  # the cut falls in the string
    assert catalog_io._parse_in_halves(text, tomli.loads) is None
    parsed = catalog_io.parse(text.encode(), "x")
    assert parsed["sources"][-1]["id"] == "tricky" and "inside-a-string" in parsed["sources"][-1]["mechanism"]


def test_errors_in_either_half_keep_their_line_numbers(split_everything):
    import tomli

    lines = shipped_text().splitlines(keepends=True)
    for broken_line in (5, len(lines) - 3):
        text = "".join(lines[:broken_line] + ["year = = 1\n"] + lines[broken_line:])
        with pytest.raises(tomli.TOMLDecodeError) as whole:
            tomli.loads(text)
        with pytest.raises(catalog_io.CatalogError) as caught:
            catalog_io.parse(text.encode(), "x")
        assert caught.value.problems == [f"invalid TOML: {whole.value}"]
        assert f"(at line {broken_line + 1}, column " in caught.value.problems[0]
