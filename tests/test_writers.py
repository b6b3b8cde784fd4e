"""Writers: add, fmt, init, export and import keep files whole, and lose nothing."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import ASSETS, add_args, bash, installed_invmap

MINI_SOURCES = "\n".join(
    line for line in (ASSETS / "mini.toml").read_text(encoding="utf-8").split("[[sources]]", 1)[1:]
)


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


def test_add_knows_title_and_code(cli, mine):
    options = add_args("T", title="A Title", code="https://github.com/a/b")
    result = cli("--catalog", str(mine), "add", *options, "--json")
    assert result.code == 0
    added = json.loads(result.out)
    assert (added["title"], added["code"]) == ("A Title", "https://github.com/a/b")
    help_text = cli("add", "--help").out
    assert "--title" in help_text and "--code" in help_text


def test_add_takes_url_and_doi(cli, mine):
    options = add_args("U", url="https://example.org/u", doi="10.1234/xyz.5")
    added = json.loads(cli("--catalog", str(mine), "add", *options, "--json").out)
    assert (added["url"], added["doi"]) == ("https://example.org/u", "10.1234/xyz.5")
    shown = json.loads(cli("--catalog", str(mine), "show", "https://doi.org/10.1234/XYZ.5", "--json").out)
    assert shown["name"] == "U"


def test_export_and_import_take_output_in_full(cli, tmp_path):
    markdown, catalog = tmp_path / "map.md", tmp_path / "map.toml"
    assert cli("export", "--output", str(markdown)).code == 0
    imported = cli("import", str(markdown), "--output", str(catalog))
    assert imported.code == 0 and imported.out == f"Wrote {catalog}: 30 sources\n"
    assert cli("--catalog", str(catalog), "check").code == 0


def test_a_finished_write_keeps_its_status_whatever_signal_follows(tmp_path, mine):
    """`add` has replaced the file and is printing "Added ..." into a full pipe when SIGINT, SIGTERM
    and SIGHUP arrive: it still ends with 0 and says what it did."""
    import fcntl
    import signal
    import time

    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETFL, os.O_NONBLOCK)
    filled = 0
    try:
        while True:
            filled += os.write(write_end, b"x" * 4096)
    except BlockingIOError:
        pass
    fcntl.fcntl(write_end, fcntl.F_SETFL, 0)
    before = os.stat(mine).st_ino
    child = subprocess.Popen(
        [installed_invmap(), "--catalog", str(mine), "add", *add_args("Late")], stdout=write_end, stderr=subprocess.PIPE
    )
    os.close(write_end)
    deadline = time.monotonic() + 30
    while os.stat(mine).st_ino == before and time.monotonic() < deadline:
        time.sleep(0.005)
    assert os.stat(mine).st_ino != before, "the add never replaced the file"
    time.sleep(0.3)  # now blocked writing "Added" into the full pipe
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        child.send_signal(sig)
    time.sleep(0.1)
    out = b""
    while chunk := os.read(read_end, 65536):
        out += chunk
    os.close(read_end)
    assert child.wait(30) == 0, child.stderr.read()
    assert out[filled:] == f"Added late to {mine}\n".encode()


def test_fmt_keeps_crlf_and_a_bom_and_check_accepts_them(cli, mine):
    canonical = cli("--catalog", str(mine), "export", "--format", "toml").out
    mine.write_bytes(b"\xef\xbb\xbf" + canonical.replace("\n", "\r\n").encode())
    assert cli("--catalog", str(mine), "fmt", "--check").code == 0
    mine.write_bytes(b"\xef\xbb\xbf" + canonical.replace("\n", "\r\n").replace('"\r\n', '"   \r\n', 1).encode())
    assert cli("--catalog", str(mine), "fmt").code == 0
    assert mine.read_bytes() == b"\xef\xbb\xbf" + canonical.replace("\n", "\r\n").encode()


def test_add_keeps_a_bom_and_each_lines_ending(cli, mine):
    lines = mine.read_bytes().split(b"\n")
    mixed = b"\r\n".join(lines[:5]) + b"\n" + b"\n".join(lines[5:])  # CRLF first, then LF
    mine.write_bytes(b"\xef\xbb\xbf" + mixed)
    assert cli("--catalog", str(mine), "add", *add_args("Z")).code == 0
    data = mine.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf" + mixed)  # every byte that was there, BOM included
    added = data[len(b"\xef\xbb\xbf" + mixed) :]
    assert added.count(b"\r\n") == added.count(b"\n") > 5  # new lines take the first line's ending


def test_a_read_only_catalog_is_refused_and_left_alone(cli, mine):
    before = mine.read_bytes()
    mine.chmod(0o444)
    result = cli("--catalog", str(mine), "add", *add_args("Z"))
    assert (result.code, mine.read_bytes()) == (4, before)
    assert result.err == f"Error: cannot write {mine}: it is read-only (mode 0444)\n"


def test_a_hard_linked_catalog_gets_a_warning(cli, tmp_path, mine):
    os.link(mine, tmp_path / "other.toml")
    result = cli("--catalog", str(mine), "add", *add_args("Z"))
    assert result.code == 0
    assert result.err == (
        f"warning: {mine} has 1 other hard link: the rewritten file replaces this name only; "
        "the other names keep the old text\n"
    )


def test_replacing_a_file_keeps_its_owner_where_allowed(tmp_path, mine):
    if os.geteuid() != 0:
        import pytest

        pytest.skip("only root may give a file to another user")
    os.chown(mine, 1234, 1234)
    mine.chmod(0o640)
    done = subprocess.run([installed_invmap(), "--catalog", str(mine), "add", *add_args("Z")], capture_output=True)
    assert done.returncode == 0
    info = os.stat(mine)
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (1234, 1234, 0o640)


def test_output_paths_that_name_no_file(cli, tmp_path):
    result = cli("export", "-o", str(tmp_path / "newdir") + "/")
    assert result.code == 2 and not (tmp_path / "newdir").exists()
    assert result.err.startswith(f"Error: no such directory: {tmp_path / 'newdir'}/")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "x.md")
    result = cli("export", "-o", str(tmp_path / "dangling"))
    assert result.code == 2
    assert result.err == (
        f"Error: no such directory: {tmp_path / 'nowhere'} ({tmp_path / 'dangling'} is a symbolic link to "
        f"{tmp_path / 'nowhere' / 'x.md'})\n"
    )


def test_names_longer_than_the_file_system_allows_are_exit_4(tmp_path):
    long = "b" * 300
    for args in (["export", "-o", long], ["init", long], ["record", "new", "vllm", "-o", long]):
        done = subprocess.run([installed_invmap(), *args], capture_output=True, text=True, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (4, ""), (args, done.stderr)
        assert done.stderr == f"Error: File name too long: {long}\n", args
    done = subprocess.run([installed_invmap(), "records", long], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 4 and "Traceback" not in done.stderr


def test_help_and_version_on_broken_streams():
    program = installed_invmap()
    for args in (["--help"], [], ["--version"], ["list", "--help"], ["record", "new", "--help"]):
        full = bash(f"'{program}' {' '.join(args)} > /dev/full")
        closed = bash(f"'{program}' {' '.join(args)} >&-")
        assert full.returncode == closed.returncode == 4, (args, full.stderr, closed.stderr)
        assert full.stderr == "Error: cannot write to stdout: No space left on device\n", args
        assert closed.stderr == "Error: cannot write to stdout: it is closed\n", args
        gone = bash(f"'{program}' {' '.join(args)} | head -c0; echo ${{PIPESTATUS[0]}}")
        assert gone.stdout == "0\n" and gone.stderr == "", args


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize(("args", "status"), [("list --bogus", 2), ("show no-such-source", 1), ("list -n 1", 0)])
def test_an_unusable_stderr_changes_no_exit_status(args, status, buffered):
    """Python buffers stderr unless PYTHONUNBUFFERED is set: its final flush failing must not exit 120."""
    program = installed_invmap()
    unset = "unset PYTHONUNBUFFERED; " if buffered else "export PYTHONUNBUFFERED=1; "
    full = bash(f"{unset}'{program}' {args} 2>/dev/full >/dev/null")
    closed = bash(f"{unset}'{program}' {args} 2>&- >/dev/null")
    assert (full.returncode, closed.returncode, full.stdout, closed.stdout) == (status, status, "", "")


def test_a_pager_that_fails_is_an_error_and_one_that_cannot_start_prints(tmp_path):
    from conftest import screen

    failing = screen(["list", "--format", "table"], 200, env={"INVMAP_PAGER": "false"}, rows=20)
    assert failing == ["Error: the pager (false) failed with exit status 1; pass --no-pager or set INVMAP_PAGER=cat"]
    missing = screen(["list", "--format", "table"], 80, env={"INVMAP_PAGER": str(tmp_path / "no-such-pager")}, rows=20)
    assert any(line.startswith("kv-policy-lab") for line in missing)


def test_the_size_limit_holds_with_a_current_index(cli):
    assert cli("list", "--json").code == 0  # an index now exists
    result = cli("list", "--json", env={"INVMAP_MAX_CATALOG": "1K"})
    assert result.code == 3 and "larger than 1,024 bytes ($INVMAP_MAX_CATALOG sets the limit)" in result.err
    assert cli("list", "--json", env={"INVMAP_MAX_CATALOG": "9" * 19}).code == 0


def test_invmaps_own_files_are_replaced_whole_private_and_leave_signals_alone(tmp_path):
    """A cache or time stamp (links.json, the arXiv stamp) goes through the one writer: replaced whole,
    readable by its user only, no temporary left, and the command may still be interrupted after it."""
    import signal

    from invmap import writers

    own = tmp_path / "links.json"
    own.write_text("old", encoding="utf-8")
    os.chmod(own, 0o644)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    writers.replace_own_file(own, '{"new": 1}')
    assert own.read_text(encoding="utf-8") == '{"new": 1}' and os.stat(own).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["links.json"]
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == held  # a command's own write blocks them; this not


def test_an_afterword_that_looks_like_a_list_survives_export_and_import(cli, tmp_path, mine):
    """Afterword lines shaped like steps are escaped on export (`\\-`), so import keeps them in the
    afterword; a bare marker is not an empty step (hypothesis found `-\\t` refused as one)."""
    lines = ["- not a step", "3. nor this", "\\- written with its backslash", "-", "plain prose"]
    head = '[catalog]\ntitle = "T"\nprocedure = ["the one step"]\n'
    head += "afterword = " + json.dumps("\n".join(lines)) + "\n\n"
    catalog = tmp_path / "after.toml"
    catalog.write_text(head + mine.read_text(encoding="utf-8"), encoding="utf-8")
    markdown, back = tmp_path / "after.md", tmp_path / "back.toml"
    assert cli("--catalog", str(catalog), "export", "--output", str(markdown)).code == 0
    assert "\\- not a step\n3\\. nor this\n\\\\- written" in markdown.read_text(encoding="utf-8")
    imported = cli("import", str(markdown), "--output", str(back))
    assert imported.code == 0, imported.err
    import tomllib

    info = tomllib.loads(back.read_text(encoding="utf-8"))["catalog"]
    assert info["procedure"] == ["the one step"]
    assert info["afterword"] == "\n".join(lines)
