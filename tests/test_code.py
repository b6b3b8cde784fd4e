"""From mechanism to code: pinned places (permalinks), engine settings, and the facts around them."""

from __future__ import annotations

import json
import re

import pytest
import tomllib

from conftest import bash, installed_invmap, source_toml
from invmap.fields import FIELDS, KINDS, SETTINGS, TABLE_FIELDS
from invmap.model import COLUMN_FORMS

COMMIT = "c59cb7941357443da7c5eef75cfa8697d683d228"
HEX40 = re.compile(r"^[0-9a-f]{40}$")


@pytest.fixture
def shipped(cli) -> dict[str, dict]:
    return {r["id"]: r for r in json.loads(cli("list", "--json").out)}


# --- the shipped catalog's facts -------------------------------------------------------------------


def test_every_shipped_source_has_1_to_12_keywords(shipped):
    counts = {sid: len(r["keywords"]) for sid, r in shipped.items()}
    assert all(1 <= n <= 12 for n in counts.values()), {s: n for s, n in counts.items() if not 1 <= n <= 12}


def test_the_weak_keywords_are_gone(shipped):
    assert "continuous batching" not in shipped["distserve"]["keywords"]
    assert "parallel decoding" not in shipped["speculative-decoding"]["keywords"]
    assert "memory ballooning" not in shipped["prism"]["keywords"]


def test_every_shipped_place_is_a_permalink_at_its_commit(shipped):
    """Each place: a 40-hex commit, a relative path without '..', and a permalink built from them
    (`blob/` for a file, `tree/` for a folder, whose path ends in /)."""
    places = [(sid, p) for sid, r in shipped.items() for p in r["places"]]
    assert len(places) >= 30
    for sid, p in places:
        assert list(p) == ["repo", "path", "symbol", "note", "commit", "version", "url"], sid
        assert HEX40.match(p["commit"]) and re.match(COLUMN_FORMS["path"][0], p["path"]), (sid, p)
        assert p["repo"] == (p["repo"] if p["repo"] != shipped[sid]["code"] else shipped[sid]["code"])
        kind, path = ("tree", p["path"].rstrip("/")) if p["path"].endswith("/") else ("blob", p["path"])
        assert p["url"] == f"{p['repo']}/{kind}/{p['commit']}/{path}", sid
        assert ".." not in p["path"].split("/") and not p["path"].startswith("/")


def test_the_seams_a_reader_found_wrong_now_point_at_the_code_that_is_there(shipped):
    lmcache = [p["path"] for p in shipped["lmcache"]["places"]]
    assert "lmcache/v1/cache_engine.py" in lmcache and "lmcache/cache_engine.py" not in lmcache
    assert "lmcache/v1/storage_backend/" in lmcache and "lmcache/integration/vllm/vllm_v1_adapter.py" in lmcache
    assert "lmcache/v1/cache_engine.py" in shipped["lmcache"]["seam"]
    repos = {p["repo"] for p in shipped["llm-d"]["places"]}
    assert repos == {
        "https://github.com/llm-d/llm-d",
        "https://github.com/llm-d/llm-d-inference-scheduler",
        "https://github.com/llm-d/llm-d-kv-cache",
    }
    paged = [p["path"] for p in shipped["pagedattention"]["places"]]
    assert {"vllm/v1/core/single_type_kv_cache_manager.py", "vllm/v1/worker/block_table.py"} <= set(paged)
    assert "pipeline/src/" in [p["path"] for p in shipped["nanoflow"]["places"]]
    assert shipped["distserve"]["seam"] and shipped["distserve"]["places"]


@pytest.mark.parametrize("sid", ["lmcache", "llm-d", "pagedattention", "distserve"])
def test_show_prints_each_place_as_a_permalink_under_where_to_look(cli, shipped, sid):
    out = cli("show", sid, "--format", "table", "--color", "never", env={"COLUMNS": "100"}).out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Where to look"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i][:1] != " ")
    block = "\n".join(lines[start:end])
    for n, p in enumerate(shipped[sid]["places"], 1):
        whole = re.sub(r"/\n +", "/", block)  # a permalink broken after a slash, read whole again
        assert f"{n}. {p['path']}" in block and p["url"] in whole.split(), (sid, n)


def test_settings_cover_the_mechanisms_the_issue_names(shipped):
    wanted = [
        "pagedattention",
        "orca",
        "sarathi-serve",
        "speculative-decoding",
        "speculative-sampling",
        "flashattention",
        "flashinfer",
        "distserve",
        "mooncake",
        "lmcache",
        "sglang",
        "vllm",
        "llm-d",
    ]
    assert all(shipped[s]["settings"] for s in wanted), [s for s in wanted if not shipped[s]["settings"]]
    flags = {(x["engine"], x["flag"]) for r in shipped.values() for x in r["settings"]}
    assert {
        ("vLLM", "--enable-chunked-prefill"),
        ("vLLM", "--enable-prefix-caching"),
        ("vLLM", "--kv-cache-dtype"),
    } <= flags
    assert {("SGLang", "--chunked-prefill-size"), ("SGLang", "--disable-radix-cache")} <= flags
    assert {("SGLang", "--speculative-algorithm"), ("SGLang", "--disaggregation-mode")} <= flags
    assert {
        ("TensorRT-LLM", "enable_chunked_prefill"),
        ("TensorRT-LLM", "--enable_chunked_prefill"),
        ("TensorRT-LLM", "kv_cache_config.enable_block_reuse"),
        ("TensorRT-LLM", "speculative_config"),
        ("TensorRT-LLM", "cache_transceiver_config.backend"),
    } <= flags
    for r in shipped.values():
        for x in r["settings"]:
            assert list(x) == list(SETTINGS.names) and x["version"] and x["file"], r["id"]


def _settings(shipped):
    return [(sid, x) for sid, r in shipped.items() for x in r["settings"]]


def test_every_setting_and_place_says_the_version_and_commit_it_was_read_at(shipped):
    """A setting names its version and file; every setting of one engine at one version has that
    version's one commit (none lacks it while another has it); a place read at a release's commit
    carries the release's version; a version that is a tag is never a main@ label."""
    settings = _settings(shipped)
    pins: dict[tuple[str, str], set] = {}
    for sid, x in settings:
        assert x["version"] and x["file"] and re.match(COLUMN_FORMS["path"][0], x["file"]), (sid, x)
        pins.setdefault((x["engine"], x["version"]), set()).add(x["commit"])
    assert all(len(commits) == 1 for commits in pins.values()), {k: v for k, v in pins.items() if len(v) > 1}
    released = {next(iter(c)): v for (_, v), c in pins.items() if re.match(r"^v\d", v) and None not in c}
    assert {"v0.30.0", "v3.3.7"} <= set(released.values())  # vLLM and TGI read at release tags
    assert not any(x["version"].startswith("main@") for _, x in settings)
    for sid, r in shipped.items():
        for p in r["places"]:
            assert HEX40.match(p["commit"]), (sid, p)
            if p["commit"] in released:
                assert p["version"] == released[p["commit"]], (sid, p)


def test_a_version_that_is_no_release_is_its_commit_and_tensorrt_llm_s_say_where_they_were_read(shipped):
    """A version that is not a release tag is the first 12 hex digits of the commit it names (no
    label without its commit); TensorRT-LLM, read at named commits, gives each setting its commit, the
    file it was read from and a default in its note (issue 44: trtllm-serve and LLM API options)."""
    settings = _settings(shipped)
    for sid, x in settings:
        if not re.match(r"^v\d", x["version"]):
            assert x["commit"] and x["version"] == x["commit"][:12], (sid, x)
    trt = [(sid, x) for sid, x in settings if x["engine"] == "TensorRT-LLM"]
    assert {sid for sid, _ in trt} >= {"sarathi-serve", "pagedattention", "sglang", "speculative-decoding", "distserve"}
    files = {x["file"]: x["commit"] for _, x in trt}
    assert files == {
        "tensorrt_llm/llmapi/llm_args.py": "0004396720054fd8e205cbf616f21f0b57c6b412",
        "tensorrt_llm/commands/serve.py": "00209af149e7774406881a37283dce303571eb11",
    }
    for sid, x in trt:
        assert re.search(r"\bdefault\b|\bunset\b", x["note"]), (sid, x)  # a default, stated
        cli_flag = x["file"].endswith("serve.py")
        assert x["flag"].startswith("--") == cli_flag, (sid, x)  # trtllm-serve flags; LLM API keys, dotted
        assert cli_flag or re.match(r"^[a-z_]+(\.[a-z_]+)*$", x["flag"]), (sid, x)


def test_docs_settings_block_runs_as_written(tmp_path):
    """docs/settings.md's "Where to look and engine settings" block, line by line as a user types it."""
    import os
    import subprocess
    from pathlib import Path

    from conftest import REPO

    page = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    block = re.search(r"# Where to look and engine settings\n.*?```sh\n(.*?)```", page, re.S).group(1)
    lines = [line.split(" # ")[0].strip() for line in block.splitlines() if line.strip()]
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    env["PATH"] = f"{Path(installed_invmap()).parent}:{env['PATH']}"
    outs = {}
    for line in lines:
        done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path, env=env)
        assert (done.returncode, done.stderr) == (0, ""), line
        outs[line] = done.stdout
    shipped = {s["id"]: s for s in tomllib.loads((REPO / "catalog.toml").read_text(encoding="utf-8"))["sources"]}
    trt = [s for s in shipped["sarathi-serve"]["settings"] if s["engine"] == "TensorRT-LLM"]
    assert outs["invmap settings sarathi-serve --engine tensorrt-llm"] == "".join(
        f"TensorRT-LLM\t{s['flag']}\t{s['version']}\t{s['note']}\n" for s in trt
    )
    assert outs["invmap open --code lmcache --place 1 --print"].startswith("https://github.com/LMCache/LMCache/blob/")
    vllm = [s["flag"] for s in shipped["sarathi-serve"]["settings"] if s["engine"] == "vLLM"]
    assert outs["invmap settings sarathi-serve --engine vllm --json | jq -r '.[].flag'"].split() == vllm


def test_no_setting_names_a_deprecated_flag_without_saying_so(shipped):
    """The known deprecations are the settings that say so; any other setting naming the same
    variable or flag of that engine says so too, and the replacement is a current setting."""
    settings = _settings(shipped)
    known = {(x["engine"], x["flag"].split("=")[0]): x["deprecated"] for _, x in settings if x["deprecated"]}
    assert ("vLLM", "VLLM_ATTENTION_BACKEND") in known and ("vLLM", "--swap-space") in known
    current = {(x["engine"], x["flag"]) for _, x in settings if not x["deprecated"]}
    for sid, x in settings:
        if (x["engine"], x["flag"].split("=")[0]) in known:
            assert x["deprecated"] == known[(x["engine"], x["flag"].split("=")[0])], (sid, x)
            assert re.match(COLUMN_FORMS["deprecation"][0], x["deprecated"]), (sid, x)
        if x["replaced_by"]:
            assert x["deprecated"] and (x["engine"], x["replaced_by"].split()[0]) in current, (sid, x)


def test_show_and_settings_state_a_deprecation_with_its_version_and_replacement(cli, shipped):
    gone = next(x for x in shipped["flashinfer"]["settings"] if x["deprecated"])
    table = cli("show", "flashinfer", "--format", "table", "--color", "never", env={"COLUMNS": "200"}).out
    assert SETTINGS.human([gone]) == f"{gone['engine']} {gone['flag']} (deprecated)"  # a table cell's label
    assert f"({gone['version']}); {gone['deprecated']}; use {gone['replaced_by']}" in " ".join(table.split())
    rows = cli("settings", "flashinfer", "--engine", "vllm").out.splitlines()
    assert (
        f"vLLM\t{gone['flag']}\t{gone['version']}\t{gone['note']}\t{gone['deprecated']}\t{gone['replaced_by']}" in rows
    )


def test_bibtex_year_follows_the_venue_and_a_page_link_is_written_once(cli, shipped):
    text = cli("export", "--format", "bibtex").out
    entries = {m.group(1): m.group(0) for m in re.finditer(r"@\w+\{([\w-]+),\n(?:.*\n)*?\}\n", text)}
    for sid in ("nanoflow", "vattention"):
        assert shipped[sid]["year"] == 2024 and "  year = {2025}," in entries[sid], sid
    assert "  year = {2023}," in entries["pagedattention"]
    for sid, r in shipped.items():
        if (r["entry_type"] or "misc") == "misc" and r["url"]:
            assert entries[sid].count(r["url"]) == 1, sid
    assert "  eprint = {2505.04021v1}," in entries["prism"]
    assert shipped["prism"]["url"] == "https://arxiv.org/abs/2505.04021v1"


# --- places and settings in a catalog of one's own -------------------------------------------------


def test_edit_place_and_setting_write_inline_tables_that_read_back(cli, mine):
    place = f"path=vllm/v1/core/block_pool.py;symbol=BlockPool;note=the block pool;commit={COMMIT}"
    folder = f"repo=https://github.com/LMCache/LMCache;path=lmcache/v1/storage_backend/;commit={COMMIT}"
    edited = cli(
        "--catalog",
        str(mine),
        "edit",
        "pagedattention",
        "--code",
        "https://github.com/vllm-project/vllm",
        "--place",
        place,
        "--place",
        folder,
        "--setting",
        "engine=vLLM;flag=--enable-prefix-caching",
    )
    assert edited.code == 0, edited.err
    text = mine.read_text(encoding="utf-8")
    assert (
        'places = [\n    { path = "vllm/v1/core/block_pool.py", symbol = "BlockPool", note = "the block pool", '
        f'commit = "{COMMIT}" }},\n' in text
    )
    assert "[[places]]" not in text and "[[sources.places]]" not in text
    assert tomllib.loads(text)["sources"][0]["settings"] == [{"engine": "vLLM", "flag": "--enable-prefix-caching"}]
    assert cli("--catalog", str(mine), "fmt", "--check").code == 0
    record = json.loads(cli("--catalog", str(mine), "show", "pagedattention", "--json").out)
    assert record["places"] == [
        {
            "repo": "https://github.com/vllm-project/vllm",
            "path": "vllm/v1/core/block_pool.py",
            "symbol": "BlockPool",
            "note": "the block pool",
            "commit": COMMIT,
            "version": None,
            "url": f"https://github.com/vllm-project/vllm/blob/{COMMIT}/vllm/v1/core/block_pool.py",
        },
        {
            "repo": "https://github.com/LMCache/LMCache",
            "path": "lmcache/v1/storage_backend/",
            "symbol": None,
            "note": None,
            "commit": COMMIT,
            "version": None,
            "url": f"https://github.com/LMCache/LMCache/tree/{COMMIT}/lmcache/v1/storage_backend",
        },
    ]
    assert record["settings"] == [
        {"engine": "vLLM", "flag": "--enable-prefix-caching", **dict.fromkeys(SETTINGS.names[2:])}
    ]
    again = cli("--catalog", str(mine), "edit", "pagedattention", "--place", f"path=a.py;commit={COMMIT}")
    assert again.code == 0
    assert [
        p["path"] for p in json.loads(cli("--catalog", str(mine), "show", "pagedattention", "--json").out)["places"]
    ] == ["a.py"]  # the items given replace the list
    assert cli("--catalog", str(mine), "edit", "pagedattention", "--unset", "places,settings").code == 0
    record = json.loads(cli("--catalog", str(mine), "show", "pagedattention", "--json").out)
    assert (record["places"], record["settings"]) == ([], [])


@pytest.mark.parametrize(
    "value, message",
    [
        ("path=a.py", "Error: --place needs commit in 'path=a.py'\n"),
        (
            f"file=a.py;commit={COMMIT}",
            "Error: --place takes key=value pairs joined by ';' (keys: repo, path, symbol, note, commit, version), not 'file=a.py'\n",
        ),
        (
            f"path=a.py;path=b.py;commit={COMMIT}",
            f"Error: --place gives 'path' twice in 'path=a.py;path=b.py;commit={COMMIT}'\n",
        ),
    ],
)
def test_a_malformed_place_is_a_usage_error_that_changes_nothing(cli, mine, value, message):
    before = mine.read_text(encoding="utf-8")
    result = cli("--catalog", str(mine), "edit", "pagedattention", "--place", value)
    assert (result.code, result.out, result.err) == (2, "", message)
    assert mine.read_text(encoding="utf-8") == before


CHECKED = source_toml("x", name="X", year=None, extra="{code}places = [\n    {{ {place} }},\n]\n")


@pytest.mark.parametrize(
    "code, place, problem",
    [
        (
            'code = "https://github.com/a/b"\n',
            'path = "a.py", commit = "abc"',
            "field 'places[0].commit': 'abc' is not a commit: 40 lowercase hex digits",
        ),
        (
            'code = "https://github.com/a/b"\n',
            f'path = "a/../b.py", commit = "{COMMIT}"',
            "field 'places[0].path': 'a/../b.py' is not a path relative to the repository's root, without '..' (a folder ends in /)",
        ),
        (
            'code = "https://github.com/a/b"\n',
            f'path = "/etc/passwd", commit = "{COMMIT}"',
            "field 'places[0].path': '/etc/passwd' is not a path relative to the repository's root, without '..' (a folder ends in /)",
        ),
        ('code = "https://github.com/a/b"\n', 'path = "a.py"', "field 'places[0]': missing required key 'commit'"),
        (
            'code = "https://github.com/a/b"\n',
            f'path = "a.py", commit = "{COMMIT}", line = "3"',
            "field 'places[0]': unknown key 'line' (its keys: repo, path, symbol, note, commit, version)",
        ),
        (
            "",
            f'path = "a.py", commit = "{COMMIT}"',
            "field 'places[0]': no repo, and the source has no code to default to",
        ),
    ],
)
def test_check_names_the_item_and_key_of_a_bad_place(cli, tmp_path, code, place, problem):
    path = tmp_path / "bad.toml"
    path.write_text(CHECKED.format(code=code, place=place), encoding="utf-8")
    result = cli("--catalog", str(path), "check")
    assert result.code == 3 and result.out == ""
    assert result.err == f"Error: {path}:1:1: source 1 (x): {problem}\n"  # check names the line and column


def test_check_links_asks_each_permalink(cli, tmp_path):
    """A refused connection is dead: the permalink is asked (and reported under its own field)."""
    path = tmp_path / "links.toml"
    path.write_text(
        CHECKED.format(code='code = "http://127.0.0.1:9/repo"\n', place=f'path = "a.py", commit = "{COMMIT}"'),
        encoding="utf-8",
    )
    result = cli("--catalog", str(path), "check", "--links", "--json", "--alive", "--timeout", "1")
    fields = {(r["field"], r["url"]) for r in json.loads(result.out)}
    assert ("places[0]", f"http://127.0.0.1:9/repo/blob/{COMMIT}/a.py") in fields and (
        "code",
        "http://127.0.0.1:9/repo",
    ) in fields


# --- open, settings, search, the machine forms ----------------------------------------------------


def test_open_code_place_prints_the_nth_permalink(cli, shipped):
    out = cli("open", "--code", "lmcache", "--place", "2", "--print")
    assert (out.code, out.out) == (0, shipped["lmcache"]["places"][1]["url"] + "\n")
    assert cli("open", "--code", "lmcache", "--print").out == "https://github.com/LMCache/LMCache\n"
    far = cli("open", "--code", "lmcache", "--place", "9", "--print")
    assert (far.code, far.out, far.err) == (
        1,
        "",
        "Error: LMCache (lmcache) has 3 places in its code, not 9 (see 'invmap show lmcache')\n",
    )
    none = cli("open", "--code", "gqa", "--place", "1", "--print")
    assert (none.code, none.err) == (1, "Error: GQA (gqa) has no pinned places in its code\n")
    bare = cli("open", "lmcache", "--place", "1", "--print")
    assert bare.code == 2 and bare.err.startswith("Error: --place needs --code")


def test_settings_lists_one_row_a_flag(cli, shipped):
    rows = json.loads(cli("settings", "pagedattention", "--json").out)
    assert rows == [
        {"id": "pagedattention", "name": "PagedAttention", **s} for s in shipped["pagedattention"]["settings"]
    ]
    plain = cli("settings", "pagedattention", "--engine", "sglang").out
    assert plain == "".join(
        f"{s['engine']}\t{s['flag']}\t{s['version']}\t{s['note']}\n"
        for s in shipped["pagedattention"]["settings"]
        if s["engine"] == "SGLang"
    )
    every = json.loads(cli("settings", "--engine", "TGI,vllm", "--json").out)
    expected = [
        {"id": r["id"], "name": r["name"], **s}
        for r in shipped.values()
        for s in r["settings"]
        if s["engine"] in ("TGI", "vLLM")
    ]
    assert every == expected and {r["engine"] for r in every} == {"TGI", "vLLM"}
    gqa = cli("settings", "gqa")
    assert (gqa.code, gqa.err) == (1, "Error: no settings for gqa: the catalog names no engine flag for it\n")
    wrong = cli("settings", "lmcache", "--engine", "tgi")
    named = ", ".join(dict.fromkeys(s["engine"] for s in shipped["lmcache"]["settings"]))
    assert named == "vLLM, SGLang, TensorRT-LLM"
    assert (wrong.code, wrong.err) == (1, f"Error: no tgi settings for lmcache (engines named: {named})\n")


def test_settings_of_is_the_core_the_commands_share(cli, shipped):
    from invmap.engines import settings_of

    records = [shipped["sglang"], shipped["lmcache"]]
    assert settings_of(records, ["SGLANG"]) == json.loads(
        cli("settings", "sglang", "lmcache", "--engine", "sglang", "--json").out
    )


def test_search_looks_at_paths_notes_and_flags_after_the_other_fields(cli):
    def hits(*words):
        return [(r["id"], r["matched"][0]) for r in json.loads(cli("search", "--json", *words).out)]

    assert hits("moveKVcacheKernel") == [("nanoflow", "places")]  # a symbol no other field holds
    assert hits("places:radix") == [("sglang", "places")]
    assert {i for i, _ in hits("--in", "settings", "--", '"disaggregation-mode"')} == {"distserve", "sglang"}
    whys = [r["why"] for r in json.loads(cli("search", "--json", "--fields", "id,matched,why", "kv", "cache").out)]
    assert not any(w.startswith(("places:", "settings:")) for w in whys[:3])  # another field matched: it says why
    ranked = json.loads(cli("search", "paged", "attention", "--json").out)
    assert ranked[0]["id"] == "pagedattention"
    scores = [r["score"] for r in json.loads(cli("search", "block", "pool", "--json", "--limit", "30").out)]
    assert scores == sorted(scores, reverse=True)  # a hit in places alone never ranks above the others


def test_machine_forms_are_permalinks_and_engine_flags(cli, shipped):
    line = cli("list", "--fields", "id,places,settings", "--format", "tsv").out.splitlines()
    row = dict(zip(line[0].split("\t"), next(r for r in line[1:] if r.startswith("distserve\t")).split("\t")))
    assert row["places"] == ";".join(p["url"] for p in shipped["distserve"]["places"])
    assert row["settings"] == ";".join(f"{s['engine']} {s['flag']}" for s in shipped["distserve"]["settings"])


def test_every_list_of_tables_field_declares_columns_the_model_checks():
    for name in TABLE_FIELDS:
        kind = KINDS[name]
        assert kind.many and all(c.form in COLUMN_FORMS for c in kind.columns), name
        field = next(f for f in FIELDS if f.name == name)
        parsed = kind.parse([field.example])
        assert [sorted(p) for p in parsed] == [sorted(k for k in kind.names if k in parsed[0])]
        assert kind.unrow(kind.row(kind.json(parsed))) == kind.json(parsed)


def test_a_permalink_is_an_osc8_hyperlink_on_a_terminal_only(sh):
    program = installed_invmap()
    on = bash(
        f"script -qec \"stty cols 200; '{program}' show lmcache\" /dev/null", INVMAP_PAGER="cat", TERM="xterm-256color"
    ).stdout
    url = "https://github.com/LMCache/LMCache/blob/3bafe17fbd0b153a56d6507e264d74097f0e8cc1/lmcache/v1/cache_engine.py"
    assert re.search(r"\x1b\]8;[^;\x1b]*;" + re.escape(url), on)  # the permalink, linked
    piped = sh("show", "lmcache", "--format", "table", "--color", "always").out
    assert url in piped and "\x1b]8;" not in piped
