"""Shell completion through Typer's real environment-variable protocol, fast path and Typer path alike."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ASSETS, REPO, installed_invmap
from invmap.fastcomplete import VALUE_OPTIONS

TYPER_PATH = [sys.executable, "-c", "from invmap.cli import app; app(prog_name='invmap')"]


def complete(shell: str, line: str, *, program: list[str] | None = None, env: dict[str, str] | None = None):
    """Ask for completions of `line` (the text before the cursor) the way each shell's script does."""
    full = {**os.environ, "_INVMAP_COMPLETE": f"complete_{shell}", **(env or {})}
    if shell == "bash":
        words = line.split(" ")
        full.update(COMP_WORDS=line, COMP_CWORD=str(len(words) - 1))
    else:
        full["_TYPER_COMPLETE_ARGS"] = line
        if shell == "fish":
            full.setdefault("_TYPER_COMPLETE_FISH_ACTION", "get-args")
    done = subprocess.run(program or [installed_invmap()], env=full, capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def warm(env: dict[str, str] | None = None) -> None:
    """Load the catalog once so that its completion index exists (as any earlier command does)."""
    subprocess.run(
        [installed_invmap(), "list", "--json"], env={**os.environ, **(env or {})}, capture_output=True, check=True
    )


# --- the candidates --------------------------------------------------------------------------------


def test_bash_sources_after_show():
    warm()
    assert complete("bash", "invmap show Pag") == (0, "PagedAttention\n", "")
    assert complete("bash", "invmap show pag") == (0, "pagedattention\n", "")
    code, out, _ = complete("bash", "invmap show ")
    assert out.splitlines()[:3] == ["kiely-guide", "roofline", "transformer"]
    assert len(out.splitlines()) == 30


def test_bash_layers_types_fields_formats():
    warm()
    assert complete("bash", "invmap list --layer ")[1].split() == ["L1", "L2", "L3", "L4", "L5", "L6", "P0"]
    assert complete("bash", "invmap questions -l l")[1].split() == ["l1", "l2", "l3", "l4", "l5", "l6"]
    assert complete("bash", "invmap list --type Cu")[1] == "Current\n"
    # a value with a space is one shell word in bash; case is forgiven, the typed case kept
    assert complete("bash", "invmap list --type comp")[1] == "companion\\ project\n"
    assert complete("bash", "invmap list --type Off")[1] == "Official\\ project\n"
    assert complete("bash", "invmap show att")[1] == "attention\\ Is\\ All\\ You\\ Need\n"
    assert complete("bash", "invmap list --fields id,na")[1] == "id,name\n"
    assert complete("bash", "invmap search kv --fields sc")[1] == "score\n"
    assert complete("bash", "invmap list --format j")[1].split() == ["json", "jsonl"]
    assert complete("bash", "invmap list --sort y")[1] == "year\n"
    assert complete("bash", "invmap --color a")[1].split() == ["auto", "always"]


def test_zsh_and_fish_carry_help_text():
    warm()
    assert complete("zsh", "invmap show vA") == (0, '_arguments \'*: :(("vAttention":"vattention"))\'\n', "")
    assert complete("zsh", "invmap list --layer L3")[1] == '_arguments \'*: :(("L3":"Cache management"))\'\n'
    assert complete("zsh", "invmap show zzz")[1] == "_files\n"
    assert complete("fish", "invmap list --layer L5")[1] == "L5\tCluster architecture\n"
    assert complete("fish", "invmap show llm")[1] == "llm-d\tllm-d\n"
    assert complete("fish", "invmap list --type ", env={"_TYPER_COMPLETE_FISH_ACTION": "is-args"})[0] == 0


def test_completion_follows_the_active_catalog(tmp_path):
    mine = tmp_path / "mine.toml"
    shutil.copy(ASSETS / "mini.toml", mine)
    env = {"INVMAP_CATALOG": str(mine)}
    # No index yet: Typer's path answers (and writes the index); then the fast path does.
    assert complete("bash", "invmap show ", env=env)[1] == "pagedattention\nmooncake\n"
    assert complete("bash", "invmap show ", env=env)[1] == "pagedattention\nmooncake\n"
    assert complete("bash", f"invmap --catalog {mine} show m")[1] == "mooncake\n"
    text = mine.read_text(encoding="utf-8").replace('id = "mooncake"', 'id = "mooncake-2"')
    mine.write_text(text, encoding="utf-8")
    os.utime(mine, ns=(1, 1))  # a different mtime even on coarse clocks
    assert complete("bash", "invmap show m", env=env)[1] == "mooncake-2\n"


# --- the fast path answers exactly as Typer does ------------------------------------------------------

LINES = [
    "invmap show Pag",
    "invmap show ",
    "invmap show pag",
    "invmap show vA",
    "invmap show zzz",
    "invmap show llm",
    "invmap list --layer ",
    "invmap list -l l",
    "invmap list --layer L",
    "invmap questions --layer P",
    "invmap list --type ",
    "invmap list -t cur",
    "invmap search kv --type Off",
    "invmap list --fields ",
    "invmap list --fields id,",
    "invmap search x --fields sc",
    "invmap list --format ",
    "invmap show x --format t",
    "invmap list --sort ",
    "invmap --color ",
    "invmap list --color n",
    "invmap search kv --in ",
    "invmap list --json --layer ",
    "invmap list -l L3 --type ",
    "invmap show att",
    "invmap list --type Off",
    "invmap list --type off",
    "invmap show vllm sg",
    "invmap open vllm Moon",
    "invmap record new pag",
]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
@pytest.mark.parametrize("line", LINES)
def test_fast_path_is_byte_identical_to_typer(shell, line):
    warm()
    fast = complete(shell, line)
    typer_answer = complete(shell, line, program=TYPER_PATH)
    assert fast == typer_answer


@pytest.mark.parametrize(
    "line",
    ["invmap show Pag", "invmap list --layer ", "invmap list --fields id,", "invmap show att", "invmap show vllm sg"],
)
def test_fast_path_imports_nothing_heavy(line):
    warm()
    env = {
        **os.environ,
        "_INVMAP_COMPLETE": "complete_bash",
        "COMP_WORDS": line,
        "COMP_CWORD": str(len(line.split(" ")) - 1),
    }
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "invmap"], env=env, capture_output=True, text=True)
    imported = {row.split("|")[-1].strip() for row in done.stderr.splitlines() if row.startswith("import time:")}
    assert done.stdout  # it answered
    for heavy in ("typer", "rich", "rapidfuzz", "pydantic", "click"):
        assert not any(m == heavy or m.startswith(heavy + ".") for m in imported), heavy


def test_value_option_table_matches_the_commands():
    import typer.main

    from invmap.cli import app

    group = typer.main.get_command(app)
    ctx = typer.Context(group)
    for name, options in VALUE_OPTIONS.items():
        command = group.get_command(ctx, name)
        takes_value = {
            opt
            for p in command.params
            if not getattr(p, "is_flag", False) and p.param_type_name == "option"
            for opt in p.opts
        }
        assert set(options) == takes_value, name


# --- the committed scripts ------------------------------------------------------------------------------

SCRIPTS = {"bash": "invmap.bash", "zsh": "_invmap", "fish": "invmap.fish"}


@pytest.mark.parametrize("shell", sorted(SCRIPTS))
def test_committed_scripts_are_current(shell):
    env = {**os.environ, "_INVMAP_COMPLETE": f"source_{shell}"}
    fresh = subprocess.run([sys.executable, "-m", "invmap"], env=env, capture_output=True, text=True, check=True).stdout
    committed = (REPO / "completions" / SCRIPTS[shell]).read_text(encoding="utf-8")
    assert committed == fresh.strip() + "\n", (
        f"completions/{SCRIPTS[shell]} is stale: run scripts/generate_completions.py"
    )


def test_real_bash_runs_the_committed_script():
    warm()
    bin_dir = str(Path(installed_invmap()).parent)
    script = REPO / "completions" / "invmap.bash"
    program = (
        f"source '{script}'; COMP_WORDS=(invmap show Pag); COMP_CWORD=2; _invmap_completion invmap; "
        "printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    done = subprocess.run(
        ["bash", "--norc", "-c", program],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    assert done.stdout == "PagedAttention\n"


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_real_fish_runs_the_committed_script():
    warm()
    bin_dir = str(Path(installed_invmap()).parent)
    script = REPO / "completions" / "invmap.fish"
    done = subprocess.run(
        ["fish", "--no-config", "-c", f"source '{script}'; complete -C 'invmap list --layer L3'"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    assert done.stdout == "L3\tCache management\n"
