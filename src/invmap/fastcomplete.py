"""Answer shell completion before typer, pydantic and rich are imported.

The shell runs `invmap` on every TAB. Typer's own completion path costs a full start (~150 ms);
this module answers the common requests (source names after `show`/`open`/`related`/`record new`,
the value of `--layer`, `--type`, `--fields`, `--format`, `--sort`, `--color`) from the catalog's
SQLite index (`index.py`), in Typer's exact output format for bash, zsh and fish.
Anything it is not sure of (command names, option names, a stale index, help text that rich would
re-render) it declines, and Typer answers as usual; tests compare both answers word for word.
"""

from __future__ import annotations

import os
import sys

from invmap import complete
from invmap.fields import FIELD_HELP, SCORED_FIELDS, SOURCE_FIELDS, TEXT_FIELDS

COMPLETE_VAR = "_INVMAP_COMPLETE"

# Options that take a value, and what completes it (None: Typer offers nothing special).
# tests/test_completion.py checks this table against the real commands.
VALUE_OPTIONS: dict[str, dict[str, str | None]] = {}
_FILTERS = {"--layer": "layer", "-l": "layer", "--type": "type", "-t": "type", "--year": None, "-y": None}
_OUTPUT = {"--format": "format", "-f": "format", "--fields": "fields", "--color": "color"}
_ORDER = {"--sort": "sort", "-s": "sort", "--limit": None, "-n": None}
VALUE_OPTIONS["list"] = {**_FILTERS, **_ORDER, **_OUTPUT}
VALUE_OPTIONS["questions"] = {**_FILTERS, **_ORDER, **_OUTPUT, "--records": None}
VALUE_OPTIONS["search"] = {**_FILTERS, **_OUTPUT, "--in": "search_in", "--limit": None, "-n": None, "--min-score": None}
VALUE_OPTIONS["show"] = dict(_OUTPUT)
SOURCE_COMMANDS = frozenset({"show", "open"})  # every argument is a name
ONE_SOURCE_COMMANDS = frozenset({"related"})  # the first argument is a name
GLOBAL_VALUE_OPTIONS = {"--catalog": "catalog", "-c": "catalog", "--color": "color"}

_CHOICES = {
    "format": ("table", "json", "jsonl", "csv", "tsv", "markdown", "plain"),
    "color": ("auto", "always", "never"),
    "sort": ("year", "name", "id", "layer", "type"),
    "search_in": (*TEXT_FIELDS, "all"),
}
# Help text rich would print differently (markup, emoji codes, escapes) is left to Typer.
_PLAIN_HELP = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,.()'/+&-_;!?=<>%#@*")


def answer() -> int | None:
    """Print the completion and return the exit code, or None to let Typer answer."""
    shell = os.environ.get(COMPLETE_VAR, "")
    if shell not in ("complete_bash", "complete_zsh", "complete_fish"):
        return None
    words = _words(shell)
    if words is None:  # a malformed request (COMP_CWORD=abc): nothing to offer, and nothing said
        return 0
    args, incomplete = words
    request = _request(args, incomplete)
    if request is None:
        return None
    kind, command, catalog_path = request
    items = _candidates(kind, command, incomplete, catalog_path)
    if items is None:
        return None
    code = _emit(shell, items)
    if code is not None:
        from invmap.trace import trace

        trace("complete: fast path")
    return code


def _words(shell: str) -> tuple[list[str], str] | None:
    """The words before the cursor and the one being typed, as Typer's completion classes split them."""
    from shlex import shlex

    def split(text: str) -> list[str]:
        lex = shlex(text, posix=True)
        lex.whitespace_split = True
        lex.commenters = ""
        out: list[str] = []
        try:
            out.extend(lex)
        except ValueError:
            out.append(lex.token)
        return out

    if shell == "complete_bash":
        words = split(os.environ.get("COMP_WORDS", ""))
        cword_text = os.environ.get("COMP_CWORD", "")
        if "COMP_WORDS" not in os.environ or not cword_text.isdigit() or not words:
            return None
        cword = int(cword_text)
        return words[1:cword], (words[cword] if cword < len(words) else "")
    line = os.environ.get("_TYPER_COMPLETE_ARGS", "")
    words = split(line)[1:]
    if words and not line.endswith(" "):
        return words[:-1], words[-1]
    return words, ""


def _request(args: list[str], incomplete: str) -> tuple[str, str, str | None] | None:
    """(what to complete, the command, the --catalog value) for the requests handled here, else None."""
    catalog_path = None
    i = 0
    while i < len(args) and args[i].startswith("-"):
        option = args[i]
        if option not in GLOBAL_VALUE_OPTIONS:
            return None
        if i + 1 == len(args):  # completing a global option's value
            kind = GLOBAL_VALUE_OPTIONS[option]
            return (kind, "", catalog_path) if kind == "color" and not incomplete.startswith("-") else None
        if option in ("--catalog", "-c"):
            catalog_path = args[i + 1]
        i += 2
    if i == len(args) or incomplete.startswith("-"):
        return None  # a command name or an option name: Typer lists those
    command, rest = args[i], args[i + 1 :]
    options = VALUE_OPTIONS.get(command)
    if rest and options is not None and rest[-1] in options:
        kind = options[rest[-1]]
        if kind is None or any(word.startswith("-") and word not in options for word in rest[:-1]):
            return None
        return kind, command, catalog_path
    if command in SOURCE_COMMANDS and not any(word.startswith("-") for word in rest):
        return "source", command, catalog_path
    if (command in ONE_SOURCE_COMMANDS and not rest) or (command == "record" and rest == ["new"]):
        return "source", command, catalog_path
    return None


def _candidates(kind: str, command: str, incomplete: str, catalog_path: str | None) -> list[tuple[str, str]] | None:
    if kind in _CHOICES:
        return complete.choices(_CHOICES[kind], incomplete)
    if kind == "fields":
        allowed = SCORED_FIELDS if command in ("search", "related") else SOURCE_FIELDS
        return complete.fields(allowed, incomplete, FIELD_HELP)
    from invmap import index as index_db

    path = catalog_path or os.environ.get("INVMAP_CATALOG") or os.path.join(os.path.dirname(__file__), "catalog.toml")
    key = index_db.key_of(path) if index_db.enabled() else None
    con = index_db.open_current(key) if key else None
    if con is None:
        return None  # never indexed, or changed since: Typer's path indexes it
    try:
        index = complete.from_index(index_db.Index(con, lambda: con), kind, incomplete)
    except Exception:  # anything odd in the file: let Typer's path answer from the catalog itself
        return None
    finally:
        con.close()
    if kind == "source":
        return complete.sources(index, incomplete)
    if kind == "layer":
        return complete.layers(index, incomplete)
    if kind == "type":
        return complete.types(index, incomplete)
    return None


def _emit(shell: str, items: list[tuple[str, str]]) -> int | None:
    if shell == "complete_bash":  # bash shows no help text
        sys.stdout.write("\n".join(value for value, _ in items) + "\n")
        return 0
    width = int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else 80
    for _, help_text in items:
        if help_text and (len(help_text) + 8 >= width or not _PLAIN_HELP.issuperset(help_text)):
            return None
    if shell == "complete_zsh":
        if not items:
            sys.stdout.write("_files\n")
            return 0
        lines = [f'"{_zsh_escape(v)}":"{_zsh_escape(h)}"' if h else f'"{_zsh_escape(v)}"' for v, h in items]
        sys.stdout.write("_arguments '*: :((" + "\n".join(lines) + "))'\n")
        return 0
    action = os.environ.get("_TYPER_COMPLETE_FISH_ACTION", "")
    if action == "is-args":
        return 0 if items else 1
    if action == "get-args" and items:
        sys.stdout.write("\n".join(f"{v}\t{h}" if h else v for v, h in items) + "\n")
        return 0
    sys.stdout.write("\n")
    return 0


def _zsh_escape(text: str) -> str:
    return text.replace('"', '""').replace("'", "''").replace("$", "\\$").replace("`", "\\`").replace(":", r"\\:")
