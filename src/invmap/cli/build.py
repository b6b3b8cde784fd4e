"""Typer commands built from the declarations in `options.py`.

A command module implements a command with `@implements("list")`: the function takes the context and
one `Args` (its options' and arguments' values by `dest`). Its Typer signature, `--help` text and
examples, completion callbacks and value checks are derived here from the declaration, the same way
for every command; nothing about an option is written twice.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer

import invmap.cli.complete as completion
from invmap import options as decl

IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {}
CALLBACKS: dict[tuple[str, str], Callable[..., Any]] = {}  # (command path, dest) -> completion callback


def implements(path: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `fn(ctx, args)` as the implementation of the declared command `path`."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        IMPLEMENTATIONS[path] = fn
        return fn

    return register


class Args:
    """One command's values by `dest` (`args.layer`, `args.fmt`); `filters` holds the filter bundle's."""

    def __init__(self, command: decl.Command, values: dict[str, Any]) -> None:
        self.command = command
        self.__dict__.update(values)
        self.filters = {o.dest: values[o.dest] for o in decl.FILTERS if o.dest in values}

    def __repr__(self) -> str:
        return f"Args({self.command.path}, {self.__dict__})"


def _continued(command: str, width: int) -> list[str]:
    """A long example command as shell lines joined by ` \\`, broken at spaces (never inside a quoted
    argument) to fit `width`."""
    import shlex

    try:
        words = shlex.split(command, posix=False)
    except ValueError:
        words = command.split()
    units: list[str] = []  # an option stays with its value: `--layer "L2 and L5"`
    for word in words:
        if units and units[-1].startswith("-") and " " not in units[-1] and not word.startswith(("-", "|")):
            units[-1] += " " + word
        else:
            units.append(word)
    out, line = [], "  " + units[0]
    for word in units[1:]:
        if len(line) + 1 + len(word) + 2 > width:
            out.append(line + " \\")
            line = "      " + word
        else:
            line += " " + word
    return [*out, line]


def examples(lines: tuple[str, ...]) -> str | None:
    """A command's help epilog: an Examples section (`\\b` stops click rewrapping it). A line too
    long for the help's width (click's: the terminal's, at most 78) puts its `# comment` on a line of
    its own, so a command is never cut inside a word."""
    if not lines:
        return None
    from invmap.cli.shared import current

    width = max(min(current().columns, 80) - 2, 50)  # click's help width, from the same terminal
    logical: list[str] = []  # lines continued with a backslash are one command, wrapped anew
    for line in lines:
        if logical and logical[-1].endswith("\\"):
            logical[-1] = logical[-1][:-1].rstrip() + " " + line.strip()
        else:
            logical.append(line)
    out = []
    for line in logical:
        command, mark, comment = line.partition("  # ")
        if len(line) + 2 <= width:
            out.append(f"  {line}")
            continue
        out += _continued(command.rstrip(), width)  # a shell line continued with `\\`
        if mark:
            out.append(f"      # {comment}")
    return "\b\nExamples:\n" + "\n".join(out)


def at_least_one(value: int | None) -> int | None:
    if value is not None and value < 1:
        raise typer.BadParameter(f"must be at least 1, not {value}")
    return value


def option_help(command: decl.Command, o: decl.Opt) -> str:
    """An option's help as `--help` prints it (and an MCP tool's input describes it)."""
    from invmap import formats

    text = o.help
    if o.dest == "fmt" and "FORMATS" in text:
        text = text.replace("FORMATS", "One of: " + ", ".join(formats.names_for(command.view)))
    if o.old_flags:  # read as the option (`DeclaredCommand`), said here, never offered by completion
        text += f" ({', '.join(o.old_flags)}: the old spelling, still read.)"
    if o.other_spellings:  # read as the option too (`renamed`), said here rather than in the flag column
        text += f" (Also {', '.join(o.other_spellings)}.)"
    return text


def _option(command: decl.Command, o: decl.Opt) -> inspect.Parameter:
    text = option_help(command, o)
    extra: dict[str, Any] = {}
    complete = completion.callback(o.complete, command)
    if complete is not None:
        extra["autocompletion"] = complete
        CALLBACKS[(command.path, o.dest)] = complete
    if o.kind == "flag":
        annotation, default = bool, bool(o.default)
        option = typer.Option(*o.shown_flags, help=text)
    else:
        if o.kind == "count":
            extra["callback"] = at_least_one
        kind = {"int": int, "count": int, "float": float}.get(o.kind, str)
        if o.multiple:
            annotation, default = Optional[list[str]], None
        elif o.default is None:
            annotation, default = Optional[kind], None
        else:
            annotation, default = kind, o.default
        option = typer.Option(*o.shown_flags, metavar=o.metavar, help=text, show_default=o.default is not None, **extra)
    return inspect.Parameter(
        o.dest, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[annotation, option], default=default
    )


def _argument(command: decl.Command, a: decl.Arg) -> inspect.Parameter:
    extra: dict[str, Any] = {}
    complete = completion.callback(a.complete, command)
    if complete is not None:
        extra["autocompletion"] = complete
        CALLBACKS[(command.path, a.dest)] = complete
    argument = typer.Argument(metavar=a.metavar, help=a.help, show_default=False, **extra)
    required = a.required and not a.unless  # `unless`: the command checks, as only it knows the options
    if a.multiple:
        annotation: Any = list[str] if required else Optional[list[str]]
    else:
        annotation = str if required else Optional[str]
    default = inspect.Parameter.empty if required else None
    return inspect.Parameter(
        a.dest, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[annotation, argument], default=default
    )


def typer_function(command: decl.Command) -> Callable[..., Any]:
    """The function Typer turns into `command`: its parameters from the declaration, its body the
    registered implementation."""
    implementation = IMPLEMENTATIONS[command.path]
    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)]
    params += [_argument(command, a) for a in command.arguments]
    params += [_option(command, o) for o in decl.options_of(command)]

    def run(ctx: typer.Context, **values: Any) -> Any:
        return implementation(ctx, Args(command, values))

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    run.__doc__ = command.summary
    run.__name__ = command.name.replace("-", "_")
    return run


class DeclaredCommand(typer.core.TyperCommand):
    """A declared command's parsing: an old spelling of an option (`Opt.aliases`: `reports --level`)
    read as the option, with a warning on stderr; an unknown option answered with the closest option
    of this command (`suggest`), as git does."""

    declaration: decl.Command | None = None

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        command = self.declaration
        if command is None:
            return super().parse_args(ctx, args)
        args, typed = renamed(command, args)
        ctx.meta.setdefault("typed", {}).update(typed)
        try:
            return super().parse_args(ctx, args)
        except typer._click.exceptions.NoSuchOption as exc:
            close = suggest(command, exc.option_name)
            exc.possibilities = []  # click would add its own difflib guesses to the message
            exc.message = f"No such option: {exc.option_name}" + (f". Did you mean {close}?" if close else "")
            raise


def spelled_as_typed(message: str, inputs: tuple[str, ...], typed: dict[str, tuple[str, str]]) -> str:
    """`message` with the first flag of each option it concerns (`inputs`) put as the user typed it."""
    import re

    for name in inputs:
        if name in typed:
            first, flag = typed[name]
            message = re.sub(rf"(?<![\w-]){re.escape(first)}(?![\w-])", flag, message)
    return message


def renamed(command: decl.Command, args: list[str]) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """`args` with each old spelling of an option replaced by its first flag (a warning said once for
    each), and each of its other spellings (`--tp-size`) silently; words after `--` are left alone.
    Beside them, for each option given by another spelling than its first flag (`--max-model-len`,
    `-tp`), its dest: (the first flag, the spelling typed), so that a message naming the option can
    name it as the user did (`spelled_as_typed`)."""
    spellings = {f: o for o in decl.options_of(command) for f in (*o.flags, *o.old_flags)}
    out: list[str] = []
    warned: set[str] = set()
    typed: dict[str, tuple[str, str]] = {}
    for n, word in enumerate(args):
        if word == "--":
            return out + args[n:], typed
        flag, eq, value = word.partition("=")
        o = spellings.get(flag)
        if o is not None and flag != o.flags[0]:
            typed[o.dest] = (o.flags[0], flag)
            if flag in o.old_flags and flag not in warned:
                from invmap.cli.shared import say

                say(f"warning: {flag} is the old spelling of {o.flags[0]}; use {o.flags[0]}")
                warned.add(flag)
            if flag in o.old_flags or flag in o.other_spellings:
                word = o.flags[0] + eq + value
        out.append(word)
    return out, typed


def suggest(command: decl.Command, typed: str) -> str | None:
    """The option of `command` an unknown `typed` most likely meant: one whose alias it is (`--level`
    for `--layer`, `--tp` for `--tensor-parallel`), else the nearest flag by edit distance (at most
    a third of the word's letters off), else one whose flag starts with what was typed."""
    from rapidfuzz.distance import Levenshtein

    word = typed.partition("=")[0].lstrip("-").lower()
    options = [*decl.options_of(command), *HELP]
    for o in options:
        if word in (a.lstrip("-").lower() for a in o.aliases):
            return o.flags[0]
    scored = []
    for o in options:
        for flag in o.flags:
            name = flag.lstrip("-")
            scored.append((Levenshtein.distance(word, name), len(name) > 1, flag, o.flags[0]))
    scored.sort(key=lambda s: (s[0], not s[1]))
    if scored and len(word) > 1 and scored[0][0] <= max(1, len(word) // 3):
        return scored[0][3]
    started = [o.flags[0] for o in options for f in o.flags if len(word) > 1 and f.lstrip("-").startswith(word)]
    return started[0] if started else None


HELP = (decl.Opt("help", ("--help", "-h"), "Show this message and exit.", kind="flag"),)


class HelpGroup(typer.core.TyperGroup):
    """A command group (`estimate`, `record`, `simulate`): with no subcommand, its help on stdout and
    exit 0, as a bare `invmap` (click's no-args error would print it on stderr, escaped, as exit 2)."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            from invmap.cli.shared import help_out

            help_out(ctx, ctx.get_help() + "\n")
            ctx.exit(0)
        return super().parse_args(ctx, args)


def typer_app(path: str) -> typer.Typer:
    """A Typer app holding the one declared command `path` (a group with its subcommands for `record`)."""
    import importlib

    command = decl.find(path)
    assert command is not None, path
    importlib.import_module(f"invmap.cli.{command.module}")
    subcommands = decl.SUB.get(path)
    if subcommands:
        group = typer.Typer(
            name=path,
            cls=HelpGroup,
            help=command.summary,
            rich_markup_mode=None,
            add_completion=False,
            epilog=examples(command.examples),
        )
        for sub in subcommands.values():
            group.command(sub.name, cls=declared(sub), help=sub.summary, epilog=examples(sub.examples))(
                typer_function(sub)
            )
        return group
    app = typer.Typer(rich_markup_mode=None, add_completion=False)
    app.command(path, cls=declared(command), help=command.summary, epilog=examples(command.examples))(
        typer_function(command)
    )
    return app


def declared(command: decl.Command) -> type[DeclaredCommand]:
    """`DeclaredCommand` for this declaration."""
    return type("DeclaredCommand", (DeclaredCommand,), {"declaration": command})
