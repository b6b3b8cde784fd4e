"""Start-up: warm query runs never import pydantic, and reading options without it changes nothing.

Typer 0.29 builds a pydantic TypeAdapter for every option of a command on every run; invmap's
`PlainValue` (cli/shortcuts.py) takes values that need no conversion as they are and hands the rest
to Typer. The tests that exist to prove a shortcut skip when `INVMAP_TYPER_SHORTCUTS=0` turns them off.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
from typer._coercion import build_runtime_param

from conftest import installed_invmap
from invmap.cli import COMMANDS, app, shortcuts
from invmap.cli.shortcuts import PlainValue

shortcut = pytest.mark.skipif(not shortcuts.ENABLED, reason="the Typer shortcuts are off (INVMAP_TYPER_SHORTCUTS=0)")

SAMPLES = {
    "multi": [None, (), ("L3",), ("L3", "kv cache"), ["", "x"], ("\udcff",)],
    str: [None, "", "abc", "5", "two words", "\udcff", "-"],
    bool: [None, True, False],
    int: [None, 10, "5", "-5", "0005", "-0", "x", "5.0", " 5", "+5", "1_000", "99999999999999999999", "", "-", "--5"],
    float: [None, 60.0, "5", "5.5", "x", "nan", ""],
}


def every_command() -> list[tuple[object, object]]:
    """(command, context) for the root group, every command and every subcommand of a group."""
    root = typer.main.get_command(app)
    ctx = typer.Context(root, info_name="invmap")
    found = [(root, ctx)]
    for name in COMMANDS:
        command = root.get_command(ctx, name)
        found.append((command, ctx))
        found += [(sub, ctx) for sub in getattr(command, "commands", {}).values()]
    return found


def answer(runtime_param, param, value, ctx) -> tuple[str, str]:
    """What a run would get: the value (with its type) or the message of the usage error."""
    try:
        got = runtime_param.coerce(value, param=param, ctx=ctx)
        return "ok", f"{type(got).__name__} {got!r}"
    except typer.BadParameter as exc:
        return "error", exc.message


@shortcut
def test_plain_values_are_what_typer_would_return():
    plain_answers = params = 0
    for command, ctx in every_command():
        for param in command.get_params(ctx):
            if not hasattr(param, "type_descriptor"):
                continue
            params += 1
            assert isinstance(param._runtime_param, PlainValue), (command.name, param.name)
            multi = param.multiple or param.nargs == -1
            typers = build_runtime_param(param.type_descriptor)
            for value in SAMPLES["multi" if multi else param.type_descriptor.annotation]:
                plain_answers += param._runtime_param.plain(value, multi=multi) is not NotImplemented
                mine = answer(param._runtime_param, param, value, ctx)
                assert mine == answer(typers, param, value, ctx), (command.name, param.name, value)
    assert params > 60 and plain_answers > 300  # most values never reach pydantic


@pytest.mark.parametrize(
    ("args", "expected_errors"),
    [
        (["list", "--limit", "x"], "Invalid value for '--limit' / '-n': Input should be a valid integer"),
        (["search", "kv", "--min-score", "high"], "Invalid value for '--min-score': Input should be a valid number"),
        (["list", "--limit", "0"], "Invalid value for '--limit' / '-n': must be at least 1, not 0"),
    ],
)
def test_values_typer_must_convert_keep_typer_messages(cli, args, expected_errors):
    result = cli(*args)
    assert result.code == 2
    assert expected_errors in result.err


def test_converted_values_still_work(cli):
    assert len(json.loads(cli("list", "--limit", "0002", "--json").out)) == 2
    hits = json.loads(cli("search", "virtual memory", "--min-score", "55.5", "-n", "3", "--json").out)
    assert 1 <= len(hits) <= 3 and all(hit["score"] >= 55.5 for hit in hits)


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--layer", "L3", "--json"],
        ["--color", "never", "list", "-l", "L5,L4", "--limit", "3", "--fields", "id,name"],
        ["show", "PagedAttention", "--json"],
        ["search", "virtual", "memory", "--json"],
        ["questions", "--layer", "L5", "--json"],
        ["layers", "--json"],
    ],
)
@shortcut
def test_a_warm_query_never_imports_pydantic(args):
    """The fast path answered: the run imported neither pydantic nor Typer's adapters, and its output is right."""
    program = installed_invmap()
    subprocess.run([program, "list"], capture_output=True, check=True)  # the index exists from now on
    done = subprocess.run([sys.executable, "-X", "importtime", program, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "invmap.index" in imported  # the measurement itself works
    assert not {name for name in imported if name.startswith(("pydantic", "typer._adapters"))}
    if "--json" in args:
        assert json.loads(done.stdout)
    else:
        assert done.stdout.splitlines()[0].startswith("pagedattention") or done.stdout.strip()
