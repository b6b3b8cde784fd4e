"""Answer shell completion before typer, pydantic and rich are imported.

The shell runs `invmap` on every TAB. Typer's own completion path costs a full start (~150 ms);
this module answers the common requests (source names after `show`/`open`/`related`/`record new`,
the value of any option whose completion the declarations name: `--layer`, `--type`, `--fields`,
`--format`, `--sort`, `--color`, `--in`, ...) from the catalog's SQLite index (`invmap.index`), in Typer's
exact output format for bash, zsh and fish. It knows every option of every command, flags included,
from `options.py`. Anything it is not sure of (command and option names, a stale index, help text
that rich would re-render) it declines, and Typer answers as usual; tests compare both answers byte
for byte.
"""

from __future__ import annotations

import os
import sys

from invmap import complete, formats
from invmap import options as decl

COMPLETE_VAR = "_INVMAP_COMPLETE"
_GLOBAL = {flag: o for o in decl.GLOBAL for flag in o.flags}
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


def _request(args: list[str], incomplete: str) -> tuple[str, decl.Command | None, str | None] | None:
    """(what to complete, the command, the --catalog value) for the requests handled here, else None."""
    read = _global_options(args, incomplete)
    if read is None or isinstance(read, tuple):
        return read
    i, catalog_path = read[0], read[1]
    if i == len(args) or incomplete.startswith("-"):
        return None  # a command name or an option name: Typer lists those
    found = _command(args[i], args[i + 1 :])
    if found is None:
        return None
    command, rest = found
    kind = _word_kind(command, rest)
    return (kind, command, catalog_path) if kind else None


def _global_options(args: list[str], incomplete: str) -> list | tuple | None:
    """Past the global options: `[where the command is, the --catalog value]`; a tuple when the word
    being completed is a global option's value; None for what Typer answers."""
    catalog_path = None
    i = 0
    while i < len(args) and args[i].startswith("-"):
        option = _GLOBAL.get(args[i])
        if option is None:
            return None
        if not option.takes_value:
            i += 1
            continue
        if i + 1 == len(args):  # completing a global option's value
            wanted = option.complete == "color" and not incomplete.startswith("-")
            return (option.complete, None, catalog_path) if wanted else None
        if option.dest == "catalog":
            catalog_path = args[i + 1]
        i += 2
    return [i, catalog_path]


def _command(name: str, rest: list[str]) -> tuple[decl.Command, list[str]] | None:
    """The command (a group's subcommand) and the words after it."""
    command = decl.TOP.get(name)
    if command is None:
        return None
    if command.name in decl.SUB:  # a group: its subcommand comes first
        if not rest or rest[0] not in decl.SUB[command.name]:
            return None
        return decl.SUB[command.name][rest[0]], rest[1:]
    return command, rest


def _word_kind(command: decl.Command, rest: list[str]) -> str | None:
    """What the last word of `rest` is (an option's value, or which argument), as a completion kind."""
    positional = _arguments_before(command, rest)
    if isinstance(positional, str) or positional is None:
        return positional
    arguments = command.arguments
    if not arguments:
        return None
    at = positional if positional < len(arguments) else (len(arguments) - 1 if arguments[-1].multiple else None)
    if at is None or arguments[at].complete is None:
        return None
    kind = arguments[at].complete
    if kind == "source_or_code":
        return "code_source" if any(w == "--code" for w in rest) else "source"
    return kind


def _arguments_before(command: decl.Command, rest: list[str]) -> int | str | None:
    """How many arguments come before the last word; or, if the last word is an option's value,
    that option's completion kind; None where Typer must answer (`--`, an unknown option, `-x=v`)."""
    options = {flag: o for o in decl.options_of(command) for flag in o.flags}
    positional = 0
    k = 0
    while k < len(rest):
        word = rest[k]
        if word == "--":
            return None  # everything after it is an argument: left to Typer
        if word.startswith("-") and word != "-":
            option = options.get(word.split("=", 1)[0])
            if option is None or "=" in word:
                return None
            if option.takes_value and k + 1 == len(rest):  # completing this option's value
                return option.complete or None
            k += 2 if option.takes_value else 1
            continue
        positional += 1
        k += 1
    return positional


def _candidates(
    kind: str, command: decl.Command | None, incomplete: str, catalog_path: str | None
) -> list[tuple[str, str]] | None:
    if kind == "format":
        return complete.choices(formats.names_for(command.view), incomplete) if command else None
    if kind == "fields":
        return complete.fields(complete.fields_of(command.path), incomplete) if command else None
    if kind in complete.CHOICES or kind in complete.LAZY_CHOICES:
        values, helps = complete.choice_values(kind)
        return complete.choices(values, incomplete, helps)
    if kind not in complete.INDEX_KINDS:
        return None
    from invmap import cache
    from invmap import index as index_db

    path = catalog_path or os.environ.get("INVMAP_CATALOG") or os.path.join(os.path.dirname(__file__), "catalog.toml")
    key = cache.key_of(path) if cache.enabled() else None
    con = index_db.open_current(key) if key else None
    if con is None:
        return None  # never indexed, or changed since: Typer's path indexes it
    try:
        found = complete.from_index(index_db.Index(con, lambda: con), kind, incomplete)
    except Exception:  # anything odd in the file: let Typer's path answer from the catalog itself
        return None
    finally:
        con.close()
    return complete.candidates(kind, found, incomplete)


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
        lines = [f'"{zsh_escape(v)}":"{zsh_escape(h)}"' if h else f'"{zsh_escape(v)}"' for v, h in items]
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


def zsh_escape(text: str) -> str:
    """A value or help text inside `_arguments '*: :(("VALUE":"HELP"))'`, which zsh reads twice: once
    as a single-quoted word (an apostrophe ends it: `'\\''` puts one back) and once as a double-quoted
    item (`\\"`). Typer's `''` and `""` would drop both ("the maps study procedure")."""
    return text.replace('"', '\\"').replace("'", "'\\''").replace("$", "\\$").replace("`", "\\`").replace(":", r"\\:")
