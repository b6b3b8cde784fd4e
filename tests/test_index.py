"""The SQLite index: built, trusted, kept current, private, and never in the way."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import ASSETS, generated_catalog, installed_invmap


def where_index(sh, catalog: Path) -> dict:
    return json.loads(sh("--catalog", str(catalog), "where", "--json").out)["index"]


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


def test_where_diagnoses_a_broken_catalog(sh):
    broken = ASSETS / "broken" / "syntax.toml"
    result = sh("--catalog", str(broken), "where", "--json")
    assert result.code == 0 and json.loads(result.out)["index"]["state"] == "missing"


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


def test_a_symlinked_cache_folder_is_never_followed(sh, tmp_path):
    cache, victim = tmp_path / "cache", tmp_path / "victim"
    cache.mkdir()
    victim.mkdir()
    victim.chmod(0o755)
    (cache / "invmap").symlink_to(victim)
    result = sh("list", "--json", env={"XDG_CACHE_HOME": str(cache), "INVMAP_TRACE": "1"})
    assert result.code == 0 and result.err == "invmap: index: in memory\n"
    assert (victim.stat().st_mode & 0o777, list(victim.iterdir())) == (0o755, [])


def test_a_filtered_search_costs_no_more_than_an_unfiltered_one(tmp_path):
    """A layer filter over a large catalog is applied after one full-text match, never by running the
    match once per selected source (that made `triage` and `search --layer L3` quadratic: minutes at
    100,000 sources). Same order as the unfiltered search, and timed against it in the same run."""
    import time

    from invmap import query
    from invmap.index import open_catalog
    from invmap.location import locate

    path = generated_catalog(tmp_path / "big.toml", 4_000)
    index = open_catalog(locate(str(path)))
    words = ["kv", "cache", "full"]
    every = query.build_filters(index, {})
    level = query.build_filters(index, {"layer": ["L3"]})

    def timed(filters) -> tuple[float, list[int]]:
        best, hits = math.inf, []
        for _ in range(3):
            start = time.perf_counter()
            hits = query.ranked(index, filters, words)
            best = min(best, time.perf_counter() - start)
        return best, [h.rowid for h in hits]

    all_time, all_hits = timed(every)
    l3_time, l3_hits = timed(level)
    in_l3 = {r["pos"] for r in index.records(level.where, level.params, ("pos",))}
    assert l3_hits == [pos for pos in all_hits if pos in in_l3] and len(l3_hits) > 300
    assert l3_time <= 2 * all_time + 0.02, (l3_time, all_time)


# Sources whose keys hold what JSON escapes or encodes (a quote, a backslash, CJK, characters outside
# the BMP, an upper-case link): a build hands each chunk's keys to SQLite as one JSON array.
AWKWARD = [
    ("quoted", 'The "Quoted" Engine', 'https://Example.ORG/a"b/'),
    ("backslash", "Back\\slash Serving", "https://example.org/back"),
    ("cjk", "分离部署", "https://example.org/%E5%88%86"),
    ("astral", "𝔽lash 🚀 Decode", "https://example.org/astral"),
]


def _awkward_catalog(path: Path) -> Path:
    tables = [
        f"[[sources]]\nid = {json.dumps(i)}\nname = {json.dumps(name, ensure_ascii=False)}\n"
        f'source = "{i} paper"\nurl = {json.dumps(url)}\ntype = "Current"\nlayer = "L3"\nmechanism = "m."\n'
        'objective = "o."\nquestion = "q?"\navailability = "a."\naccessed = 2026-08-07\n'
        for i, name, url in AWKWARD
    ]
    path.write_text("\n".join(tables), encoding="utf-8")
    return path


def test_keys_written_through_json_are_the_keys_bound_row_by_row(sh, tmp_path, monkeypatch):
    from invmap import catalog as catalog_io
    from invmap.index import fill as fill_module

    path = _awkward_catalog(tmp_path / "awkward.toml")

    def keys_table(through_json: bool) -> list[tuple]:
        monkeypatch.setattr(fill_module, "JSON_EACH", through_json)
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        fill_module.fill(con, catalog_io.load(str(path)), None)
        return con.execute("SELECT rowid, key, kind, pos FROM keys ORDER BY rowid").fetchall()

    if fill_module.JSON_EACH:
        assert keys_table(True) == keys_table(False)
    keys = [k[1:] for k in keys_table(fill_module.JSON_EACH)]
    assert ("分离部署", "name", 2) in keys and ('link:example.org/a"b', "link", 0) in keys and len(keys) == 4 * 4
    for i, name, url in AWKWARD:
        for asked in (name, url.replace("https://", "http://").replace("example.org", "EXAMPLE.org")):
            shown = sh("--catalog", str(path), "show", asked, "--json")
            assert shown.code == 0 and json.loads(shown.out)["id"] == i, (asked, shown.err)
