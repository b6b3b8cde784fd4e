"""Writers: add, fmt, init, export and import keep files whole, and lose nothing."""

from __future__ import annotations

import json
import os
import subprocess

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
