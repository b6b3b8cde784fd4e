"""Shell completion through Typer's real environment-variable protocol, fast path and Typer path alike."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ASSETS, REPO, installed_invmap, tab
from invmap import options as decl

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
    assert complete("bash", "invmap list --layer ")[1].split() == ["L1", "L2", "L3", "L4", "L5", "L6", "RL", "P0"]
    assert complete("bash", "invmap questions -l l")[1].split() == ["l1", "l2", "l3", "l4", "l5", "l6"]
    assert complete("bash", "invmap list --type Cu")[1] == "Current\n"
    # a value with a space is one shell word in bash; case is forgiven, the typed case kept
    assert complete("bash", "invmap list --type comp")[1] == "Companion\\ project\n"
    assert complete("bash", "invmap list --type Off")[1] == "Official\\ project\n"
    assert complete("bash", "invmap show att")[1] == "Attention\\ Is\\ All\\ You\\ Need\n"
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

# Every option value and argument the declarations say completes, as a user reaches it: right after
# the command, after a flag, and after a value option (so the fast path must know both arities).
SAMPLE_ARGS = {"source": "gqa", "source_or_code": "gqa"}
PREFIXES = {"layer": ["", "L", "l", "L3,L"], "type": ["", "Off", "cur"], "source": ["", "Pag", "pag", "att"]}


def matrix_lines() -> list[str]:
    lines = []
    for command in decl.COMMANDS:
        if command.path in decl.SUB:
            continue
        base = ["invmap", *command.path.split()]
        required = [SAMPLE_ARGS.get(a.complete, "x") for a in command.arguments if a.required and not a.multiple]
        options = decl.options_of(command)
        flag = next((o.flags[0] for o in options if o.kind == "flag"), None)
        for o in options:
            if not o.complete:
                continue
            for prefix in PREFIXES.get(o.complete, [""])[:2]:
                lines.append(" ".join([*base, *required, o.flags[0], prefix]))
                if flag:
                    lines.append(" ".join([*base, flag, *required, o.flags[-1], prefix]))
        for n, a in enumerate(command.arguments):
            if a.complete:
                given = [SAMPLE_ARGS.get(x.complete, "x") for x in command.arguments[:n]]
                for prefix in PREFIXES.get("source" if "source" in a.complete else a.complete, [""]):
                    lines.append(" ".join([*base, *given, prefix]))
    lines += [
        "invmap --color ",
        "invmap -c PLACEHOLDER show Pag",
        "invmap show vllm sg",
        "invmap open vllm --code ",
        "invmap list --layer L3,L",
    ]
    return list(dict.fromkeys(lines))


MATRIX = r"""
import contextlib, io, json, os, sys
from invmap import fastcomplete
from invmap.cli import app

shell, lines = sys.argv[1], json.loads(sys.argv[2])
answers = {}
for line in lines:
    os.environ["_INVMAP_COMPLETE"] = f"complete_{shell}"
    if shell == "bash":
        os.environ.update(COMP_WORDS=line, COMP_CWORD=str(len(line.split(" ")) - 1))
    else:
        os.environ["_TYPER_COMPLETE_ARGS"] = line
        os.environ.setdefault("_TYPER_COMPLETE_FISH_ACTION", "get-args")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = fastcomplete.answer()
    fast = None if code is None else [code, out.getvalue()]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            app(prog_name="invmap")
            typer_code = 0
        except SystemExit as exc:
            typer_code = exc.code or 0
    answers[line] = [fast, [typer_code, out.getvalue()]]
print(json.dumps(answers))
"""


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """Both paths' answers for the whole matrix, one process per shell (the fast path in the same
    process as Typer's: it never imports or needs typer, which the import test checks separately)."""
    cache = tmp_path_factory.mktemp("completion-cache")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "COLUMNS": "200"}
    env.pop("INVMAP_CATALOG", None)
    subprocess.run([installed_invmap(), "list", "--json"], env=env, capture_output=True, check=True)
    shipped = str(REPO / "catalog.toml")
    lines = [line.replace("PLACEHOLDER", shipped) for line in matrix_lines()]
    out = {}
    for shell in ("bash", "zsh", "fish"):
        done = subprocess.run(
            [sys.executable, "-c", MATRIX, shell, json.dumps(lines)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,  # a hang guard: one shell takes ~10 s on a quiet machine, minutes under load
        )
        assert done.returncode == 0, done.stderr
        out[shell] = json.loads(done.stdout)
    return out


def test_the_matrix_covers_every_completing_option_of_every_command():
    lines = matrix_lines()
    for command in decl.COMMANDS:
        for o in decl.options_of(command):
            if o.complete and command.path not in decl.SUB:
                assert any(f" {command.path} " in f"{line} " and o.flags[0] in line for line in lines), (
                    command.path,
                    o,
                )


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_fast_path_answers_byte_for_byte_as_typer_does(answers, shell):
    from invmap.cli import shortcuts

    declined = []
    for line, (fast, typer_answer) in answers[shell].items():
        if fast is None:
            declined.append(line)
            continue
        typed = line.rsplit(" ", 1)[-1]
        if (
            not shortcuts.ENABLED
            and typed
            and typed != typed.lower()
            or not shortcuts.ENABLED
            and typed in ("att", "pag")
        ):
            continue  # with the shortcuts off Typer drops candidates in another case (the README says so)
        assert fast == typer_answer, (shell, line)
    # It answers every request it can: only values whose help text rich would re-render (zsh and
    # fish carry help) are left to Typer.
    assert len(declined) <= len(answers[shell]) // 10, declined


def test_fast_path_answers_after_flags():
    """The structure issue's trial: after `--json` the fast path once gave up (0.07 s -> 0.23 s)."""
    warm()
    for line in ("invmap list --json --layer ", "invmap list --all --layer L", "invmap search x --exact --in ti"):
        done = tab(line, INVMAP_TRACE="1")
        assert done.returncode == 0 and done.stderr == "invmap: complete: fast path\n", (line, done.stderr)


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


@pytest.mark.parametrize(
    ("word", "reply"),
    [
        ("Pag", "PagedAttention\n"),
        ("att", "Attention\\ Is\\ All\\ You\\ Need\n"),  # one candidate in its real case, escaped for the line
    ],
)
def test_real_bash_runs_the_committed_script(word, reply):
    warm()
    bin_dir = str(Path(installed_invmap()).parent)
    script = REPO / "completions" / "invmap.bash"
    program = (
        f"source '{script}'; COMP_WORDS=(invmap show {word}); COMP_CWORD=2; _invmap_completion invmap; "
        "printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    done = subprocess.run(
        ["bash", "--norc", "-c", program],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    assert done.stdout == reply


ZPTY = r"""
zmodload zsh/zpty
zpty z "zsh -f -i"
zpty -w z "PS1='> '; autoload -U compinit; compinit -u -D; export PATH=$BIN:\$PATH; source $SCRIPT"
sleep 1.5
while zpty -r -t z chunk; do :; done
zpty -w -n z "$LINE"$'\t'
sleep 3
out=""
while zpty -r -t z chunk; do out+=$chunk; done
zpty -w -n z $'\C-u'
zpty -d z
print -r -- "$out"
"""


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_real_zsh_completes_a_name_typed_in_another_case():
    """An interactive zsh (compinit, the committed script) turns `invmap show att<TAB>` into the name."""
    warm()
    done = subprocess.run(
        ["zsh", "-f", "-c", ZPTY],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "BIN": str(Path(installed_invmap()).parent),
            "SCRIPT": str(REPO / "completions" / "_invmap"),
            "LINE": "invmap show att",
        },
    )
    assert "ention\\ Is\\ All\\ You\\ Need" in done.stdout, done.stdout[-300:]


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
