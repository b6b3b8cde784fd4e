"""Second round: finding (search tiers, identifiers, level words), the SQLite index, safety with
hostile input and concurrent writers, terminal screens, experiment records."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import ASSETS, add_args, bash, generated_catalog, installed_invmap, tab

HOSTILE = ASSETS / "hostile"
MINI_SOURCES = "\n".join(
    line for line in (ASSETS / "mini.toml").read_text(encoding="utf-8").split("[[sources]]", 1)[1:]
)


def ids_of(result) -> list[str]:
    assert result.code == 0, result.err
    return [r["id"] for r in json.loads(result.out)]


# --- issue: finding the source you mean ----------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected, within",
    [
        ("speculative decoding", {"speculative-decoding", "speculative-sampling"}, 2),
        ("paged attention", {"pagedattention"}, 1),
        ("vllm", {"vllm"}, 1),
        ("flash attention", {"flashattention"}, 1),
        ("roofline", {"roofline"}, 1),
        ("mooncake", {"mooncake"}, 1),
        ("disaggregation", {"distserve"}, 5),
        ("chunked prefill", {"sarathi-serve"}, 2),
        ("specualtive decodng", {"speculative-decoding", "speculative-sampling"}, 3),
        ("tile attention", {"flashattention"}, 3),
        ("virtual memory", {"vattention"}, 3),
    ],
)
def test_search_finds_what_people_type(cli, text, expected, within):
    found = ids_of(cli("search", text, "--json"))
    assert expected <= set(found[:within]), found


def test_search_nonsense_is_empty_and_quiet(cli):
    result = cli("search", "zzqqxx", "--json")
    assert (result.code, result.out, result.err) == (0, "[]\n", "")


def test_search_tiers_rank_names_above_titles(cli):
    found = ids_of(cli("search", "paged attention", "--json"))
    assert found.index("pagedattention") < found.index("vattention")


@pytest.mark.parametrize(
    "query",
    [
        "2407.00079",
        "2407.00079v2",
        "arXiv:2407.00079",
        "https://arxiv.org/abs/2407.00079",
        "http://arxiv.org/pdf/2407.00079v2",
        "arxiv.org/abs/2407.00079",
        "mooncake",
        "https://github.com/kvcache-ai/Mooncake/",
    ],
)
def test_show_by_any_identifier(cli, query):
    assert json.loads(cli("show", query, "--json").out)["id"] == "mooncake"


@pytest.mark.parametrize(
    "query, ident",
    [
        ("10.1145/3779212.3790135", "bullet"),
        ("doi:10.1145/3779212.3790135", "bullet"),
        ("https://doi.org/10.1145/3731569.3764815", "aegaeon"),
        ("https://docs.vllm.ai/", "vllm"),
        ("http://docs.vllm.ai", "vllm"),
        ("https://github.com/llm-d/llm-d", "llm-d"),
        ("Fast Inference from Transformers via Speculative Decoding", "speculative-decoding"),
        ("2504.19516", "bullet"),
    ],
)
def test_show_by_doi_link_and_title(cli, query, ident):
    assert json.loads(cli("show", query, "--json").out)["id"] == ident


def test_unknown_identifier_is_not_guessed_and_shared_link_is_ambiguous(cli):
    missing = cli("show", "https://arxiv.org/abs/9999.99999")
    assert (missing.code, missing.out) == (1, "")
    assert (
        missing.err.startswith("Error: no source matches 'https://arxiv.org/abs/9999.99999'\n")
        and "Did you mean" not in missing.err
    )
    shared = cli("show", "https://github.com/vllm-project/vllm")
    assert shared.code == 1 and "PagedAttention (pagedattention)" in shared.err and "vLLM (vllm)" in shared.err


def test_show_several_names(cli):
    both = json.loads(cli("show", "vllm", "sglang", "--json").out)
    assert [r["id"] for r in both] == ["vllm", "sglang"]
    miss = cli("show", "vllm", "nosuchthingatall")
    assert (miss.code, miss.out) == (1, "")


def test_layer_words_and_comma_lists(cli):
    l5 = ids_of(cli("list", "--layer", "L5", "--json"))
    assert ids_of(cli("list", "--layer", "disaggregation", "--json")) == l5
    assert ids_of(cli("list", "--layer", "cache management", "--json")) == ids_of(
        cli("list", "--layer", "L3", "--json")
    )
    assert set(ids_of(cli("list", "--layer", "adaptive control", "--json"))) == {"llm-d", "bayesian-optimization"}
    assert ids_of(cli("list", "--layer", "L3,L5", "--json")) == ids_of(cli("list", "-l", "L3", "-l", "L5", "--json"))
    assert ids_of(cli("list", "--type", "current,survey", "--json")) == ids_of(
        cli("list", "-t", "current", "-t", "survey", "--json")
    )


def test_did_you_mean_on_values(cli):
    result = cli("list", "--type", "curent")
    assert result.code == 2 and result.err.startswith(
        "Error: unknown type 'curent'; did you mean 'Current'? (valid types: "
    )
    version = cli("version")
    assert version.code == 2 and "--version" in version.err


def test_empty_result_notice_only_on_a_terminal(sh):
    result = sh("list", "--type", "survey", "--layer", "L1")
    assert (result.code, result.out, result.err) == (0, "", "")


# --- issue: the SQLite index ---------------------------------------------------------------------


def where_index(sh, catalog: Path) -> dict:
    return json.loads(sh("--catalog", str(catalog), "where", "--json").out)["index"]


@pytest.fixture
def mine(tmp_path) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text("[[sources]]\n" + MINI_SOURCES, encoding="utf-8")
    return path


def test_sources_only_catalog_and_index_answers(sh, mine, isolated):
    assert where_index(sh, mine)["state"] == "missing"
    first = sh("--catalog", str(mine), "list", "--json")
    assert first.code == 0 and len(json.loads(first.out)) == 2
    state = where_index(sh, mine)
    assert state == {"path": state["path"], "state": "current", "sources": 2}
    second = sh("--catalog", str(mine), "show", "mooncake", "--json", env={"INVMAP_TRACE": "1"})
    assert second.code == 0 and second.err == f"invmap: index: current {state['path']}\n"  # answered by the index
    folder = Path(state["path"]).parent
    assert oct(folder.stat().st_mode & 0o777) == "0o700" and oct(Path(state["path"]).stat().st_mode & 0o777) == "0o600"
    guide = sh("--catalog", str(mine), "guide")
    assert guide.code == 0 and "no notes" in guide.out


def test_edited_or_replaced_catalog_is_reindexed(sh, mine):
    sh("--catalog", str(mine), "list")
    stat = mine.stat()
    mine.write_text(mine.read_text(encoding="utf-8").replace("Mooncake", "Mooncakf"), encoding="utf-8")
    os.utime(mine, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and mtime, as cp -p would keep
    assert json.loads(sh("--catalog", str(mine), "show", "mooncake", "--json").out)["name"] == "Mooncakf"


def test_corrupt_or_foreign_index_is_never_trusted(sh, mine):
    sh("--catalog", str(mine), "list")
    path = Path(where_index(sh, mine)["path"])
    path.write_bytes(b"not a database at all")
    assert json.loads(sh("--catalog", str(mine), "show", "mooncake", "--json").out)["id"] == "mooncake"
    con = sqlite3.connect(path)
    con.execute("UPDATE sources SET name = 'PLANTED' WHERE id = 'mooncake'")
    con.execute("DROP INDEX keys_by_key")
    con.commit()
    con.close()
    assert json.loads(sh("--catalog", str(mine), "show", "mooncake", "--json").out)["name"] == "Mooncake"
    os.chmod(path, 0o666)
    assert where_index(sh, mine)["state"] == "stale"


def test_unusable_cache_folder_and_no_cache(sh, mine, tmp_path):
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")
    result = sh("--catalog", str(mine), "list", "--json", env={"XDG_CACHE_HOME": str(blocker)})
    assert result.code == 0 and len(json.loads(result.out)) == 2
    off = sh("--catalog", str(mine), "where", "--json", env={"INVMAP_NO_CACHE": "1"})
    assert json.loads(off.out)["index"]["state"] == "disabled"
    relative = sh("--catalog", str(mine), "list", env={"XDG_CACHE_HOME": "relative/cache"}, cwd=str(tmp_path))
    assert relative.code == 0 and not (tmp_path / "relative").exists()


def test_concurrent_first_runs(mine):
    program = installed_invmap()
    procs = [
        subprocess.Popen(
            [program, "--catalog", str(mine), "list", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outs = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert all(len(json.loads(out)) == 2 and err == "" for out, err in outs)


def test_no_fork_marshal_or_os_exit_in_the_package():
    src = Path(__file__).resolve().parent.parent / "src" / "invmap"
    text = "\n".join(p.read_text(encoding="utf-8") for p in src.rglob("*.py"))
    assert "os.fork" not in text and "import marshal" not in text and "os._exit" not in text


# --- issue: nothing lost, nothing injected -------------------------------------------------------


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


def test_concurrent_adds_all_persist(tmp_path, mine):
    program = installed_invmap()
    procs = [
        subprocess.Popen(
            [program, "--catalog", str(mine), "add", *add_args(f"C{i}")], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for i in range(12)
    ]
    for p in procs:
        p.communicate()
        assert p.returncode == 0
    text = mine.read_text(encoding="utf-8")
    assert all(f'id = "c{i}"' in text for i in range(12))


def test_export_refuses_existing_files_and_the_shipped_catalog(cli, tmp_path, mine):
    before = mine.read_bytes()
    clobber = cli("--catalog", str(mine), "export", "-o", str(mine))
    assert clobber.code == 2 and mine.read_bytes() == before
    from invmap.catalog import shipped_path

    shipped = cli("export", "-o", str(shipped_path()), "--force")
    assert shipped.code == 2 and "refusing to change the catalog shipped" in shipped.err
    assert cli("export", "--format", "csv", "-o", "-").out.startswith("id,name,")


def test_symlinked_catalog_is_written_through(cli, tmp_path, mine):
    link = tmp_path / "link.toml"
    link.symlink_to(mine)
    assert cli("--catalog", str(link), "add", *add_args()).code == 0
    assert link.is_symlink() and 'id = "z"' in mine.read_text(encoding="utf-8")


def test_crlf_catalog_keeps_its_line_endings(cli, mine):
    mine.write_bytes(mine.read_bytes().replace(b"\n", b"\r\n"))
    assert cli("--catalog", str(mine), "add", *add_args()).code == 0
    data = mine.read_bytes()
    assert b"\r\n" in data and data.count(b"\n") == data.count(b"\r\n")


def test_stdout_errors_are_exit_4_and_closed_pipe_is_0(tmp_path):
    program = installed_invmap()
    full = subprocess.run(f"'{program}' list > /dev/full", shell=True, capture_output=True, text=True)
    assert (
        full.returncode == 4
        and full.stderr.startswith("Error: cannot write to stdout")
        and "Traceback" not in full.stderr
    )
    head = bash(f"'{program}' list | head -0; echo ${{PIPESTATUS[0]}}")
    assert head.stdout.strip() == "0" and head.stderr == ""
    ascii_out = subprocess.run(
        [program, "stats", "--format", "table"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
    )
    assert ascii_out.returncode == 0 and "\\u2588" in ascii_out.stdout


def test_excel_safe_csv(cli, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        "[[sources]]\n" + MINI_SOURCES.replace('mechanism = "Map', 'mechanism = "=Map', 1), encoding="utf-8"
    )
    assert (
        '"=Map' in cli("--catalog", str(path), "export", "--format", "csv").out
        or ",=Map" in cli("--catalog", str(path), "export", "--format", "csv").out
    )
    assert ",'=Map" in cli("--catalog", str(path), "export", "--format", "csv", "--excel-safe").out


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


# --- issue: at the terminal -----------------------------------------------------------------------


def screen(args: list[str], cols: int, env: dict | None = None, rows: int = 300) -> list[str]:
    program = installed_invmap()
    command = f"stty cols {cols} rows {rows}; '{program}' " + " ".join(f"'{a}'" for a in args)
    out = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "INVMAP_PAGER": "cat", "TERM": "xterm-256color", **(env or {})},
    ).stdout
    out = re.sub(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)", "", out)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out).replace("\r", "").splitlines()


@pytest.mark.parametrize("cols", [60, 80, 120])
@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["questions"],
        ["search", "kv cache"],
        ["related", "pagedattention"],
        ["layers"],
        ["map"],
        ["show", "gqa"],
    ],
)
def test_identifiers_are_never_split(cli, args, cols):
    records = json.loads(cli("list", "--json").out)
    lines = screen(args, cols)
    text = "\n".join(lines)
    for r in records:
        for value in (r["id"], r["name"]):
            fragments = [value[:k] for k in range(len(value) // 2, len(value))]
            if value in text:
                continue
            # not shown at all is fine (a dropped column); shown in pieces is not
            assert not any(
                re.search(rf"(^|\s){re.escape(f)}$", line) for f in fragments for line in lines if len(f) > 4
            ), value


def test_line_budgets_at_80_columns():
    assert len(screen(["list"], 80)) <= 90
    assert len(screen(["questions"], 80)) <= 90
    assert len(screen(["list", "--layer", "L3"], 80)) <= 25
    assert len(screen(["map"], 80)) <= 45


def test_show_leaves_out_empty_fields_and_prints_links_whole():
    lines = screen(["show", "gqa"], 60)
    assert not any(line.startswith("DOI") or line.startswith("Code") for line in lines)
    assert any(line.endswith("https://arxiv.org/abs/2305.13245") for line in lines)
    layer = screen(["show", "mooncake"], 80)
    assert any(re.match(r"Layer\s+L3 and L5 \(L3, L5\)$", line) for line in layer)


def test_pager_used_only_on_a_terminal(tmp_path):
    stand_in = tmp_path / "pager.sh"
    marker = tmp_path / "paged"
    stand_in.write_text(f"#!/bin/sh\ncat > '{marker}'\n")
    stand_in.chmod(0o755)
    screen(["list"], 80, env={"INVMAP_PAGER": str(stand_in)}, rows=20)
    assert marker.exists() and "pagedattention" in marker.read_text()
    marker.unlink()
    screen(["list", "--no-pager"], 80, env={"INVMAP_PAGER": str(stand_in)}, rows=20)
    assert not marker.exists()
    screen(["--no-pager", "list"], 80, env={"INVMAP_PAGER": str(stand_in)}, rows=20)
    assert not marker.exists()
    program = installed_invmap()
    subprocess.run([program, "list"], capture_output=True, env={**os.environ, "INVMAP_PAGER": str(stand_in)})
    assert not marker.exists()


def test_hyperlinks_only_with_colour_on_a_terminal():
    program = installed_invmap()

    def on_a_terminal(**env: str) -> str:
        return bash(
            f"script -qec \"stty cols 120; '{program}' list --layer L3\" /dev/null", INVMAP_PAGER="cat", **env
        ).stdout

    on = on_a_terminal(TERM="xterm-256color")
    assert "\x1b]8;" in on and "https://arxiv.org/abs/2309.06180" in on
    assert "\x1b]8;" not in on_a_terminal(NO_COLOR="1")


def test_help_teaches(cli):
    root = cli("--help").out
    assert "Query commands:" in root and "Records commands:" in root
    assert all(len(line) <= 80 for line in root.splitlines())
    for command in (
        "list",
        "show",
        "search",
        "questions",
        "map",
        "related",
        "open",
        "layers",
        "stats",
        "guide",
        "where",
        "check",
        "init",
        "add",
        "fmt",
        "export",
        "import",
        "records",
    ):
        text = cli(command, "--help").out
        assert "Examples:" in text and "<int range>" not in text and "x>=1" not in text, command
        assert "{" not in text.splitlines()[0] and "<str>" not in text, command
    assert cli("show", "--help").out.startswith("Usage: invmap show [OPTIONS] NAME...\n")
    assert cli("record", "new", "--help").out.startswith("Usage: invmap record new [OPTIONS] NAME\n")


def test_search_words_quoted_or_not(cli):
    assert cli("search", "kv", "cache", "--json").out == cli("search", "kv cache", "--json").out


# --- issue: experiment records ------------------------------------------------------------------


def filled(draft: dict, result_type: str = "measured") -> dict:
    value = {"name": "p50", "value": 12.5, "unit": "ms", "evidence": result_type}
    return {
        **draft,
        "result_type": result_type,
        "hypothesis": "Paging keeps capacity.",
        "conclusion": "It did.",
        "raw_measurements": [value],
        "derived_metrics": [{**value, "value": 3}],
        "limitations": ["one GPU"],
    }


def test_record_new_fill_check_and_questions(cli, tmp_path):
    folder = tmp_path / "experiments"
    folder.mkdir()
    draft_path = folder / "paged.json"
    made = cli("record", "new", "pagedattention", "-o", str(draft_path))
    assert made.code == 0
    draft = json.loads(draft_path.read_text())
    assert draft["schema_version"] == "1.0" and draft["result_type"] == "measured"
    assert draft["record_id"].startswith("pagedattention-") and draft["sources"] == ["https://arxiv.org/abs/2309.06180"]
    assert "Which allocation and eviction rule" in draft["hypothesis"]
    assert cli("record", "check", str(draft_path)).code == 3
    assert cli("record", "new", "pagedattention", "-o", str(draft_path)).code == 2  # no overwrite without --force
    draft_path.write_text(json.dumps(filled(draft)))
    assert cli("record", "check", str(draft_path)).code == 0
    listed = json.loads(cli("records", str(folder), "--json").out)
    assert listed[0]["addresses"] == ["pagedattention"] and listed[0]["valid"] is True
    q = json.loads(cli("questions", "--layer", "L3", "--records", str(folder), "--json").out)
    assert next(r for r in q if r["id"] == "pagedattention")["records"] == [draft["record_id"]]
    still_open = json.loads(cli("questions", "--layer", "L3", "--records", str(folder), "--open", "--json").out)
    assert "pagedattention" not in [r["id"] for r in still_open] and "vllm" in [r["id"] for r in still_open]
    assert cli("records", str(tmp_path / "missing")).code == 2


@pytest.mark.parametrize(
    "change, message",
    [
        ({"schema_version": "2.0"}, "schema_version must be one of '1.0'"),
        ({"title": "  "}, "title must not be empty"),
        ({"result_type": "guessed"}, "result_type must be one of"),
        ({"workload": []}, "workload must be a JSON object"),
        ({"raw_measurements": []}, "raw_measurements must not be empty"),
        ({"limitations": [""]}, "limitations[0] must not be empty"),
        ({"sources": ["ftp://x"]}, "sources[0] must be an absolute http(s) URL"),
        ({"result_type": "estimated"}, "raw_measurements[0].evidence must match result_type 'estimated'"),
        # White space as the field guide's validator and JSON Schema (Python's re) see it.
        ({"title": "\x1f"}, "title must not be empty"),
        ({"limitations": ["\u2028"]}, "limitations[0] must not be empty"),
        ({"sources": ["https://x\x1c"]}, "sources[0] must be an absolute http(s) URL"),
        ({"sources": ["https:///x"]}, "sources[0] must be an absolute http(s) URL"),
        (
            {"raw_measurements": [{"name": "p50", "value": 1, "unit": "ms", "evidence": "measured", "note": None}]},
            "raw_measurements[0].note must be a string",
        ),
    ],
)
def test_each_rule_broken_once(cli, tmp_path, change, message):
    draft = json.loads(cli("record", "new", "mooncake").out)
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**filled(draft), **change}))
    result = cli("record", "check", str(path))
    assert result.code == 3 and message in result.err, result.err


@pytest.mark.parametrize("content", [b"", b"not json", b"[1, 2]", b"\xff\xfe", b'{"value": NaN}'])
def test_junk_records_are_exit_3(cli, tmp_path, content):
    path = tmp_path / "j.json"
    path.write_bytes(content)
    result = cli("record", "check", str(path), "--json")
    assert result.code == 3 and json.loads(result.out)[0]["valid"] is False


def test_nan_value_is_refused(cli, tmp_path):
    draft = filled(json.loads(cli("record", "new", "mooncake").out))
    text = json.dumps(draft).replace('"value": 12.5', '"value": NaN')
    path = tmp_path / "n.json"
    path.write_text(text)
    assert cli("record", "check", str(path)).code == 3


def test_markdown_links_round_trip_keeps_every_link(sh, tmp_path):
    exported = sh("export", "--format", "markdown", "--links").out
    assert "[PagedAttention, Kwon et al.](https://arxiv.org/abs/2309.06180)" in exported
    back = sh("import", "-", input=exported)
    assert back.code == 0, back.err
    path = tmp_path / "back.toml"
    path.write_text(back.out, encoding="utf-8")
    assert sh("--catalog", str(path), "check").code == 0
    mine = {r["source"]: r for r in json.loads(sh("--catalog", str(path), "list", "--json").out)}
    for r in json.loads(sh("list", "--json").out):
        got = mine[r["source"]]
        assert (got["url"], got["code"]) == (r["url"], r["code"]), r["id"]
        if r["arxiv"] and r["url"].startswith("https://arxiv.org/"):  # the one Source link carries the arXiv id
            assert got["arxiv"] == r["arxiv"], r["id"]


VIEWS = {
    "list": [],
    "show": ["gqa"],
    "questions": [],
    "search": ["kv"],
    "related": ["gqa"],
    "layers": [],
    "stats": [],
    "map": [],
    "guide": [],
    "records": [],
}


@pytest.mark.parametrize("command", sorted(VIEWS))
@pytest.mark.parametrize("fmt", ["table", "json", "jsonl", "csv", "tsv", "markdown", "plain"])
def test_every_format_is_rendered_or_refused(cli, command, fmt):
    from invmap.render import formats_of

    result = cli(command, *VIEWS[command], "--format", fmt)
    if fmt in formats_of(command):
        assert result.code == 0 and result.err == "", result.err
        if fmt == "json":
            json.loads(result.out)
    else:
        assert result.code == 2 and result.out == ""
        assert (
            result.err == f"Error: '{command}' cannot print '{fmt}' (its formats: {', '.join(formats_of(command))})\n"
        )
    assert "Traceback" not in result.err
    help_text = cli(command, "--help").out
    assert f"One of: {', '.join(formats_of(command))}." in " ".join(help_text.split())


def test_pruned_search_equals_scoring_everything(tmp_path):
    """The top-N search (branch and bound, lower tiers skipped once N are found) returns exactly the
    first N of scoring every source in every tier."""
    from invmap import query
    from invmap.catalog import Location
    from invmap.index import open_catalog

    path = generated_catalog(tmp_path / "gen.toml", 3000)
    idx = open_catalog(Location(str(path), "test"))
    filters = query.build_filters(idx)
    fields = query.search_fields(None)
    for text in (
        "virtual memory",
        "handoff compute kv",
        "tiered resources prefill decode",
        "specualtive",
        "zzqqxx",
        "kv",
        "speculative decoding draft",
        "prefill decode handoff",
        "zzz qqq xxx",
        "a b c",
        "batching scheduler latency goodput",
    ):
        for limit in (1, 3, 10):
            fast = query.search(idx, filters, text, fields, limit=limit)
            every = query.search(idx, filters, text, fields, limit=None)[:limit]
            assert [(r["id"], r["score"]) for r in fast] == [(r["id"], r["score"]) for r in every], (text, limit)


def test_search_reads_lower_case_texts_the_index_keeps(tmp_path, monkeypatch):
    """The index keeps the default search fields in lower case (table `folded`); search reads them
    there, and they are exactly the lower case of the stored texts, whatever the script."""
    from invmap import query
    from invmap.catalog import Location
    from invmap.fields import SEARCHED_FIELDS
    from invmap.index import Index, open_catalog

    path = generated_catalog(tmp_path / "gen.toml", 300)
    text = path.read_text(encoding="utf-8").replace('name = "', 'name = "ÉCOLE İstanbul ΟΔΟΣ ', 5)
    path.write_text(text, encoding="utf-8")
    idx = open_catalog(Location(str(path), "test"))
    for filters in (query.build_filters(idx), query.build_filters(idx, layers=["L3"], years=["2020.."])):
        folded = idx.folded(filters.where, filters.params, SEARCHED_FIELDS)
        stored = idx.columns(filters.where, filters.params, ("pos", *SEARCHED_FIELDS))
        assert folded == [(row[0], *((v or "").lower() for v in row[1:])) for row in stored]
        assert any("école i̇stanbul οδος" in row[2] for row in folded) or filters.where
    used = []
    monkeypatch.setattr(Index, "columns", lambda *a, **k: used.append(a) or [])
    assert query.search(idx, query.build_filters(idx), "ecole", query.search_fields(None))
    assert used == []  # the default fields never go through `columns`


def test_chunked_validation_reports_exactly_what_one_pass_does(monkeypatch):
    import tomli

    from invmap import catalog as catalog_io

    shipped = tomli.loads(catalog_io.shipped_path().read_text(encoding="utf-8"))
    sources = [dict(s, id=f"{s['id']}-{n}") for n in range(3) for s in shipped["sources"]]
    sources[40] = dict(sources[40], year="2023")
    sources[70] = dict(sources[70], id=sources[2]["id"])
    del sources[55]["mechanism"]
    found = []
    for chunk in (7, 10**9):
        monkeypatch.setattr(catalog_io, "VALIDATE_CHUNK", chunk)
        with pytest.raises(catalog_io.CatalogError) as caught:
            catalog_io.validate({"layers": {"L9": "x"}, "sources": [dict(s) for s in sources]}, "t")
        found.append(caught.value.problems)
    assert found[0] == found[1] and len(found[0]) == 4
    monkeypatch.setattr(catalog_io, "VALIDATE_CHUNK", 7)
    good = catalog_io.validate({"sources": [dict(s) for s in sources[:30]]}, "t")
    assert [s.id for s in good.sources] == [s["id"] for s in sources[:30]]


def test_fast_parser_agrees_with_tomli_and_never_sees_deep_nesting():
    import tomli

    from invmap import catalog as catalog_io

    text = catalog_io.shipped_path().read_text(encoding="utf-8")
    assert catalog_io._cannot_nest_deeply(text)
    assert catalog_io.parse_text(text, "t") == tomli.loads(text)
    deep = "x = " + "[" * 100_000 + "]" * 100_000
    assert not catalog_io._cannot_nest_deeply(deep)
    disguised = "[[sources]]\n" * 3 + "x = " + "[" * 300 + "]" * 300
    assert not catalog_io._cannot_nest_deeply(disguised)


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
    every = query.build_filters(idx)
    l3 = query.build_filters(idx, layers=["L3"])
    for chosen in (every, l3):
        for key in (None, *query.SORT_KEYS):
            for reverse in (False, True):
                whole = query.sort_records(query.select(idx, chosen), key, reverse)[:3000]
                lazy = query.selection(idx, chosen, sort=key, reverse=reverse, limit=3000)
                assert list(lazy) == whole, (key, reverse)
    reads: list[int] = []
    at = Index.at
    monkeypatch.setattr(
        Index, "at", lambda self, positions, columns: reads.append(len(positions)) or at(self, positions, columns)
    )
    text = render.text(render.Result(query.selection(idx, every), list(query.SOURCE_FIELDS)), "json")
    assert len(json.loads(text)) == 4500
    assert sum(reads) == 4500 + 1 and max(reads) <= render.BATCH and len(reads) >= 3  # +1: the first record's keys


@pytest.mark.parametrize(
    "shell, written",
    [
        ("zsh", ".zfunc/_invmap"),
        ("fish", ".config/fish/completions/invmap.fish"),
        ("bash", ".bash_completions/invmap.sh"),
    ],
)
def test_install_completion_for_the_shell_named(tmp_path, shell, written):
    program = installed_invmap()
    done = subprocess.run(
        [program, "--install-completion", shell],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(tmp_path), "SHELL": "/bin/bash"},
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / written).is_file()
    committed = {"zsh": "_invmap", "fish": "invmap.fish", "bash": "invmap.bash"}[shell]
    repo = Path(__file__).resolve().parent.parent
    assert (tmp_path / written).read_text().strip() == (repo / "completions" / committed).read_text().strip()


UPSTREAM_MAP = """# Research map

Primary papers and official project sources, by layer.

| Direction/type | Source | Year | Layer | Central mechanism | Reported objective | Unresolved engineering question | Implementation availability | Accessed |
| --- | --- | ---: | :--- | --- | --- | --- | --- | --- |
| Current | [PagedAttention, Kwon et al.](https://arxiv.org/abs/2309.06180) | 2023 | L3 | Map logical KV blocks to physical blocks. | Improve memory management. | Which eviction rule avoids capacity loss? | [vLLM public project](https://github.com/vllm-project/vllm). | 2026-08-07 |
| Official project | [vLLM documentation](https://docs.vllm.ai/) and [public source](https://github.com/vllm-project/vllm) | n.d. | L2 and L3 | Document scheduler boundaries. | Expose the runtime. | Which knobs are stable? | Official docs and source. | 2026-08-07 |
| Current | [Aegaeon](https://doi.org/10.1145/3731569.3764815) | 2025 | L4 | Pool GPUs across models. | Serve many models. | Which profiles can share? | Primary paper. | 2026-08-07 |

1. Start with the layer.
2. Read the primary source.
"""


def test_upstream_style_markdown_imports_with_links(sh, tmp_path):
    source = tmp_path / "map.md"
    source.write_text(UPSTREAM_MAP, encoding="utf-8")
    out = tmp_path / "map.toml"
    assert sh("import", str(source), "-o", str(out)).code == 0
    assert sh("--catalog", str(out), "check").code == 0
    records = {r["id"]: r for r in json.loads(sh("--catalog", str(out), "list", "--json").out)}
    paged = records["pagedattention"]
    assert (paged["arxiv"], paged["code"], paged["source"]) == (
        "2309.06180",
        "https://github.com/vllm-project/vllm",
        "PagedAttention, Kwon et al.",
    )
    assert paged["availability"] == "vLLM public project."
    vllm = records["vllm"]
    assert vllm["source"] == "vLLM documentation and public source"
    assert (vllm["url"], vllm["code"]) == ("https://docs.vllm.ai/", "https://github.com/vllm-project/vllm")
    assert records["aegaeon"]["doi"] == "10.1145/3731569.3764815"
    assert json.loads(sh("--catalog", str(out), "guide", "--json").out)["procedure"] == [
        "Start with the layer.",
        "Read the primary source.",
    ]
    assert json.loads(sh("--catalog", str(out), "show", "2309.06180", "--json").out)["id"] == "pagedattention"


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


def test_add_knows_title_and_code(cli, mine):
    options = add_args("T", title="A Title", code="https://github.com/a/b")
    result = cli("--catalog", str(mine), "add", *options, "--json")
    assert result.code == 0
    added = json.loads(result.out)
    assert (added["title"], added["code"]) == ("A Title", "https://github.com/a/b")
    help_text = cli("add", "--help").out
    assert "--title" in help_text and "--code" in help_text


def test_empty_result_says_so_on_a_terminal_only():
    lines = screen(["list", "--type", "survey", "--layer", "L1"], 80)
    assert lines == ["no sources match --layer L1 --type survey"]
    nothing = screen(["search", "zzqqxx"], 80)
    assert nothing and nothing[0].startswith("nothing matches 'zzqqxx'; search looked at")


def test_version_names_the_shipped_catalog_whatever_catalog_says(cli, mine):
    from invmap import __version__

    expected = f"invmap {__version__} — 30 sources, accessed 2026-08-07\n"
    assert cli("--catalog", str(mine), "--version").out == expected


def test_open_without_a_display_prints_the_link(tmp_path):
    program = installed_invmap()
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    done = subprocess.run([program, "open", "mooncake"], capture_output=True, text=True, env=env, timeout=30)
    assert (done.returncode, done.stdout) == (0, "https://arxiv.org/abs/2407.00079\n")


def test_where_diagnoses_a_broken_catalog(sh):
    broken = ASSETS / "broken" / "syntax.toml"
    result = sh("--catalog", str(broken), "where", "--json")
    assert result.code == 0 and json.loads(result.out)["index"]["state"] == "missing"


def test_tab_never_reads_devices_or_stdin():
    for catalog in ("/dev/zero", "-"):
        done = tab(f"invmap -c {catalog} show ")
        assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "", ""), catalog


def test_first_run_of_a_large_catalog_shows_progress_on_a_terminal_only(tmp_path):
    path = generated_catalog(tmp_path / "big.toml", 10_000)
    assert path.stat().st_size >= 8_000_000
    program = installed_invmap()
    cache = tmp_path / "cache"
    piped = subprocess.run(
        [program, "--catalog", str(path), "list", "--limit", "1"],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
    )
    assert piped.returncode == 0 and piped.stderr == ""
    import shutil

    shutil.rmtree(cache)
    command = f"'{program}' --catalog '{path}' list --limit 1 --format plain > /dev/null"
    shown = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "XDG_CACHE_HOME": str(cache), "TERM": "xterm-256color"},
    ).stdout
    assert "big.toml" in shown and ("Indexing" in shown or "Reading" in shown)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_an_index_or_folder_of_another_user_is_ignored(sh, mine):
    sh("--catalog", str(mine), "list")
    state = where_index(sh, mine)
    path = Path(state["path"])
    os.chown(path, 65534, 65534)
    assert where_index(sh, mine)["state"] == "stale"
    shown = sh("--catalog", str(mine), "show", "mooncake", "--json")
    assert shown.code == 0 and json.loads(shown.out)["name"] == "Mooncake"
    assert path.stat().st_uid == os.geteuid()  # our own rebuild took its place; it was never read
    folder = path.parent
    os.chmod(folder, 0o777)
    assert where_index(sh, mine)["state"] != "current"
    assert sh("--catalog", str(mine), "list", "--json").code == 0


def test_readme_walkthrough_from_question_to_experiment(sh, tmp_path):
    """The README's "From question to experiment" steps, as a new user types them in an empty folder."""
    cwd = str(tmp_path)
    assert sh("questions", "--layer", "L3", cwd=cwd).code == 0
    made = sh("record", "new", "pagedattention", "-o", "experiments/paged-kv.json", cwd=cwd)
    assert made.code == 0 and (tmp_path / "experiments" / "paged-kv.json").is_file()
    draft = json.loads((tmp_path / "experiments" / "paged-kv.json").read_text())
    assert sh("record", "check", "experiments/paged-kv.json", cwd=cwd).code == 3
    (tmp_path / "experiments" / "paged-kv.json").write_text(json.dumps(filled(draft)))
    assert sh("record", "check", "experiments/paged-kv.json", cwd=cwd).code == 0
    still_open = json.loads(sh("questions", "--records", "experiments", "--open", "--json", cwd=cwd).out)
    assert "pagedattention" not in [r["id"] for r in still_open] and len(still_open) == 29
    listed = sh("records", "--json", cwd=cwd)  # ./experiments is the default folder
    assert json.loads(listed.out)[0]["addresses"] == ["pagedattention"]
    piped = sh("record", "check", "-", "--json", input=json.dumps(filled(draft)), cwd=cwd)
    assert piped.code == 0 and json.loads(piped.out) == [{"path": "-", "valid": True, "problems": []}]


def test_layer_words_add_nothing_for_a_fragment_inside_a_word(cli):
    labels_with_on = ids_of(cli("list", "--layer", "on", "--json"))
    assert labels_with_on == ["kiely-guide"]  # only "Guide navigation" contains "on"; no level matches


def test_no_hyperlinks_in_a_pipe_even_with_colour_always(sh):
    out = sh("list", "--layer", "L3", "--color", "always", "--format", "table").out
    assert "\x1b[" in out and "\x1b]8;" not in out


@pytest.mark.parametrize("name", ["we ird?#%25x", "ünï cödé"])
def test_a_cache_folder_with_uri_characters_is_used(sh, tmp_path, name):
    """The index is opened by URI (read-only when it must be): `?`, `#`, `%` and spaces stay a path."""
    cache = tmp_path / name
    env = {"XDG_CACHE_HOME": str(cache)}
    assert sh("list", "--layer", "L3", "--limit", "1", env=env).code == 0
    shown = sh("show", "gqa", "--json", env={**env, "INVMAP_TRACE": "1"})
    assert shown.code == 0 and shown.err.startswith("invmap: index: current ")
    index = json.loads(sh("where", "--json", env=env).out)["index"]
    assert index["state"] == "current"
    assert index["path"].startswith(str(cache / "invmap" / "index-"))


def test_a_first_run_removes_what_older_versions_left_in_the_cache(sh, tmp_path):
    """Round-one marshal caches, index files of the older naming and old temporaries go; anything
    else (a symlink, a recent temporary, a file of another name) stays."""
    folder = tmp_path / "cache" / "invmap"
    folder.mkdir(parents=True)
    folder.chmod(0o755)  # as round one made it
    old = ["catalog-01a9fc70.marshal", "index-01a9fc70.marshal", "index-0a7890b73d6d72284d82e376.sqlite3"]
    for name in old:
        (folder / name).write_bytes(b"x" * 100)
    stale = folder / ".index-abc123.tmp"
    stale.write_bytes(b"x")
    os.utime(stale, (1, 1))
    kept = [".index-fresh99.tmp", "notes.txt", "index-0a7890b73d6d72284d82e377.sqlite3.bak"]
    for name in kept:
        (folder / name).write_bytes(b"y")
    outside = tmp_path / "precious"
    outside.write_bytes(b"z")
    (folder / "index-11d32826f73f2bb6bb3d50a4.sqlite3").symlink_to(outside)
    result = sh("list", "--layer", "L3", "--limit", "1", env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.code == 0 and result.out.startswith("pagedattention")
    left = sorted(p.name for p in folder.iterdir())
    assert not set(old) & set(left) and stale.name not in left
    assert set(kept) <= set(left) and "index-11d32826f73f2bb6bb3d50a4.sqlite3" in left
    assert outside.read_bytes() == b"z"
    assert len([name for name in left if name.startswith("index-") and name.endswith(".sqlite3")]) == 2  # + the new one
    assert folder.stat().st_mode & 0o777 == 0o700


def test_add_takes_url_and_doi(cli, mine):
    options = add_args("U", url="https://example.org/u", doi="10.1234/xyz.5")
    added = json.loads(cli("--catalog", str(mine), "add", *options, "--json").out)
    assert (added["url"], added["doi"]) == ("https://example.org/u", "10.1234/xyz.5")
    shown = json.loads(cli("--catalog", str(mine), "show", "https://doi.org/10.1234/XYZ.5", "--json").out)
    assert shown["name"] == "U"


def test_record_new_result_type_id_and_output(cli, tmp_path):
    target = tmp_path / "sim.json"
    made = cli("record", "new", "mooncake", "--result-type", "simulated", "--id", "my-run", "--output", str(target))
    assert made.code == 0
    draft = json.loads(target.read_text(encoding="utf-8"))
    assert (draft["result_type"], draft["record_id"], draft["artifacts"]["source_id"]) == (
        "simulated",
        "my-run",
        "mooncake",
    )
    wrong = cli("record", "new", "mooncake", "--result-type", "guessed")
    assert wrong.code == 2 and "guessed" in wrong.err and wrong.out == ""


@pytest.mark.parametrize("command", ["list", "questions"])
def test_tables_stop_at_200_rows_unless_all(cli, tmp_path, command):
    import re

    path = generated_catalog(tmp_path / "gen.toml", 250)
    args = ["--catalog", str(path), command, "--format", "table", "--fields", "id"]
    capped, everything = cli(*args), cli(*args, "--all")

    def rows(text: str) -> int:
        return len(re.findall(r"(?m)^[a-z-]+-\d+\s*$", text))

    assert (rows(capped.out), rows(everything.out)) == (200, 250)
    assert capped.err == everything.err == ""  # the notice is for a person at a terminal
    on_terminal = screen(args, 80)
    assert rows("\n".join(on_terminal)) == 200 and "50 more rows; use --all" in on_terminal[-1]
    assert not any("more rows" in line for line in screen([*args, "--all"], 80))


def test_export_and_import_take_output_in_full(cli, tmp_path):
    markdown, catalog = tmp_path / "map.md", tmp_path / "map.toml"
    assert cli("export", "--output", str(markdown)).code == 0
    imported = cli("import", str(markdown), "--output", str(catalog))
    assert imported.code == 0 and imported.out == f"Wrote {catalog}: 30 sources\n"
    assert cli("--catalog", str(catalog), "check").code == 0
