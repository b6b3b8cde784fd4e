"""Output formats parsed back, field selection, sorting, colour rules, clashing options."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import subprocess

import pytest

from conftest import JSON_KEYS, REPO, filled, installed_invmap
from invmap import formats
from invmap import options as decl
from invmap.fields import EXTRA

FIELDS = JSON_KEYS


@pytest.fixture
def records(cli) -> list[dict]:
    return json.loads(cli("list", "--json").out)


def as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list) and value and isinstance(value[0], dict):  # places: permalinks; settings: flags
        return ";".join(v["url"] if "url" in v else f"{v['engine']} {v['flag']}" for v in value)
    if isinstance(value, list):
        return ";".join(value)
    return str(value)


def test_jsonl_is_one_object_per_line(cli, records):
    lines = cli("list", "--format", "jsonl").out.splitlines()
    assert [json.loads(line) for line in lines] == records


@pytest.mark.parametrize("fmt, delimiter", [("csv", ","), ("tsv", "\t")])
def test_csv_and_tsv_parse_back_to_the_catalog(cli, records, fmt, delimiter):
    out = cli("list", "--format", fmt).out
    rows = list(csv.reader(io.StringIO(out), delimiter=delimiter))
    assert rows[0] == FIELDS
    assert rows[1:] == [[as_text(r[f]) for f in FIELDS] for r in records]
    roofline = next(r for r in csv.DictReader(io.StringIO(out), delimiter=delimiter) if r["id"] == "roofline")
    assert roofline["source"] == "Roofline, Williams, Waterman, and Patterson"  # quoted, commas kept
    llmd = next(r for r in csv.DictReader(io.StringIO(out), delimiter=delimiter) if r["id"] == "llm-d")
    assert llmd["layers"] == "L4;L5;L6" and llmd["year"] == ""


def test_markdown_is_a_table_with_every_row(cli):
    out = cli("list", "--format", "markdown", "--fields", "id,name,year").out.splitlines()
    assert out[0] == "| ID | Name | Year |" and out[1] == "|---|---|---|"
    assert out[2] == "| kiely-guide | Inference Engineering guide | n.d. |"
    assert len(out) == 32


def test_plain_is_one_line_per_source_without_wrapping(cli):
    out = cli("list", "--format", "plain").out.splitlines()
    assert len(out) == 30
    assert out[11] == (
        "vattention\tvAttention\t2024\tL3\tUse virtual-memory-style KV management without "
        "committing to one paged-attention kernel design."
    )
    assert all("│" not in line and "─" not in line for line in out)


# A sample value for each kind of required argument (by what completes it), so that every declared
# command can be run: the commands and formats themselves come from the declarations.
SAMPLES = {
    "source": "gqa",
    "source_id": "gqa",
    "source_or_code": "gqa",
    "term": "ttft",
    "catalog_file": "shipped",
    None: "kv",
}
PRINTING = [c for c in decl.COMMANDS if c.view and c.view != formats.CATALOG]
# The commands that write a catalog print what they wrote: run on a catalog of the test's own, with
# the cells a new source needs (add) or one change (edit).
CELLS = ["--type", "Current", "--year", "2024", "--layer", "L3", "--mechanism", "m", "--objective", "o"]
WRITING = {"add": ["--name", "New", "--source", "New", *CELLS, "--question", "q", "--availability", "a"]}
WRITING["edit"] = ["--keyword", "another"]


def argv_of(command: decl.Command) -> list[str]:
    """The command with what it needs: each required argument's sample, and for each need it always has
    (`Command.requires`: "needs --gpu or --memory") the first of its options with the option's example."""
    words = command.path.split()
    for a in command.arguments:
        if a.required:
            words.append(SAMPLES.get(a.complete, "kv"))
    options = {o.dest: o for o in decl.options_of(command)}
    for need in command.requires:
        if not need.given and not any(o.flags[0] in words for n in need.one_of if (o := options.get(n))):
            chosen = options[need.one_of[0]]
            words += [chosen.flags[0], chosen.example]
    return words


@pytest.mark.parametrize("command", PRINTING, ids=lambda c: c.path)
@pytest.mark.parametrize("fmt", formats.NAMES)
def test_every_command_prints_every_format_it_serves_and_refuses_the_rest(cli, command, fmt, request):
    """A format added to the registry, or a command added to the declarations, is covered here: each
    format a command's view serves renders (JSON parses), every other one is a usage error naming them."""
    if command.network:
        request.getfixturevalue("services")  # recorded answers on 127.0.0.1
    allowed = formats.names_for(command.view)
    own = None
    if command.path in WRITING:
        own = request.getfixturevalue("tmp_path") / "own.toml"
        own.write_bytes((REPO / "catalog.toml").read_bytes())
    before = own.read_bytes() if own else None
    argv = [*(("--catalog", str(own)) if own else ()), *argv_of(command), *WRITING.get(command.path, ())]
    if command.path == "record check":  # a record file, filled in
        record = request.getfixturevalue("tmp_path") / "record.json"
        cli("record", "new", "gqa", "-o", str(record))
        record.write_text(json.dumps(filled(json.loads(record.read_text()))))
        argv = [*command.path.split(), str(record)]
    result = cli(*argv, "--format", fmt)
    assert "Traceback" not in result.err
    if fmt in allowed:
        assert result.code == 0 and result.err == "", (command.path, fmt, result.err)
        if fmt == "json":
            json.loads(result.out)
        if fmt == "jsonl":
            [json.loads(line) for line in result.out.splitlines()]
    else:
        assert result.code == 2 and result.out == ""
        assert result.err == f"Error: '{command.path}' cannot print '{fmt}' (its formats: {', '.join(allowed)})\n"
        assert own is None or own.read_bytes() == before  # refused before anything is written
    help_text = " ".join(cli(*command.path.split(), "--help").out.split())
    assert f"One of: {', '.join(allowed)}." in help_text


@pytest.mark.parametrize("fmt", formats.names_for(formats.CATALOG))
def test_export_writes_every_catalog_format(cli, fmt):
    result = cli("export", "--format", fmt)
    assert result.code == 0 and result.out
    # Markdown has the seed's nine columns: it names what it leaves out; the others keep every field
    assert result.err.startswith("note: a Markdown export keeps") if fmt == "markdown" else result.err == ""
    if fmt in ("json",):
        assert [r["id"] for r in json.loads(result.out)][:2] == ["kiely-guide", "roofline"]


def test_every_format_has_a_renderer_for_each_view_it_names():
    for f in formats.FORMATS:
        assert f.views, f.name
        for view in f.views:
            assert view in formats.VIEWS, (f.name, view)
            assert callable(formats.renderer(f.name, view)), (f.name, view)


def test_a_format_declared_without_a_renderer_fails_cleanly(cli, monkeypatch):
    """The trial change of the structure issue: a new enum member alone once crashed `list`. A registry
    entry that serves no view is refused like any other unknown format, never a traceback."""
    monkeypatch.setattr(formats, "FORMATS", (*formats.FORMATS, formats.Format("html", False, "HTML", {})))
    result = cli("list", "--format", "html")
    assert result.code == 2 and "cannot print 'html'" in result.err


def test_fields_select_and_order_every_format(cli):
    assert json.loads(cli("list", "--layer", "L1", "--fields", "year,id", "--json").out) == [
        {"year": 2008, "id": "roofline"},
        {"year": 2022, "id": "flashattention"},
        {"year": 2025, "id": "flashinfer"},
    ]
    assert cli("list", "--layer", "L1", "--fields", "id,year", "--format", "csv").out == (
        "id,year\nroofline,2008\nflashattention,2022\nflashinfer,2025\n"
    )
    assert cli("list", "-l", "L1", "--fields", "layers,id", "--format", "tsv").out.splitlines()[1] == "L1\troofline"
    assert json.loads(cli("show", "llm-d", "--fields", "name,layers", "--json").out) == {
        "name": "llm-d",
        "layers": ["L4", "L5", "L6"],
    }
    assert cli("questions", "-l", "L6", "--fields", "id", "--format", "plain").out == ("llm-d\nbayesian-optimization\n")
    hit = json.loads(cli("search", "virtual memory", "--fields", "id,score", "--limit", "1", "--json").out)
    assert list(hit[0]) == ["id", "score"] and hit[0]["id"] == "vattention"


def test_unknown_field_is_a_usage_error_listing_valid_fields(cli):
    result = cli("list", "--fields", "id,colour")
    assert (result.code, result.out) == (2, "")
    assert result.err == f"Error: unknown field 'colour' (valid fields: {', '.join(FIELDS)})\n"
    # score exists only where there is one
    assert cli("list", "--fields", "score").code == 2
    assert "valid fields:" in cli("questions", "--fields", "score", "--json").err
    assert cli("search", "kv", "--fields", "score").code == 0


def test_fields_command_lists_every_field(cli):
    out = cli("fields").out.splitlines()
    assert [line.split()[0] for line in out if not line.startswith(" ")] == [*FIELDS, *(f.name for f in EXTRA)]
    assert out[0].split(None, 1)[1] == "unique lowercase kebab-case id, at most 24 characters (pagedattention, llm-d)"


def test_clashing_options_are_usage_errors(cli):
    result = cli("list", "--json", "--format", "csv")
    assert (result.code, result.out) == (2, "")
    assert result.err == "Error: --json and --format csv contradict each other: use one of them\n"
    assert cli("list", "--json", "--format", "json").code == 0
    bad = cli("list", "--format", "yaml")
    assert (
        bad.code == 2
        and bad.err
        == "Error: 'list' cannot print 'yaml' (its formats: table, json, jsonl, csv, tsv, markdown, plain)\n"
    )
    color = cli("list", "--color", "sometimes")
    assert color.code == 2 and "'sometimes' is not one of auto, always, never" in color.err


def test_errors_under_json_keep_stdout_empty(cli):
    for args in (
        ["list", "--layer", "L9", "--json"],
        ["show", "nothing-like-this", "--json"],
        ["list", "--fields", "x", "--json"],
    ):
        result = cli(*args)
        assert result.out == "" and result.err.startswith("Error: ")


def test_sort_and_reverse(cli):
    by_year = json.loads(cli("list", "--sort", "year", "--fields", "id,year", "--json").out)
    years = [r["year"] for r in by_year]
    assert years[:2] == [2008, 2012] and years[-4:] == [None] * 4
    dated = [y for y in years if y is not None]
    assert dated == sorted(dated)
    reverse = [
        r["year"] for r in json.loads(cli("list", "--sort", "year", "--reverse", "--fields", "year", "--json").out)
    ]
    assert reverse[0] == 2026 and reverse[-4:] == [None] * 4
    names = [r["name"] for r in json.loads(cli("questions", "--sort", "name", "--fields", "name", "--json").out)]
    assert names == sorted(names, key=str.casefold)
    layer_order = [
        r["id"] for r in json.loads(cli("list", "--sort", "layer", "--layer", "L5", "--fields", "id", "--json").out)
    ]
    assert layer_order[:2] == ["prefill-deflection", "mooncake"]  # L2.. first, then L3..
    ids = [r["id"] for r in json.loads(cli("list", "--sort", "id", "--reverse", "--fields", "id", "--json").out)]
    assert ids == sorted(ids, reverse=True)
    types = [r["type"] for r in json.loads(cli("list", "--sort", "type", "--fields", "type", "--json").out)]
    assert types == sorted(types, key=str.casefold)
    assert cli("list", "--sort", "colour").code == 2


def test_limit_and_table_cap(cli):
    assert len(json.loads(cli("list", "--limit", "3", "--json").out)) == 3


# --- colour ----------------------------------------------------------------------------------------

ANSI = "\x1b["


def run_on_terminal(*args: str, env: dict[str, str] | None = None) -> str:
    """Run the installed invmap with stdout on a pseudo-terminal; return what it printed."""
    primary, secondary = pty.openpty()
    full_env = {**os.environ, "COLUMNS": "160", **(env or {})}
    proc = subprocess.Popen([installed_invmap(), *args], stdout=secondary, stderr=subprocess.PIPE, env=full_env)
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait()
    os.close(primary)
    return b"".join(chunks).decode("utf-8", "replace")


def test_terminal_gets_a_coloured_table():
    out = run_on_terminal("list", "--layer", "L3", env={"TERM": "xterm-256color"})
    assert ANSI in out and "PagedAttention" in out and "\t" not in out


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_and_dumb_terminal_turn_colour_off(env):
    out = run_on_terminal("list", "--layer", "L3", env={"TERM": "xterm-256color", **env})
    assert ANSI not in out and "vAttention" in out and "─" in out  # still a table, only without colour


def test_color_never_on_a_terminal():
    assert ANSI not in run_on_terminal("list", "--color", "never", env={"TERM": "xterm-256color"})
    assert ANSI not in run_on_terminal("--color", "never", "list", env={"TERM": "xterm-256color"})


def test_color_always_into_a_pipe(cli):
    assert ANSI in cli("list", "--format", "table", "--color", "always").out
    assert ANSI in cli("--color", "always", "list", "--format", "table").out
    assert ANSI in cli("list", "--format", "table", "--color", "always", env={"NO_COLOR": "1"}).out
    assert ANSI not in cli("list", "--format", "table").out
    # machine formats are never coloured
    assert ANSI not in cli("list", "--json", "--color", "always").out
