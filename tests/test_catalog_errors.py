"""Broken catalogs: one clear message naming file, source and field; exit 3; never a traceback."""

from __future__ import annotations

import datetime as dt

import pytest

from conftest import ASSETS

BROKEN = ASSETS / "broken"
NEXT_YEAR = dt.date.today().year + 1

EXPECTED = {
    "syntax.toml": "invalid TOML: Expected newline or end of document after a statement (at line 16, column 13)",
    "missing_field.toml": "source 1 (pagedattention): missing required field 'question'",
    "unknown_field.toml": "source 2 (mooncake): unknown field 'yaer'",
    "wrong_type.toml": "source 1 (pagedattention): field 'year': expected an integer, got text '2023'",
    "duplicate_id.toml": "source 2 (pagedattention): duplicate id 'pagedattention' (first used by source 1)",
    "bad_layer.toml": "source 2 (mooncake): field 'layer': unknown layer code 'L9' in 'L3 and L9' "
    "(valid codes: L1, L2, L3, L4, L5, L6, RL, P0)",
    "empty.toml": "is empty: a catalog needs at least one [[sources]] table",
    "binary.toml": "not UTF-8 text (invalid byte at line 2)",
    "no_sources.toml": "no sources: add at least one [[sources]] table",
    "implausible_year.toml": "source 1 (pagedattention): field 'year': implausible year 1850 "
    f"(expected 1900 to {NEXT_YEAR}, or leave it out for n.d.)",
    "empty_text.toml": "source 2 (mooncake): field 'availability': must not be empty",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("command", [["list"], ["show", "pagedattention"], ["questions"], ["search", "kv"]])
def test_reading_commands_refuse_broken_catalogs(cli, name, command):
    path = str(BROKEN / name)
    result = cli("--catalog", path, *command)
    assert result.code == 3
    assert result.out == ""
    assert result.err == f"Error: {path}: {EXPECTED[name]}\n"


def test_every_problem_is_reported_at_once(cli):
    path = str(BROKEN / "many_problems.toml")
    result = cli("--catalog", path, "list")
    assert result.code == 3
    assert result.err.splitlines() == [
        f"Error: {path} has 4 problems:",
        f"{path}: source 1 (pagedattention): field 'year': expected an integer, got text '2023'",
        f"{path}: source 1 (pagedattention): missing required field 'mechanism'",
        f"{path}: source 1 (pagedattention): unknown field 'mechanizm'",
        f"{path}: source 2 (pagedattention): duplicate id 'pagedattention' (first used by source 1)",
    ]


def test_missing_file_and_directory(cli, tmp_path):
    missing = str(tmp_path / "nope.toml")
    assert cli("--catalog", missing, "list").err == f"Error: {missing}: no such file\n"
    assert cli("--catalog", str(tmp_path), "list").err == f"Error: {tmp_path}: is a directory, not a catalog file\n"
    assert cli("--catalog", str(tmp_path), "list").code == 3


def test_env_var_catalog_and_subprocess(sh):
    path = str(BROKEN / "wrong_type.toml")
    result = sh("list", env={"INVMAP_CATALOG": path})
    assert (result.code, result.out) == (3, "")
    assert result.err == f"Error: {path}: {EXPECTED['wrong_type.toml']}\n"
    assert "Traceback" not in result.err


def test_catalog_from_stdin(cli):
    text = (ASSETS / "mini.toml").read_text(encoding="utf-8")
    result = cli("--catalog", "-", "list", "--fields", "id", "--format", "plain", input=text)
    assert (result.code, result.out, result.err) == (0, "pagedattention\nmooncake\n", "")
    broken = cli("--catalog", "-", "list", input="not = [toml")
    assert broken.code == 3 and broken.err.startswith("Error: -: invalid TOML: ")


def test_empty_catalog_option_is_a_usage_error(cli):
    result = cli("--catalog", "", "list")
    assert (result.code, result.out, result.err) == (2, "", "Error: --catalog needs a path (or '-' for stdin)\n")
