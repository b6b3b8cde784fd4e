"""Under load and damage: parallel readers, a damaged index, racing writers — each through the real
program, as scripts run it (`xargs -P`, `&` and `wait`)."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ASSETS, add_args, bash, generated_catalog, installed_invmap


def index_file(sh, catalog: str | None = None) -> Path:
    args = ("--catalog", catalog) if catalog else ()
    state = json.loads(sh(*args, "where", "--json").out)["index"]
    assert state["state"] == "current", state
    return Path(state["path"])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- parallel readers ---------------------------------------------------------------------------


def test_many_parallel_readers_all_succeed_and_agree(sh, tmp_path):
    expected = sh("show", "paged atention", "--json")
    assert expected.code == 0
    program = installed_invmap()
    done = bash(
        f"cd '{tmp_path}' && seq 64 | xargs -P 32 -I{{}} sh -c "
        f'\'"{program}" show "paged atention" --json > "$0".out 2> "$0".err; echo $? > "$0".rc\' {{}}'
    )
    assert done.returncode == 0, done.stderr
    codes = [(tmp_path / f"{n}.rc").read_text().strip() for n in range(1, 65)]
    errs = [(tmp_path / f"{n}.err").read_text() for n in range(1, 65)]
    outs = {(tmp_path / f"{n}.out").read_text() for n in range(1, 65)}
    assert codes == ["0"] * 64
    assert errs == [""] * 64
    assert outs == {expected.out}


def test_readers_never_fail_while_others_rebuild(sh, tmp_path):
    """A large catalog changed under running readers: each reader either reads the old index or builds
    (or waits for) the new one; none fails, and the last answer is the new text."""
    catalog = generated_catalog(tmp_path / "big.toml", 1500)
    first = json.loads(sh("--catalog", str(catalog), "list", "--limit", "1", "--json").out)[0]["id"]
    program = installed_invmap()
    procs = []
    for n in range(3):
        if n == 1:  # the catalog changes while the first readers run
            text = catalog.read_text(encoding="utf-8")
            catalog.write_text(text.replace("[[sources]]", "[[sources]]", 1) + "\n", encoding="utf-8")
        for _ in range(4):
            procs.append(
                subprocess.Popen(
                    [program, "--catalog", str(catalog), "show", "--json", first],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
    results = [(p.wait(), *p.communicate()) for p in procs]
    assert [(code, err) for code, _, err in results] == [(0, "")] * 12
    assert {json.loads(out)["id"] for _, out, _ in results} == {first}


def test_a_query_never_writes_its_index(sh):
    sh("list")
    path = index_file(sh)
    before = (digest(path), path.stat().st_mtime_ns)
    for args in (("list", "--json"), ("show", "vllm"), ("search", "kv", "cache"), ("stats",), ("--version",)):
        assert sh(*args).code == 0
    assert (digest(path), path.stat().st_mtime_ns) == before


def test_where_json_has_no_use_counter(sh):
    sh("list")
    state = json.loads(sh("where", "--json").out)["index"]
    assert sorted(state) == ["path", "sources", "state"]


# --- a damaged index ----------------------------------------------------------------------------

COMMANDS = [
    ("--version",),
    ("list", "--json"),
    ("where", "--json"),
    ("stats", "--json"),
    ("export", "--format", "csv"),
    ("show", "vllm", "--json"),
    ("search", "kv", "cache", "--json"),
    ("layers", "--json"),
]


def test_random_damage_to_the_index_is_never_a_failure(cli, sh):
    """50 random bytes of the index changed, 12 times over: every command still answers. (A change
    that still reads as valid text inside a cell is out of scope: the README says so.)"""
    sh("list")
    path = index_file(sh)
    pristine = path.read_bytes()
    for seed in range(12):
        data = bytearray(pristine)
        rng = random.Random(seed)
        for _ in range(50):
            data[rng.randrange(len(data))] ^= rng.randrange(1, 256)
        path.write_bytes(bytes(data))
        for args in COMMANDS:
            result = cli(*args)
            assert result.code == 0 and result.err == "", (seed, args, result.err)


@pytest.mark.parametrize(
    "damage",
    [
        "header",  # the file's first bytes: not a database at all
        "truncated",  # half the file gone
        "invalid-utf8",  # a cell's text no longer UTF-8: a decoding error mid-read
        "row-count",  # a row missing: the index no longer holds what it says it holds
    ],
)
def test_a_damaged_index_is_rebuilt_and_answers_as_before(cli, sh, damage):
    expected = {args: cli(*args).out for args in COMMANDS}
    path = index_file(sh)
    data = path.read_bytes()
    if damage == "header":
        data = b"\0" * 100 + data[100:]
    elif damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "invalid-utf8":
        at = data.index(b"Map logical KV blocks")
        data = data[:at] + b"\xff\xfe" + data[at + 2 :]
    path.write_bytes(data)
    if damage == "row-count":
        import sqlite3

        con = sqlite3.connect(path)
        con.execute("DELETE FROM sources WHERE id = 'vllm'")
        con.commit()
        con.close()
    traced = sh("list", "--json", env={"INVMAP_TRACE": "1"})
    assert traced.code == 0 and traced.out == expected[("list", "--json")]
    assert "invmap: index: built" in traced.err or "invmap: index: damaged, rebuilding" in traced.err
    for args in COMMANDS:
        result = cli(*args)
        assert (result.code, result.out, result.err) == (0, expected[args], ""), args


def test_an_index_is_synced_before_it_takes_its_name():
    """The build writes a temporary file, fsyncs it, then renames it (and fsyncs the folder)."""
    source = (Path(__file__).parent.parent / "src" / "invmap" / "index" / "building.py").read_text(encoding="utf-8")
    build = source[source.index("def build(") :]
    assert build.index("_sync(tmp)") < build.index("os.replace(tmp, target)") < build.index("_sync(where)")


# --- racing writers -----------------------------------------------------------------------------


def test_export_onto_the_catalog_racing_adds_loses_nothing(tmp_path):
    catalog = tmp_path / "cat.toml"
    shutil.copy(ASSETS / "mini.toml", catalog)
    program = installed_invmap()
    procs = []
    for n in range(12):
        procs.append(
            subprocess.Popen(
                [program, "--catalog", str(catalog), "add", *add_args(f"Race{n}")],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
        procs.append(
            subprocess.Popen(
                [program, "--catalog", str(catalog), "export", "--format", "toml", "-o", str(catalog), "--force"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = [(p.wait(), *p.communicate()) for p in procs]
    assert all(code == 0 for code, _, _ in outs), outs
    added = sum(out.startswith("Added ") for _, out, _ in outs)
    assert added == 12
    ids = {s["id"] for s in json.loads(subprocess.check_output([program, "-c", str(catalog), "list", "--json"]))}
    assert {f"race{n}" for n in range(12)} <= ids
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cat.toml"]  # no lock file, no temporary


def test_import_onto_a_file_racing_adds_keeps_one_whole_text(tmp_path):
    """import -o FILE --force builds its text before the lock: what lands is one writer's whole text."""
    catalog = tmp_path / "cat.toml"
    shutil.copy(ASSETS / "mini.toml", catalog)
    program = installed_invmap()
    procs = [
        subprocess.Popen(
            [program, "import", str(ASSETS / "seed.md"), "-o", str(catalog), "--force"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(6)
    ]
    assert all(p.wait() == 0 for p in procs)
    assert subprocess.run([program, "-c", str(catalog), "check"], capture_output=True).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cat.toml"]


def test_writers_leave_nothing_beside_the_file(sh, tmp_path):
    catalog = tmp_path / "mine.toml"
    assert sh("init", str(catalog)).code == 0
    assert sh("--catalog", str(catalog), "add", *add_args("Beside")).code == 0
    assert sh("--catalog", str(catalog), "fmt").code == 0
    assert sh("export", "--format", "csv", "-o", str(tmp_path / "out.csv")).code == 0
    assert sh("export", "--format", "csv", "-o", str(tmp_path / "out.csv"), "--force").code == 0
    assert sh("import", str(ASSETS / "seed.md"), "-o", str(tmp_path / "imported.toml")).code == 0
    assert sh("record", "new", "vllm", "-o", str(tmp_path / "r.json")).code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imported.toml", "mine.toml", "out.csv", "r.json"]


def test_creating_a_file_never_replaces_one_made_meanwhile(tmp_path):
    """Six `init`s of one new path at once: exactly one writes it, the others are told it exists."""
    program = installed_invmap()
    target = tmp_path / "new.toml"
    procs = [
        subprocess.Popen([program, "init", str(target)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    results = [(p.wait(), *p.communicate()) for p in procs]
    assert sorted(code for code, _, _ in results) == [0, 2, 2, 2, 2, 2]
    assert all("already exists" in err for code, _, err in results if code == 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.toml"]
